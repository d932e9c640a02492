/* The write path above the transports: a frame is stamped (type, sender,
 * length, CRC32C or a by-reference descriptor), waits in the peer's queue
 * while its connection is being made, and goes to the connection's
 * transport (its send: stream.c's, shm.c's); the transport reports a frame
 * written later through rlx__write_done. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <rlxcoll/errors.h>
#include "base/internal.h"
#include "p2p_internal.h"

void rlx__write_done(struct rlx__p2p_conn *c, struct rlx__xfer *x) {
  switch (x->ref) {
  case RLX__REF_WAIT_ACK: /* by reference: done when the receiver says it took the data */
    return;
  case RLX__REF_NACKED: /* NACKed while the write still held the frame */
    rlx__cma_resend(c, x);
    return;
  default:
    x->ref = RLX__REF_NONE;
    rlx__xfer_finish(x, RLX_OK);
  }
}

const uint8_t *rlx__wire_payload(const struct rlx__xfer *x, size_t *len) {
  if (x->ref != RLX__REF_NONE) {
    *len = RLX__CMA_DESC_SIZE;
    return x->cma_desc;
  }
  *len = x->len;
  return x->buf;
}

void rlx__write_started(struct rlx__p2p *p, struct rlx__xfer *x) {
  if (x->ref == RLX__REF_WAIT_ACK)
    rlx__list_push(&p->peers[x->peer].cma_wait, &x->link);
}

void rlx__write_start(struct rlx__p2p_conn *c, struct rlx__xfer *x) {
  if (c->tr->send(c, x))
    rlx__xfer_finish(x, x->status);
}

void rlx__write_ctl(struct rlx__p2p_conn *c, const uint8_t bytes[RLX__FRAME_HDR_SIZE]) {
  c->tr->send_ctl(c, bytes);
}

/* Stamp the header: type, sender, length and the CRC32C of what goes on
 * the stream (the payload, or the by-reference descriptor). Encoded into
 * hbytes by the caller: not for a connection in memory, whose send
 * encodes only a frame it does not pack (shm.c: a small message's header
 * CRC was a sixth of its send). */
static void stamp(struct rlx__p2p *p, struct rlx__xfer *x, int type) {
  x->is_send = 1;
  x->writing = 0;
  x->ref = RLX__REF_NONE;
  x->hdr.type = (uint8_t)type;
  x->hdr.flags = 0;
  x->hdr.src = (uint32_t)p->rank;
  x->hdr.payload_len = x->len;
  if ((type != RLX__FT_DATA && type != RLX__FT_MSG) || !rlx__cma_prepare(p, x)) {
    const struct rlx__p2p_conn *c = p->peers[x->peer].conn;
    /* (none through memory: transport.h says why) */
    x->hdr.payload_crc = c && c->tr->in_memory ? 0 : rlx__crc32c(x->buf, x->len);
  }
  rlx__list_init(&x->link);
}

/* Returns 1 if x completed at once (x->status set), 0 if its callback
 * comes later. */
int rlx__write_frame(struct rlx__p2p *p, struct rlx__xfer *x, int type) {
  struct rlx__p2p_peer *pe = &p->peers[x->peer];
  stamp(p, x, type);
#ifdef RLX_FAULT_INJECTION
  if ((type == RLX__FT_DATA || type == RLX__FT_MSG) && rlx__fault_frame(p, x))
    return 1;
#endif
  if (pe->lost) {
    x->status = pe->lost;
    return 1;
  }
  struct rlx__p2p_conn *c = pe->conn;
  if (c == NULL || c->state != C_READY || c->write_dead) {
    rlx__frame_encode(&x->hdr, x->hbytes); /* (whichever transport takes it later) */
    x->queued = 1;
    rlx__list_push(&pe->sendq, &x->link);
    if (c == NULL || c->state != C_READY)
      rlx__conn_ensure(p, x->peer, 1);
    return 0;
  }
  if (!c->tr->in_memory)
    rlx__frame_encode(&x->hdr, x->hbytes);
  return c->tr->send(c, x);
}
