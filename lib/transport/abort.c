/* ABORT frames: a rank that fails an operation tells the other members
 * why, so they fail it too instead of waiting for a deadline. The payload
 * is the error (i32, little-endian) and the reason (text, at most
 * RLX__ABORT_REASON_MAX bytes); the header carries the operation's
 * (communicator, sequence) and the failing rank's call signature. */
#include <stdlib.h>
#include <string.h>
#include <rlxcoll/errors.h>
#include "base/byteorder.h"
#include "p2p_internal.h"

/* An ABORT frame on storage of its own, freed when it is written (or
 * dropped with its connection). */
struct abort_msg {
  struct rlx__xfer x;
  uint8_t payload[4 + RLX__ABORT_REASON_MAX];
};

static void abort_sent(struct rlx__xfer *x) { free(x->owner); }

void rlx__p2p_abort(struct rlx__p2p *p, int peer, uint32_t comm_id, uint64_t seq,
                    const uint8_t sig[RLX__SIG_SIZE], int err, const char *reason) {
  if (peer == p->rank || peer < 0 || peer >= p->size || p->peers[peer].lost || p->closing)
    return;
  struct abort_msg *a = calloc(1, sizeof *a);
  if (a == NULL)
    return;
  size_t n = strlen(reason);
  if (n > RLX__ABORT_REASON_MAX)
    n = RLX__ABORT_REASON_MAX;
  rlx__put32(a->payload, (uint32_t)err);
  memcpy(a->payload + 4, reason, n);
  a->x.peer = peer;
  a->x.hdr.comm_id = comm_id;
  a->x.hdr.seq = seq;
  memcpy(a->x.hdr.sig, sig, RLX__SIG_SIZE);
  a->x.buf = a->payload;
  a->x.len = 4 + n;
  a->x.cb = abort_sent;
  a->x.owner = a;
  if (rlx__write_frame(p, &a->x, RLX__FT_ABORT))
    free(a);
}

void rlx__abort_arrived(struct rlx__p2p_conn *c, const struct rlx__umsg *m) {
  if (!m->crc_ok || m->hdr.payload_len < 4 || c->p->on_abort == NULL)
    return;
  char reason[RLX__ABORT_REASON_MAX + 1];
  size_t n = m->hdr.payload_len - 4;
  if (n > RLX__ABORT_REASON_MAX)
    n = RLX__ABORT_REASON_MAX;
  int32_t err = (int32_t)rlx__get32(m->data);
  memcpy(reason, m->data + 4, n);
  reason[n] = '\0';
  c->p->on_abort(c->p->abort_ctx, c->peer, &m->hdr, err, reason);
}
