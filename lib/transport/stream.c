/* A socket's byte stream as a connection's data path: the data half of
 * the tcp and unix tables. A frame goes out with one uv_try_write of
 * header and payload when the stream takes it all, else as a queued
 * uv_write from the caller's buffer (never copied); a write that finds
 * the peer gone waits for the reason the peer may still have sent
 * (park_if_closed). Reading is libuv's (read.c's callbacks, started with
 * the handshake). */
#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <rlxcoll/errors.h>
#include "base/internal.h"
#include "p2p_internal.h"

/* A small write on storage of its own (ACK, PING), freed when written. */
struct ctl_write {
  uv_write_t req;
  uint8_t bytes[RLX__FRAME_HDR_SIZE];
};

static void ctl_written(uv_write_t *req, int status) {
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

/* A queued write of x (all of it, or what try_write left after skip). */
static void write_rest(struct rlx__p2p_conn *c, struct rlx__xfer *x, size_t skip) {
  uv_buf_t bufs[2];
  int n = 0;
  size_t plen;
  const uint8_t *payload = rlx__wire_payload(x, &plen);
  assert(!x->writing);
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
  rlx__write_started(c->p, x);
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

int rlx__stream_send(struct rlx__p2p_conn *c, struct rlx__xfer *x) {
  size_t plen;
  const uint8_t *payload = rlx__wire_payload(x, &plen);
  c->last_tx = rlx__tick_ns();
  uv_buf_t bufs[2] = {uv_buf_init((char *)x->hbytes, RLX__FRAME_HDR_SIZE),
                      uv_buf_init((char *)payload, (unsigned)plen)};
  size_t total = RLX__FRAME_HDR_SIZE + plen;
  int rc = plen > (1u << 30) ? UV_EAGAIN : uv_try_write(&c->h.stream, bufs, plen ? 2 : 1);
  if (rc >= 0 && (size_t)rc == total) {
    if (x->ref == RLX__REF_WAIT_ACK) { /* complete when the ACK comes */
      rlx__write_started(c->p, x);
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
    rlx__peer_fail(c->p, x->peer, RLX_ERR_PEER_LOST, why);
    x->status = RLX_ERR_PEER_LOST;
    return 1;
  }
  write_rest(c, x, rc > 0 ? (size_t)rc : 0);
  return 0;
}

void rlx__stream_send_ctl(struct rlx__p2p_conn *c, const uint8_t *bytes) {
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
  struct ctl_write *w = malloc(sizeof(*w));
  if (w == NULL) {
    rlx__peer_fail(c->p, c->peer, RLX_ERR_NOMEM, "no memory for a control frame");
    return;
  }
  size_t done = n > 0 ? (size_t)n : 0;
  memcpy(w->bytes, bytes, RLX__FRAME_HDR_SIZE);
  w->req.data = w;
  b = uv_buf_init((char *)w->bytes + done, (unsigned)(RLX__FRAME_HDR_SIZE - done));
  if (uv_write(&w->req, &c->h.stream, &b, 1, ctl_written) != 0) {
    free(w);
    rlx__peer_fail(c->p, c->peer, RLX_ERR_PEER_LOST, "cannot send a control frame");
  }
}

/* Reading began with the handshake (rlx__read_cb goes on). */
int rlx__stream_start(struct rlx__p2p_conn *c) {
  (void)c;
  return 0;
}

int rlx__stream_unread(struct rlx__p2p_conn *c) {
  uv_os_fd_t fd;
  int n = 0;
  if (uv_fileno((uv_handle_t *)&c->h, &fd) != 0 || ioctl(fd, FIONREAD, &n) != 0)
    return 0;
  return n > 0;
}

/* Queued writes are counted in p->nwriting. */
int rlx__stream_unsent(const struct rlx__p2p_conn *c) {
  (void)c;
  return 0;
}

void rlx__stream_cut_short(struct rlx__p2p_conn *c, const uint8_t *hdr, const void *payload,
                           size_t len) {
  uv_buf_t b[2] = {uv_buf_init((char *)hdr, RLX__FRAME_HDR_SIZE),
                   uv_buf_init((char *)payload, (unsigned)len)};
  uv_try_write(&c->h.stream, b, len ? 2 : 1);
}
