/* The read path: bytes from the stream into the handshake, a frame
 * header, a by-reference descriptor or a payload. Small frames come
 * through a per-connection stage, several per read(); a big payload's
 * remainder is read straight into its destination (the posted receive's
 * buffer, or an early-frame buffer), its CRC32C taken as it comes. */
#include <assert.h>
#include <stdio.h>
#include <string.h>
#include <rlxcoll/errors.h>
#include "base/internal.h"
#include "p2p_internal.h"
#include "base/copy.h"

void rlx__read_next(struct rlx__p2p_conn *c) {
  c->rstate = R_HDR;
  c->need = RLX__FRAME_HDR_SIZE;
  c->got = 0;
}

static void payload_done(struct rlx__p2p_conn *c) {
  /* (no CRC through memory: transport.h says why) */
  int crc_ok = c->tr->in_memory || c->crc == c->cur.payload_crc;
  c->p->corrupt += !crc_ok;
  if (c->target) {
    struct rlx__xfer *x = c->target;
    c->target = NULL;
    rlx__xfer_finish(x, crc_ok ? RLX_OK : RLX_ERR_CORRUPT);
  } else if (c->um) {
    struct rlx__umsg *m = c->um;
    c->um = NULL;
    m->crc_ok = crc_ok;
    if (m->hdr.type == RLX__FT_ABORT) {
      rlx__abort_arrived(c, m);
      rlx__umsg_put(c->p, m);
    } else if (m->hdr.type == RLX__FT_MSG) {
      rlx__msg_arrived(c->p, m);
    } else {
      rlx__match_arrived(c, m);
    }
  }
  rlx__read_next(c);
}

/* The header is in and c->dst set: read the payload, or finish at once. */
static void expect_payload(struct rlx__p2p_conn *c, const struct rlx__frame_hdr *h) {
  if (h->payload_len == 0) {
    payload_done(c);
    return;
  }
  c->rstate = R_PAYLOAD;
  c->need = h->payload_len;
  c->got = 0;
}

/* An ABORT's reason goes into an early-frame buffer of its own. */
static void abort_header(struct rlx__p2p_conn *c, const struct rlx__frame_hdr *h) {
  if (h->payload_len > RLX__ABORT_REASON_MAX + 4) {
    char why[160];
    snprintf(why, sizeof(why), "rank %d sent an ABORT frame of %llu bytes", c->peer,
             (unsigned long long)h->payload_len);
    rlx__peer_fail(c->p, c->peer, RLX_ERR_CORRUPT, why);
    return;
  }
  struct rlx__umsg *m = rlx__umsg_new(c, h, h->payload_len);
  if (m == NULL)
    return;
  c->crc = 0;
  c->um = m;
  c->dst = m->data;
  expect_payload(c, h);
}

/* A DATA or MSG frame's payload goes straight into the receive posted for
 * it when the frame fits it, else into an early-frame buffer: kept for a
 * receive to come, or (a posted receive it does not fit: another call, or
 * a message too long) read and dropped while that receive fails, so the
 * stream stays in step. */
static void payload_header(struct rlx__p2p_conn *c, const struct rlx__frame_hdr *h) {
  struct rlx__xfer *x = rlx__match_posted(c, h);
  c->crc = 0;
  if (x && rlx__match_fits(x, h)) {
    rlx__match_take(c->p, x, h);
    x->got = *h;
    c->target = x;
    c->dst = x->buf;
  } else {
    struct rlx__umsg *m = rlx__umsg_new(c, h, h->payload_len);
    if (m == NULL) /* (the peer is failed, and x with it, still posted) */
      return;
    if (x) {
      rlx__match_take(c->p, x, h);
      x->got = *h;
      m->discard = 1;
      rlx__xfer_finish(x, rlx__match_refusal(h));
    }
    c->um = m;
    c->dst = m->data;
  }
  expect_payload(c, h);
}

/* The stream cannot be trusted past a bad header: fail the peer. */
static void bad_header(struct rlx__p2p_conn *c, int st) {
  char why[160];
  snprintf(why, sizeof(why), "corrupt frame header from rank %d: %s", c->peer,
           rlx__frame_strstatus(st));
  rlx__warn("%s", why);
  rlx__peer_fail(c->p, c->peer, RLX_ERR_CORRUPT, why);
}

void rlx__read_packed(struct rlx__p2p_conn *c, const unsigned char *rec, size_t n) {
  if (c->rstate != R_HDR || c->got != 0) { /* (only between frames: a broken stream) */
    bad_header(c, RLX__FRAME_SHORT);
    return;
  }
  int st = rlx__frame_unpack(rec, n, (uint32_t)c->peer, &c->cur);
  if (st != RLX__FRAME_OK) {
    bad_header(c, st);
    return;
  }
  size_t len = (size_t)c->cur.payload_len;
  payload_header(c, &c->cur); /* (sets where the payload goes, or fails the peer) */
  if (c->state != C_READY || c->rstate != R_PAYLOAD || c->need != len)
    return;
  rlx__copy(c->dst, rec + RLX__FRAME_PACKED_SIZE, len);
  c->got = len;
  payload_done(c);
}

