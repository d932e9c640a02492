/* The write path: a frame goes out with one uv_try_write of header and
 * payload when the stream takes it all, else as a queued uv_write from
 * the caller's buffer (never copied). Sends wait in the peer's queue while
 * its connection is being made; a write that finds the peer gone waits
 * for the reason the peer may still have sent (park_if_closed). */
#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <rlxcoll/errors.h>
#include "../internal.h"
#include "p2p_internal.h"

void rlx__ctl_written(uv_write_t *req, int status) {
  (void)status;
  free(req->data);
}

/* A write found the peer gone (EPIPE, ECONNRESET). It may have closed on
 * purpose, after an ABORT frame that says why and that is still to be
 * read: park the send; the end of the stream, right after what is left,
 * fails the peer and its parked sends (rlx__peer_fail), by then with the
 * reason known. Returns 1 when x was parked. */
static int park_if_closed(struct rlx__p2p_conn *c, struct rlx__xfer *x, int rc) {
  if ((rc != UV_EPIPE && rc != UV_ECONNRESET) || c->state != C_READY || c->peer < 0)
    return 0;
  c->write_dead = 1;
  if (x->ref == RLX__REF_WAIT_ACK)
    rlx__list_remove(&x->link);
  x->ref = RLX__REF_NONE;
  x->queued = 1;
  rlx__list_push(&c->p->peers[c->peer].sendq, &x->link);
  return 1;
}

static const uint8_t *wire_payload(const struct rlx__xfer *x, size_t *len);

static void on_write(uv_write_t *req, int status) {
  struct rlx__xfer *x = req->data;
  struct rlx__p2p_conn *c = req->handle->data; /* freed only after its writes' callbacks */
  x->writing = 0;
  c->p->nwriting--;
  if (status < 0) {
    if (park_if_closed(c, x, status))
      return;
    if (x->ref == RLX__REF_WAIT_ACK)
      rlx__list_remove(&x->link);
    x->ref = RLX__REF_NONE;
    rlx__xfer_finish(x, RLX_ERR_PEER_LOST);
    return;
  }
  rlx__write_done(c, x);
}

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

/* Through shared memory: 1 when x is done at once (status set), else 0. */
static int shm_write(struct rlx__p2p_conn *c, struct rlx__xfer *x) {
  size_t plen;
  const uint8_t *payload = wire_payload(x, &plen);
  if (x->ref == RLX__REF_WAIT_ACK)
    rlx__list_push(&c->p->peers[x->peer].cma_wait, &x->link);
  int rc = rlx__shm_put(c, x, x->hbytes, payload, plen);
  if (rc < 0) {
    if (x->ref == RLX__REF_WAIT_ACK)
      rlx__list_remove(&x->link);
    x->ref = RLX__REF_NONE;
    rlx__peer_fail(c->p, x->peer, RLX_ERR_NOMEM, "no memory to queue a frame");
    x->status = RLX_ERR_NOMEM;
    return 1;
  }
  if (rc == 0 || x->ref == RLX__REF_WAIT_ACK)
    return 0;
  x->ref = RLX__REF_NONE;
  x->status = RLX_OK;
  return 1;
}

void rlx__write_ctl(struct rlx__p2p_conn *c, const uint8_t bytes[RLX__FRAME_HDR_SIZE]) {
  if (c->shm) {
    if (rlx__shm_put(c, NULL, bytes, NULL, 0) < 0)
      rlx__peer_fail(c->p, c->peer, RLX_ERR_NOMEM, "no memory to queue a control frame");
    return;
  }
  c->last_tx = rlx__tick_ns();
  uv_buf_t b = uv_buf_init((char *)bytes, RLX__FRAME_HDR_SIZE);
  int n = uv_try_write(&c->h.stream, &b, 1);
  if (n == RLX__FRAME_HDR_SIZE)
    return;
  if (n < 0 && n != UV_EAGAIN) {
    /* The peer has closed. What it sent before (an ABORT that says why)
     * is still to be read, and the end of the stream comes after it: the
     * peer is failed then, with the reason it gave if it gave one. */
    return;
  }
  struct rlx__ctl_write *w = malloc(sizeof(*w));
  if (w == NULL) {
    rlx__peer_fail(c->p, c->peer, RLX_ERR_NOMEM, "no memory for a control frame");
    return;
  }
  size_t done = n > 0 ? (size_t)n : 0;
  memcpy(w->bytes, bytes, RLX__FRAME_HDR_SIZE);
  w->req.data = w;
  b = uv_buf_init((char *)w->bytes + done, (unsigned)(RLX__FRAME_HDR_SIZE - done));
  if (uv_write(&w->req, &c->h.stream, &b, 1, rlx__ctl_written) != 0) {
    free(w);
    rlx__peer_fail(c->p, c->peer, RLX_ERR_PEER_LOST, "cannot send a control frame");
  }
}

/* What goes on the stream after the header: the payload, or for a send by
 * reference its descriptor. */