static void header_done(struct rlx__p2p_conn *c) {
  struct rlx__frame_hdr *h = &c->cur;
  int st = rlx__frame_decode(c->hdr_in, RLX__FRAME_HDR_SIZE, h);
  if (st == RLX__FRAME_OK && h->src != (uint32_t)c->peer)
    st = RLX__FRAME_BAD_FIELD;
  if (st != RLX__FRAME_OK) {
    bad_header(c, st);
    return;
  }
  switch (h->type) {
  case RLX__FT_ACK:
    c->got = 0; /* the next header follows at once */
    rlx__cma_ack_done(c, h);
    return;
  case RLX__FT_PING: /* its arrival was the point */
    c->got = 0;
    return;
  case RLX__FT_ABORT: abort_header(c, h); return;
  default:
    assert(h->type == RLX__FT_DATA || h->type == RLX__FT_MSG);
    if (h->flags & RLX__FF_CMA) {
      c->rstate = R_CMA;
      c->need = RLX__CMA_DESC_SIZE;
      c->got = 0;
      return;
    }
    payload_header(c, h);
  }
}

/* Parse everything read into the stage: whole frames, and the start of
 * the next one (its header, descriptor or payload bytes so far). Leaves
 * the stage empty. */
static void drain_stage(struct rlx__p2p_conn *c) {
  while (c->state == C_READY && c->stage_off < c->stage_len) {
    unsigned char *p = c->stage + c->stage_off;
    size_t avail = c->stage_len - c->stage_off, want = c->need - c->got;
    size_t n = avail < want ? avail : want;
    switch (c->rstate) {
    case R_HDR: memcpy(c->hdr_in + c->got, p, n); break;
    case R_CMA: memcpy(c->cma_in + c->got, p, n); break;
    case R_PAYLOAD:
      rlx__copy(c->dst + c->got, p, n);
      if (!c->tr->in_memory)
        c->crc = rlx__crc32c_update(c->crc, p, n);
      break;
    default: return;
    }
    c->stage_off += n;
    c->got += n;
    if (c->got < c->need)
      break;
    switch (c->rstate) {
    case R_HDR: header_done(c); break;
    case R_CMA: rlx__cma_desc_done(c); break;
    default: payload_done(c); break;
    }
  }
  c->stage_len = c->stage_off = 0;
}

/* A receive of at least RLX__DIRECT_MIN bytes is posted for this
 * connection's peer: the next frame is most likely its. */
static int big_receive_posted(const struct rlx__p2p_conn *c) {
  const struct rlx__list *posted = &c->p->peers[c->peer].posted;
  if (c->tr->in_memory)
    return 0;
  if (rlx__list_empty(posted))
    return rlx__msg_big_posted(c->p, c->peer, RLX__DIRECT_MIN);
  const struct rlx__xfer *x = rlx__container_of(posted->next, struct rlx__xfer, link);
  return x->len >= RLX__DIRECT_MIN;
}

void rlx__read_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf) {
  struct rlx__p2p_conn *c = h->data;
  (void)suggested;
  c->reading_stage = 0;
  size_t stage = RLX__STAGE_SIZE;
  switch (c->rstate) {
  case R_HS:
    *buf = uv_buf_init((char *)c->hs_in + c->got, (unsigned)(c->need - c->got));
    break;
  case R_HDR:
    /* Before a big payload, read its header alone: the payload then goes
     * straight into the receive's buffer instead of through the stage
     * (one more read, one copy less). */
    if (c->got == 0 && big_receive_posted(c))
      stage = RLX__FRAME_HDR_SIZE;
    /* fall through */
  case R_CMA:
  stage:
    /* drain_stage always empties the stage, so all of it is free */
    c->reading_stage = 1;
    c->stage_len = c->stage_off = 0;
    *buf = uv_buf_init((char *)c->stage, (unsigned)stage);
    break;
  default: {
    /* a posted receive's payload: straight in unless it is a tail */
    if (c->need - c->got < (c->target != NULL ? RLX__DIRECT_MIN : RLX__STAGE_SIZE))
      goto stage;
    size_t left = c->need - c->got;
    if (left > (1u << 30))
      left = 1u << 30;
    *buf = uv_buf_init((char *)c->dst + c->got, (unsigned)left);
    break;
  }
  }
}

void rlx__read_cb(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf) {
  struct rlx__p2p_conn *c = s->data;
  (void)buf;
  if (nread == 0 || c->state == C_CLOSING)
    return;
  c->last_rx = rlx__tick_ns();
  if (nread < 0) {
    char why[160];
    if (c->peer >= 0 && (c->state == C_READY))
      snprintf(why, sizeof(why), "connection to rank %d %s", c->peer,
               nread == UV_EOF ? "closed by the peer (process exited or was killed?)"
                               : uv_strerror((int)nread));
    else
      snprintf(why, sizeof(why), "%s during the handshake",
               nread == UV_EOF ? "closed" : uv_strerror((int)nread));
    if (rlx__status_is_silence((int)nread))
      rlx__conn_fail_silent(c, why);
    else if (c->state != C_READY && (nread == UV_EOF || nread == UV_ECONNRESET))
      rlx__conn_closed_in_handshake(c, why);
    else
      rlx__conn_fail(c, RLX_ERR_PEER_LOST, why);
    return;
  }
  rlx__read_bytes(c, (size_t)nread);
}

void rlx__read_bytes(struct rlx__p2p_conn *c, size_t nread) {
  if (c->reading_stage) {
    c->stage_len = nread;
    c->stage_off = 0;
    drain_stage(c);
    return;
  }
  if (c->rstate == R_PAYLOAD && !c->tr->in_memory)
    c->crc = rlx__crc32c_update(c->crc, c->dst + c->got, nread);
  c->got += nread;
  if (c->got < c->need)
    return;
  if (c->rstate == R_HS)
    rlx__conn_hs_done(c);
  else
    payload_done(c);
}