static const uint8_t *wire_payload(const struct rlx__xfer *x, size_t *len) {
  if (x->ref != RLX__REF_NONE) {
    *len = RLX__CMA_DESC_SIZE;
    return x->cma_desc;
  }
  *len = x->len;
  return x->buf;
}

/* A write of x starts (all of it, or what try_write left). */
static void started(struct rlx__p2p *p, struct rlx__xfer *x) {
  if (x->ref == RLX__REF_WAIT_ACK)
    rlx__list_push(&p->peers[x->peer].cma_wait, &x->link);
}

void rlx__write_start(struct rlx__p2p_conn *c, struct rlx__xfer *x, size_t skip) {
  uv_buf_t bufs[2];
  int n = 0;
  size_t plen;
  const uint8_t *payload = wire_payload(x, &plen);
  assert(!x->writing);
  if (c->shm) {
    if (shm_write(c, x))
      rlx__xfer_finish(x, x->status);
    return;
  }
  c->last_tx = rlx__tick_ns();
  if (skip < RLX__FRAME_HDR_SIZE) {
    bufs[n++] = uv_buf_init((char *)x->hbytes + skip, (unsigned)(RLX__FRAME_HDR_SIZE - skip));
    skip = 0;
  } else {
    skip -= RLX__FRAME_HDR_SIZE;
  }
  if (plen > skip)
    bufs[n++] = uv_buf_init((char *)payload + skip, (unsigned)(plen - skip));
  x->wreq.data = x;
  x->writing = 1;
  c->p->nwriting++;
  started(c->p, x);
  int rc = uv_write(&x->wreq, &c->h.stream, bufs, (unsigned)n, on_write);
  if (rc != 0) {
    x->writing = 0;
    c->p->nwriting--;
    if (x->ref == RLX__REF_WAIT_ACK)
      rlx__list_remove(&x->link);
    x->ref = RLX__REF_NONE;
    rlx__xfer_finish(x, RLX_ERR_PEER_LOST);
  }
}

/* Stamp the header: type, sender, length and the CRC32C of what goes on
 * the stream (the payload, or the by-reference descriptor). */
static void stamp(struct rlx__p2p *p, struct rlx__xfer *x, int type) {
  x->is_send = 1;
  x->writing = 0;
  x->ref = RLX__REF_NONE;
  x->hdr.type = (uint8_t)type;
  x->hdr.flags = 0;
  x->hdr.src = (uint32_t)p->rank;
  x->hdr.payload_len = x->len;
  if (type != RLX__FT_DATA || !rlx__cma_prepare(p, x)) {
    const struct rlx__p2p_conn *c = p->peers[x->peer].conn;
    x->hdr.payload_crc = c && c->shm ? 0 : rlx__crc32c(x->buf, x->len); /* shm.c: why none */
  }
  rlx__frame_encode(&x->hdr, x->hbytes);
  rlx__list_init(&x->link);
}

/* Returns 1 if x completed at once (x->status set), 0 if its callback
 * comes later. */
int rlx__write_frame(struct rlx__p2p *p, struct rlx__xfer *x, int type) {
  struct rlx__p2p_peer *pe = &p->peers[x->peer];
  stamp(p, x, type);
#ifdef RLX_FAULT_INJECTION
  if (type == RLX__FT_DATA && rlx__fault_frame(p, x))
    return 1;
#endif
  if (pe->lost) {
    x->status = pe->lost;
    return 1;
  }
  struct rlx__p2p_conn *c = pe->conn;
  if (c == NULL || c->state != C_READY || c->write_dead) {
    x->queued = 1;
    rlx__list_push(&pe->sendq, &x->link);
    if (c == NULL || c->state != C_READY)
      rlx__conn_ensure(p, x->peer, 1);
    return 0;
  }
  if (c->shm)
    return shm_write(c, x);
  size_t plen;
  const uint8_t *payload = wire_payload(x, &plen);
  c->last_tx = rlx__tick_ns();
  uv_buf_t bufs[2] = {uv_buf_init((char *)x->hbytes, RLX__FRAME_HDR_SIZE),
                      uv_buf_init((char *)payload, (unsigned)plen)};
  size_t total = RLX__FRAME_HDR_SIZE + plen;
  int rc = plen > (1u << 30) ? UV_EAGAIN : uv_try_write(&c->h.stream, bufs, plen ? 2 : 1);
  if (rc >= 0 && (size_t)rc == total) {
    if (x->ref == RLX__REF_WAIT_ACK) { /* complete when the ACK comes */
      started(p, x);
      return 0;
    }
    x->status = RLX_OK;
    return 1;
  }
  if (rc < 0 && park_if_closed(c, x, rc))
    return 0;
  if (rc < 0 && rc != UV_EAGAIN) {
    char why[160];
    snprintf(why, sizeof(why), "write to rank %d failed: %s", x->peer, uv_strerror(rc));
    rlx__peer_fail(p, x->peer, RLX_ERR_PEER_LOST, why);
    x->status = RLX_ERR_PEER_LOST;
    return 1;
  }
  rlx__write_start(c, x, rc > 0 ? (size_t)rc : 0);
  return 0;
}
