/* Point-to-point messaging over libuv streams of any transport: on-demand
 * authenticated connections (the higher rank connects, so two ranks never
 * race to open two), frame reading straight into posted buffers, and
 * failure propagation to every transfer that depends on a lost peer. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/uio.h>
#include <unistd.h>
#include <rlxcoll/errors.h>
#include "../internal.h"
#include "../observe.h"
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include "p2p.h"

#define ABORT_REASON_MAX 600 /* bytes of reason an ABORT frame carries */
/* Heartbeats: a connection that sent nothing for HB_EVERY_NS gets a PING;
 * one that brought nothing (no frame, no PING) for HB_SILENCE_NS is dead:
 * a peer whose host or link vanished, or a stopped process. */
#define HB_EVERY_NS 1000000000ull
#define HB_SILENCE_NS 5000000000ull

#define HS_DEADLINE_NS (10ull * 1000000000ull)
/* Payloads from this size go to same-host peers by reference (one copy,
 * made by the receiver with process_vm_readv) instead of through the socket
 * (two copies, through the kernel's buffer). */
#ifndef RLX__CMA_MIN /* -DRLX__CMA_MIN=... to measure another threshold */
#define RLX__CMA_MIN (128u * 1024u)
#endif
#define CMA_MIN ((size_t)(RLX__CMA_MIN))
/* Small frames are read through a per-connection stage, several frames
 * per read() if they are there; bigger remainders go straight into their
 * destination. */
#define STAGE_SIZE (64u * 1024u)

enum conn_state { C_CONNECTING, C_HS_CLIENT, C_HS_HELLO, C_HS_PROOF, C_READY, C_CLOSING };
enum read_state { R_HS, R_HDR, R_PAYLOAD, R_CMA };

struct umsg {
  struct rlx__list link;
  size_t cap; /* payload bytes it can hold */
  struct rlx__frame_hdr hdr;
  int crc_ok;
  int discard; /* payload of a frame already failed as a mismatch */
  unsigned char data[];
};

struct rlx__p2p_conn {
  union rlx__stream_handle h;
  uv_connect_t creq;
  uv_write_t hs_wreq[2];
  struct rlx__p2p *p;
  const struct rlx__transport_ops *tr;
  struct rlx__list link;
  int peer; /* world rank, -1 until the handshake names it */
  int state, rstate;
  struct rlx__hs hs;
  uint8_t hs_in[RLX__HS_CHALLENGE_SIZE];
  uint8_t hs_out[2][RLX__HS_CHALLENGE_SIZE];
  uint8_t hdr_in[RLX__FRAME_HDR_SIZE];
  uint8_t cma_in[RLX__CMA_DESC_SIZE];
  unsigned char *stage; /* STAGE_SIZE bytes once the connection is ready */
  size_t stage_len, stage_off;
  int reading_stage;
  size_t need, got;
  struct rlx__frame_hdr cur;
  unsigned char *dst; /* where the current payload goes */
  struct rlx__xfer *target;
  struct umsg *um;
  uint32_t crc;
  uint64_t hs_deadline;
  uint64_t last_rx, last_tx; /* rlx__now_ns() of the last bytes in and out */
  uint64_t t_start;          /* when we dialed or accepted it (for the trace) */
  int dialed;
  int write_dead; /* the peer closed (EPIPE): sends wait for what is left to read */
  char addr[64];
};

struct rlx__p2p_peer {
  struct rlx__p2p_conn *conn;    /* ready connection */
  struct rlx__p2p_conn *pending; /* connecting, or authenticating */
  struct rlx__list posted, unexpected, sendq;
  struct rlx__list cma_wait; /* sent by reference, waiting for the ACK */
  int no_cma;                /* a copy from us failed once: use the socket */
  int lost;
  char why[160];
  const struct rlx__transport_ops *tr;
};

static void conn_close(struct rlx__p2p_conn *c);
static void start_write(struct rlx__p2p_conn *c, struct rlx__xfer *x, size_t skip);
static void resend_on_socket(struct rlx__p2p_conn *c, struct rlx__xfer *x);
static struct umsg *new_umsg(struct rlx__p2p_conn *c, const struct rlx__frame_hdr *h, size_t len);

/* ---- helpers -------------------------------------------------------------- */

static void finish(struct rlx__xfer *x, int status) {
  x->status = status;
  x->queued = 0;
  if (x->cb)
    x->cb(x);
}

/* Frames that arrive before their receive is posted wait in buffers from a
 * small pool, so the steady state allocates nothing per message. */
#define POOL_MAX 16
#define POOL_BIG (1u << 20) /* bigger buffers are not kept */

static struct umsg *umsg_get(struct rlx__p2p *p, size_t len) {
  for (struct rlx__list *l = p->pool.next; l != &p->pool; l = l->next) {
    struct umsg *m = rlx__container_of(l, struct umsg, link);
    if (m->cap >= len) {
      rlx__list_remove(&m->link);
      p->npool--;
      return m;
    }
  }
  size_t cap = len < 4096 ? 4096 : len;
  struct umsg *m = malloc(sizeof(*m) + cap);
  if (m != NULL)
    m->cap = cap;
  return m;
}

static void umsg_put(struct rlx__p2p *p, struct umsg *m) {
  if (m == NULL)
    return;
  if (p->npool < POOL_MAX && m->cap <= POOL_BIG) {
    rlx__list_push(&p->pool, &m->link);
    p->npool++;
  } else {
    free(m);
  }
}

static const struct rlx__transport_ops *choose_transport(struct rlx__p2p *p, int peer) {
  const struct rlx__card *me = &p->cards[p->rank], *them = &p->cards[peer];
  if (p->choice == RLX__P2P_TCP)
    return &rlx__tcp_transport;
  if (p->choice == RLX__P2P_UNIX)
    return &rlx__unix_transport;
  if (them->unix_path[0] != '\0' && strcmp(me->host, them->host) == 0)
    return &rlx__unix_transport;
  return &rlx__tcp_transport;
}

static const char *addr_of(struct rlx__p2p *p, int peer, const struct rlx__transport_ops *tr) {
  return tr == &rlx__unix_transport ? p->cards[peer].unix_path : p->cards[peer].tcp;
}

/* A peer is gone: every transfer that waits on it fails, now and later. */
static void peer_fail(struct rlx__p2p *p, int peer, int err, const char *why) {
  struct rlx__p2p_peer *pe = &p->peers[peer];
  if (pe->lost)
    return;
  pe->lost = err;
  p->corrupt += err == RLX_ERR_CORRUPT; /* a header that failed its CRC */
  snprintf(pe->why, sizeof(pe->why), "%s", why);
  if (!p->closing)
    rlx__info("lost rank %d: %s", peer, why);
  struct rlx__list *lists[3] = {&pe->posted, &pe->sendq, &pe->cma_wait};
  for (int i = 0; i < 3; i++) {
    while (!rlx__list_empty(lists[i])) {
      struct rlx__xfer *x = rlx__container_of(lists[i]->next, struct rlx__xfer, link);
      rlx__list_remove(&x->link);
      if (x->writing) { /* its write's cancellation reports the error */
        x->cma = 0;
        continue;
      }
      finish(x, err);
    }
  }
  while (!rlx__list_empty(&pe->unexpected)) {
    struct umsg *m = rlx__container_of(pe->unexpected.next, struct umsg, link);
    rlx__list_remove(&m->link);
    umsg_put(p, m);
  }
  if (pe->conn)
    conn_close(pe->conn);
  if (pe->pending)
    conn_close(pe->pending);
}

static void conn_fail(struct rlx__p2p_conn *c, int err, const char *why) {
  struct rlx__p2p *p = c->p;
  if (c->state == C_CLOSING)
    return;
  if (c->peer >= 0 && (c->state == C_READY || c->state == C_CONNECTING || c->state == C_HS_CLIENT)) {
    peer_fail(p, c->peer, err, why);
  } else {
    p->strangers++;
    rlx__warn("dropped connection from %s: %s", c->addr[0] ? c->addr : "?", why);
  }
  conn_close(c);
}

static void on_closed(uv_handle_t *h) {
  struct rlx__p2p_conn *c = h->data;
  if (c->um)
    umsg_put(c->p, c->um);
  free(c->stage);
  free(c);
}

/* Segments the kernel retransmitted on this TCP connection so far. */
static unsigned long tcp_retrans(struct rlx__p2p_conn *c) {
  uv_os_fd_t fd;
  struct tcp_info ti;
  socklen_t len = sizeof(ti);
  if (uv_fileno(&c->h.handle, &fd) == 0 && getsockopt(fd, IPPROTO_TCP, TCP_INFO, &ti, &len) == 0)
    return ti.tcpi_total_retrans;
  return 0;
}

static void conn_close(struct rlx__p2p_conn *c) {
  struct rlx__p2p *p = c->p;
  if (c->state == C_CLOSING)
    return;
  if (c->peer >= 0) {
    if (p->peers[c->peer].conn == c)
      p->peers[c->peer].conn = NULL;
    if (p->peers[c->peer].pending == c)
      p->peers[c->peer].pending = NULL;
  }
  if (c->state == C_READY && c->tr == &rlx__tcp_transport)
    p->retrans_closed += tcp_retrans(c);
  c->state = C_CLOSING;
  if (c->target) { /* a receive whose payload was streaming in */
    struct rlx__xfer *x = c->target;
    c->target = NULL;
    finish(x, c->peer >= 0 && p->peers[c->peer].lost ? p->peers[c->peer].lost : RLX_ERR_PEER_LOST);
  }
  rlx__list_remove(&c->link);
  uv_close(&c->h.handle, on_closed);
}

static struct rlx__p2p_conn *conn_new(struct rlx__p2p *p, const struct rlx__transport_ops *tr) {
  struct rlx__p2p_conn *c = calloc(1, sizeof(*c));
  if (c == NULL)
    return NULL;
  c->p = p;
  c->tr = tr;
  c->peer = -1;
  c->t_start = rlx__now_ns();
  c->h.handle.data = c;
  rlx__list_init(&c->link);
  return c;
}

static void hs_write(struct rlx__p2p_conn *c, int slot, size_t len) {
  uv_buf_t b = uv_buf_init((char *)c->hs_out[slot], (unsigned)len);
  c->hs_wreq[slot].data = c;
  if (uv_write(&c->hs_wreq[slot], &c->h.stream, &b, 1, NULL) != 0)
    conn_fail(c, RLX_ERR_PEER_LOST, "handshake write failed");
}

/* Large socket buffers let a whole ring segment sit in the kernel, so the
 * sender does not wait for the receiver to drain it piece by piece. The
 * kernel caps the request at net.core.wmem_max / rmem_max. */
static void grow_buffers(struct rlx__p2p_conn *c) {
  int v = 4 << 20;
  uv_send_buffer_size(&c->h.handle, &v);
  v = 4 << 20;
  uv_recv_buffer_size(&c->h.handle, &v);
}

/* The connection is authenticated: it carries frames from now on. */
static void conn_ready(struct rlx__p2p_conn *c) {
  struct rlx__p2p_peer *pe = &c->p->peers[c->peer];
  grow_buffers(c);
  if (pe->pending == c)
    pe->pending = NULL;
  if (c->stage == NULL && (c->stage = malloc(STAGE_SIZE)) == NULL) {
    conn_fail(c, RLX_ERR_NOMEM, "no memory for a connection's read buffer");
    return;
  }
  pe->conn = c;
  c->last_rx = c->last_tx = rlx__now_ns();
  c->dialed = c->state == C_HS_CLIENT;
  c->state = C_READY;
  if (c->tr == &rlx__tcp_transport)
    c->p->opened_tcp++;
  else
    c->p->opened_unix++;
  c->rstate = R_HDR;
  c->need = RLX__FRAME_HDR_SIZE;
  c->got = 0;
  rlx__debug("connected to rank %d over %s", c->peer, c->tr->name);
  if (RLX__TRACING()) {
    char name[64], args[96];
    snprintf(name, sizeof(name), "connect rank %d (%s)", c->peer, c->tr->name);
    snprintf(args, sizeof(args), "\"peer\":%d,\"transport\":\"%s\",\"side\":\"%s\"", c->peer,
             c->tr->name, c->dialed ? "dialed" : "accepted");
    rlx__trace_span(RLX__TRACK_CONNECT, "connect", name, c->t_start, rlx__now_ns(), args);
  }
  while (!rlx__list_empty(&pe->sendq) && c->state == C_READY) {
    struct rlx__xfer *x = rlx__container_of(pe->sendq.next, struct rlx__xfer, link);
    rlx__list_remove(&x->link);
    start_write(c, x, 0);
  }
}

/* ---- receiving ------------------------------------------------------------ */

static int same_key(const struct rlx__frame_hdr *a, const struct rlx__frame_hdr *b) {
  return a->comm_id == b->comm_id && a->seq == b->seq && a->segment == b->segment;
}

/* Does a frame agree with the receive posted for it? */
static int frame_matches(const struct rlx__xfer *x, const struct rlx__frame_hdr *h) {
  const struct rlx__frame_hdr *e = &x->hdr;
  return h->type == RLX__FT_DATA && h->kind == e->kind && h->dtype == e->dtype &&
         h->op == e->op && h->root == e->root && h->count == e->count &&
         h->payload_len == x->len;
}

static struct rlx__xfer *find_posted(struct rlx__p2p_peer *pe, const struct rlx__frame_hdr *h) {
  for (struct rlx__list *l = pe->posted.next; l != &pe->posted; l = l->next) {
    struct rlx__xfer *x = rlx__container_of(l, struct rlx__xfer, link);
    if (same_key(&x->hdr, h))
      return x;
  }
  return NULL;
}

/* Hand a fully received unexpected frame to its receive. */
static int deliver_umsg(struct umsg *m, struct rlx__xfer *x) {
  if (!frame_matches(x, &m->hdr)) {
    x->got = m->hdr;
    return RLX_ERR_MISMATCH;
  }
  if (!m->crc_ok)
    return RLX_ERR_CORRUPT;
  if (x->len)
    memcpy(x->buf, m->data, x->len);
  return RLX_OK;
}

static void payload_done(struct rlx__p2p_conn *c) {
  struct rlx__p2p_peer *pe = &c->p->peers[c->peer];
  int crc_ok = c->crc == c->cur.payload_crc;
  c->p->corrupt += !crc_ok;
  if (c->target) {
    struct rlx__xfer *x = c->target;
    c->target = NULL;
    finish(x, crc_ok ? RLX_OK : RLX_ERR_CORRUPT);
  } else if (c->um) {
    struct umsg *m = c->um;
    c->um = NULL;
    m->crc_ok = crc_ok;
    if (m->hdr.type == RLX__FT_ABORT) {
      /* payload: the error (4 bytes, little-endian) and the reason */
      if (crc_ok && m->hdr.payload_len >= 4 && c->p->on_abort) {
        char reason[ABORT_REASON_MAX + 1];
        size_t n = m->hdr.payload_len - 4 > ABORT_REASON_MAX ? ABORT_REASON_MAX
                                                             : m->hdr.payload_len - 4;
        int32_t err = (int32_t)((uint32_t)m->data[0] | (uint32_t)m->data[1] << 8 |
                                (uint32_t)m->data[2] << 16 | (uint32_t)m->data[3] << 24);
        memcpy(reason, m->data + 4, n);
        reason[n] = '\0';
        c->p->on_abort(c->p->abort_ctx, c->peer, &m->hdr, err, reason);
      }
      umsg_put(c->p, m);
    } else if (m->discard) {
      umsg_put(c->p, m);
    } else {
      struct rlx__xfer *x = find_posted(pe, &m->hdr);
      if (x) {
        rlx__list_remove(&x->link);
        int st = deliver_umsg(m, x);
        umsg_put(c->p, m);
        finish(x, st);
      } else {
        rlx__list_push(&pe->unexpected, &m->link);
      }
    }
  }
  c->rstate = R_HDR;
  c->need = RLX__FRAME_HDR_SIZE;
  c->got = 0;
}

/* ---- payloads by reference (same host) ------------------------------------- */

static void put64(uint8_t *p, uint64_t v) {
  for (int i = 0; i < 8; i++)
    p[i] = (uint8_t)(v >> (8 * i));
}
static uint64_t get64(const uint8_t *p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; i--)
    v = (v << 8) | p[i];
  return v;
}

struct ack_write {
  uv_write_t req;
  uint8_t bytes[RLX__FRAME_HDR_SIZE];
};

static void on_ack_written(uv_write_t *req, int status) {
  (void)status;
  free(req->data);
}

/* Tell the sender of a by-reference frame that its buffer is free again
 * (or, with nack, that it must send the payload on the socket). */
static void send_ack(struct rlx__p2p_conn *c, const struct rlx__frame_hdr *h, int nack) {
  struct rlx__frame_hdr a = *h;
  uint8_t bytes[RLX__FRAME_HDR_SIZE];
  a.type = RLX__FT_ACK;
  a.flags = nack ? RLX__FF_NACK : 0;
  a.src = (uint32_t)c->p->rank;
  a.payload_len = 0;
  a.payload_crc = 0;
  rlx__frame_encode(&a, bytes);
  uv_buf_t b = uv_buf_init((char *)bytes, sizeof(bytes));
  int n = uv_try_write(&c->h.stream, &b, 1);
  if (n == (int)sizeof(bytes))
    return;
  if (n < 0 && n != UV_EAGAIN) {
    /* The peer has closed. What it sent before (an ABORT that says why)
     * is still to be read, and the end of the stream comes after it: the
     * peer is failed then, with the reason it gave if it gave one. */
    return;
  }
  struct ack_write *w = malloc(sizeof(*w));
  if (w == NULL) {
    peer_fail(c->p, c->peer, RLX_ERR_NOMEM, "no memory for an acknowledgement");
    return;
  }
  size_t done = n > 0 ? (size_t)n : 0;
  memcpy(w->bytes, bytes, sizeof(bytes));
  w->req.data = w;
  b = uv_buf_init((char *)w->bytes + done, (unsigned)(sizeof(bytes) - done));
  if (uv_write(&w->req, &c->h.stream, &b, 1, on_ack_written) != 0) {
    free(w);
    peer_fail(c->p, c->peer, RLX_ERR_PEER_LOST, "cannot send an acknowledgement");
  }
}

/* Copy len bytes at the peer's address into dst; 0 or -errno. */
static int cma_copy(pid_t pid, uint64_t addr, void *dst, size_t len) {
#ifdef RLX_FAULT_INJECTION
  /* Test builds: RLX_FAULT_CMA=deny fails every copy, as ptrace rules or a
   * sandbox would, so that the fallback to the socket is exercised. */
  static int deny = -1;
  if (deny < 0) {
    const char *f = getenv("RLX_FAULT_CMA");
    deny = f != NULL && strcmp(f, "deny") == 0;
  }
  if (deny)
    return -EPERM;
#endif
  size_t done = 0;
  while (done < len) {
    struct iovec local = {(char *)dst + done, len - done};
    struct iovec remote = {(void *)(uintptr_t)(addr + done), len - done};
    ssize_t n = process_vm_readv(pid, &local, 1, &remote, 1, 0);
    if (n < 0) {
      if (errno == EINTR)
        continue;
      return -errno;
    }
    if (n == 0)
      return -EFAULT;
    done += (size_t)n;
  }
  return 0;
}

static void cma_desc_done(struct rlx__p2p_conn *c) {
  struct rlx__p2p *p = c->p;
  struct rlx__p2p_peer *pe = &p->peers[c->peer];
  struct rlx__frame_hdr *h = &c->cur;
  uint64_t addr = get64(c->cma_in);
  pid_t pid = (pid_t)(uint32_t)get64(c->cma_in + 8);
  struct rlx__xfer *x = find_posted(pe, h);
  c->rstate = R_HDR;
  c->need = RLX__FRAME_HDR_SIZE;
  c->got = 0;
  if (rlx__crc32c(c->cma_in, RLX__CMA_DESC_SIZE) != h->payload_crc) {
    /* A spoilt address is not one to read from. The stream itself is in
     * step, so this is a corrupt payload: the receive fails (its ABORT
     * tells the sender why) and the acknowledgement releases the sender. */
    p->corrupt++;
    send_ack(c, h, 0);
    if (x) {
      rlx__list_remove(&x->link);
      finish(x, RLX_ERR_CORRUPT);
    } else {
      struct umsg *bad = new_umsg(c, h, 0); /* no data: it fails its receive */
      if (bad == NULL)
        return;
      bad->hdr.flags = 0;
      rlx__list_push(&pe->unexpected, &bad->link);
    }
    return;
  }
  if (x && !frame_matches(x, h)) { /* the sender called something else */
    rlx__list_remove(&x->link);
    x->got = *h;
    finish(x, RLX_ERR_MISMATCH);
    send_ack(c, h, 0);
    return;
  }
  struct umsg *m = NULL;
  void *dst;
  if (x) {
    dst = x->buf;
  } else {
    if ((m = new_umsg(c, h, h->payload_len)) == NULL)
      return;
    m->hdr.flags = 0;
    dst = m->data;
  }
  int rc = cma_copy(pid, addr, dst, h->payload_len);
  if (rc != 0) {
    /* Not allowed here (ptrace rules, a sandbox): the sender resends the
     * payload on the socket, and the receive stays posted for it. */
    rlx__debug("copy by reference from rank %d failed (%s); using the socket", c->peer,
               strerror(-rc));
    p->cma_fallbacks++;
    umsg_put(p, m);
    send_ack(c, h, 1);
    return;
  }
  p->cma_copies++;
  send_ack(c, h, 0);
  if (x) {
    rlx__list_remove(&x->link);
    finish(x, RLX_OK);
  } else {
    m->crc_ok = 1; /* the descriptor's CRC was checked above */
    rlx__list_push(&pe->unexpected, &m->link);
  }
}

static void ack_done(struct rlx__p2p_conn *c, const struct rlx__frame_hdr *h) {
  struct rlx__p2p_peer *pe = &c->p->peers[c->peer];
  for (struct rlx__list *l = pe->cma_wait.next; l != &pe->cma_wait; l = l->next) {
    struct rlx__xfer *x = rlx__container_of(l, struct rlx__xfer, link);
    if (!same_key(&x->hdr, h))
      continue;
    rlx__list_remove(&x->link);
    if (h->flags & RLX__FF_NACK) {
      pe->no_cma = 1;
      c->p->cma_fallbacks++;
      x->cma = 3;
    } else {
      x->cma = 2;
    }
    if (x->writing)
      return; /* on_write finishes it once libuv lets go of the request */
    if (x->cma == 2)
      finish(x, RLX_OK);
    else
      resend_on_socket(c, x);
    return;
  }
  char why[120];
  snprintf(why, sizeof(why), "rank %d acknowledged a frame never sent to it", c->peer);
  peer_fail(c->p, c->peer, RLX_ERR_CORRUPT, why);
}

/* A pooled buffer for a frame nobody posted for yet (or an ABORT); on no
 * memory the peer is failed and NULL returned. */
static struct umsg *new_umsg(struct rlx__p2p_conn *c, const struct rlx__frame_hdr *h, size_t len) {
  struct umsg *m = umsg_get(c->p, len);
  if (m == NULL) {
    peer_fail(c->p, c->peer, RLX_ERR_NOMEM, "no memory for an incoming frame");
    return NULL;
  }
  m->hdr = *h;
  m->crc_ok = 0;
  m->discard = 0;
  rlx__list_init(&m->link);
  return m;
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

static void header_done(struct rlx__p2p_conn *c) {
  struct rlx__p2p_peer *pe = &c->p->peers[c->peer];
  struct rlx__frame_hdr *h = &c->cur;
  char why[160];
  int st = rlx__frame_decode(c->hdr_in, RLX__FRAME_HDR_SIZE, h);
  if (st == RLX__FRAME_OK && h->src != (uint32_t)c->peer)
    st = RLX__FRAME_BAD_FIELD;
  if (st != RLX__FRAME_OK) {
    /* The stream cannot be trusted past a bad header: fail the peer. */
    snprintf(why, sizeof(why), "corrupt frame header from rank %d: %s", c->peer,
             rlx__frame_strstatus(st));
    rlx__warn("%s", why);
    peer_fail(c->p, c->peer, RLX_ERR_CORRUPT, why);
    return;
  }
  if (h->type == RLX__FT_ACK) {
    c->got = 0; /* the next header follows at once */
    ack_done(c, h);
    return;
  }
  if (h->type == RLX__FT_PING) { /* its arrival was the point */
    c->got = 0;
    return;
  }
  if (h->type == RLX__FT_ABORT) {
    if (h->payload_len > ABORT_REASON_MAX + 4) {
      snprintf(why, sizeof(why), "rank %d sent an ABORT frame of %llu bytes", c->peer,
               (unsigned long long)h->payload_len);
      peer_fail(c->p, c->peer, RLX_ERR_CORRUPT, why);
      return;
    }
    struct umsg *m = new_umsg(c, h, h->payload_len);
    if (m == NULL)
      return;
    c->crc = 0;
    c->um = m;
    c->dst = m->data;
    expect_payload(c, h);
    return;
  }
  if (h->flags & RLX__FF_CMA) {
    c->rstate = R_CMA;
    c->need = RLX__CMA_DESC_SIZE;
    c->got = 0;
    return;
  }
  c->crc = 0;
  struct rlx__xfer *x = find_posted(pe, h);
  if (x && frame_matches(x, h)) {
    rlx__list_remove(&x->link);
    c->target = x;
    c->dst = x->buf;
  } else {
    struct umsg *m = new_umsg(c, h, h->payload_len);
    if (m == NULL)
      return;
    if (x) { /* posted, but the sender called something else */
      rlx__list_remove(&x->link);
      x->got = *h;
      m->discard = 1;
      finish(x, RLX_ERR_MISMATCH);
    }
    c->um = m;
    c->dst = m->data;
  }
  expect_payload(c, h);
}

static void hs_done(struct rlx__p2p_conn *c) {
  struct rlx__p2p *p = c->p;
  int st;
  if (c->state == C_HS_CLIENT) {
    if ((st = rlx__hs_client_challenge(&c->hs, c->hs_in, c->hs_out[1])) != RLX__HS_OK) {
      char why[128];
      snprintf(why, sizeof(why), "rank %d failed the handshake: %s", c->peer,
               rlx__hs_strstatus(st));
      conn_fail(c, RLX_ERR_AUTH, why);
      return;
    }
    hs_write(c, 1, RLX__HS_PROOF_SIZE);
    if (c->state != C_CLOSING)
      conn_ready(c);
  } else if (c->state == C_HS_HELLO) {
    if ((st = rlx__hs_server_hello(&c->hs, c->hs_in, c->hs_out[0])) != RLX__HS_OK) {
      conn_fail(c, RLX_ERR_AUTH, rlx__hs_strstatus(st));
      return;
    }
    /* Only a higher rank of this job connects to us. */
    if (c->hs.peer <= (uint32_t)p->rank || c->hs.peer >= (uint32_t)p->size) {
      conn_fail(c, RLX_ERR_AUTH, "handshake names a rank that does not connect to us");
      return;
    }
    hs_write(c, 0, RLX__HS_CHALLENGE_SIZE);
    c->state = C_HS_PROOF;
    c->need = RLX__HS_PROOF_SIZE;
    c->got = 0;
  } else if (c->state == C_HS_PROOF) {
    if ((st = rlx__hs_server_proof(&c->hs, c->hs_in)) != RLX__HS_OK) {
      conn_fail(c, RLX_ERR_AUTH, rlx__hs_strstatus(st));
      return;
    }
    int peer = (int)c->hs.peer;
    if (p->peers[peer].conn != NULL || p->peers[peer].lost) {
      conn_fail(c, RLX_ERR_AUTH, "a second connection for a rank already connected");
      return;
    }
    c->peer = peer;
    conn_ready(c);
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
      memcpy(c->dst + c->got, p, n);
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
    case R_CMA: cma_desc_done(c); break;
    default: payload_done(c); break;
    }
  }
  c->stage_len = c->stage_off = 0;
}

static void on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf) {
  struct rlx__p2p_conn *c = h->data;
  (void)suggested;
  c->reading_stage = 0;
  switch (c->rstate) {
  case R_HS:
    *buf = uv_buf_init((char *)c->hs_in + c->got, (unsigned)(c->need - c->got));
    break;
  case R_HDR:
  case R_CMA:
  stage:
    /* drain_stage always empties the stage, so all of it is free */
    c->reading_stage = 1;
    c->stage_len = c->stage_off = 0;
    *buf = uv_buf_init((char *)c->stage, STAGE_SIZE);
    break;
  default: {
    if (c->need - c->got < STAGE_SIZE)
      goto stage;
    size_t left = c->need - c->got;
    if (left > (1u << 30))
      left = 1u << 30;
    *buf = uv_buf_init((char *)c->dst + c->got, (unsigned)left);
    break;
  }
  }
}

static void on_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf) {
  struct rlx__p2p_conn *c = s->data;
  (void)buf;
  if (nread == 0 || c->state == C_CLOSING)
    return;
  c->last_rx = rlx__now_ns();
  if (nread < 0) {
    char why[160];
    if (c->peer >= 0 && (c->state == C_READY))
      snprintf(why, sizeof(why), "connection to rank %d %s", c->peer,
               nread == UV_EOF ? "closed by the peer (process exited or was killed?)"
                               : uv_strerror((int)nread));
    else
      snprintf(why, sizeof(why), "%s during the handshake",
               nread == UV_EOF ? "closed" : uv_strerror((int)nread));
    conn_fail(c, RLX_ERR_PEER_LOST, why);
    return;
  }
  if (c->reading_stage) {
    c->stage_len = (size_t)nread;
    c->stage_off = 0;
    drain_stage(c);
    return;
  }
  if (c->rstate == R_PAYLOAD)
    c->crc = rlx__crc32c_update(c->crc, c->dst + c->got, (size_t)nread);
  c->got += (size_t)nread;
  if (c->got < c->need)
    return;
  if (c->rstate == R_HS)
    hs_done(c);
  else
    payload_done(c);
}

/* ---- connecting ------------------------------------------------------------ */

static void on_connect(uv_connect_t *req, int status) {
  struct rlx__p2p_conn *c = req->data;
  if (c->state == C_CLOSING)
    return;
  if (status < 0) {
    char why[200];
    snprintf(why, sizeof(why), "cannot connect to rank %d at %s (%s): %s", c->peer,
             addr_of(c->p, c->peer, c->tr), c->tr->name, uv_strerror(status));
    conn_fail(c, RLX_ERR_PEER_LOST, why);
    return;
  }
  c->state = C_HS_CLIENT;
  c->rstate = R_HS;
  c->need = RLX__HS_CHALLENGE_SIZE;
  c->got = 0;
  rlx__hs_client_hello(&c->hs, (uint32_t)c->peer, c->hs_out[0]);
  if (uv_read_start(&c->h.stream, on_alloc, on_read) != 0) {
    conn_fail(c, RLX_ERR_PEER_LOST, "cannot read from the new connection");
    return;
  }
  hs_write(c, 0, RLX__HS_HELLO_SIZE);
}

static void ensure_conn(struct rlx__p2p *p, int peer) {
  struct rlx__p2p_peer *pe = &p->peers[peer];
  if (pe->conn || pe->pending || pe->lost || peer >= p->rank)
    return; /* lower ranks wait for the higher one to connect */
  const struct rlx__transport_ops *tr = pe->tr;
  struct rlx__p2p_conn *c = conn_new(p, tr);
  char why[200];
  if (c == NULL) {
    peer_fail(p, peer, RLX_ERR_NOMEM, "no memory for a connection");
    return;
  }
  c->peer = peer;
  c->state = C_CONNECTING;
  c->creq.data = c;
  rlx__hs_init(&c->hs, p->job_key, (uint32_t)p->rank, RLX__HS_DATA);
  rlx__list_push(&p->conns, &c->link);
  pe->pending = c;
  int rc = tr->connect(p->loop, &c->h, &c->creq, addr_of(p, peer, tr), on_connect);
  if (rc != 0) {
    snprintf(why, sizeof(why), "cannot connect to rank %d at %s (%s): %s", peer,
             addr_of(p, peer, tr), tr->name, uv_strerror(rc));
    if (c->h.handle.type == UV_UNKNOWN_HANDLE) { /* never initialised */
      rlx__list_remove(&c->link);
      pe->pending = NULL;
      free(c);
      peer_fail(p, peer, RLX_ERR_PEER_LOST, why);
    } else {
      conn_fail(c, RLX_ERR_PEER_LOST, why);
    }
  }
}

static void on_connection(uv_stream_t *server, int status) {
  struct rlx__p2p *p = server->data;
  const struct rlx__transport_ops *tr =
      server == &p->tcp_listener.stream ? &rlx__tcp_transport : &rlx__unix_transport;
  struct rlx__p2p_conn *c;
  if (status < 0 || (c = conn_new(p, tr)) == NULL)
    return;
  if (tr->accept(p->loop, server, &c->h) != 0) {
    if (c->h.handle.type != UV_UNKNOWN_HANDLE)
      uv_close(&c->h.handle, on_closed);
    else
      free(c);
    return;
  }
  rlx__list_push(&p->conns, &c->link);
  if (tr == &rlx__tcp_transport) {
    struct sockaddr_storage ss;
    int len = sizeof(ss);
    if (uv_tcp_getpeername(&c->h.tcp, (struct sockaddr *)&ss, &len) == 0) {
      if (ss.ss_family == AF_INET)
        uv_ip4_name((struct sockaddr_in *)&ss, c->addr, sizeof(c->addr));
      else
        uv_ip6_name((struct sockaddr_in6 *)&ss, c->addr, sizeof(c->addr));
    }
  } else {
    /* Our own user only: another user's process has no business here,
     * key or not (the run directory is 0700 as well). */
    struct ucred cred;
    socklen_t clen = sizeof(cred);
    uv_os_fd_t fd;
    snprintf(c->addr, sizeof(c->addr), "unix socket");
    if (uv_fileno(&c->h.handle, &fd) == 0 &&
        getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &clen) == 0) {
      snprintf(c->addr, sizeof(c->addr), "unix socket, pid %d uid %u", (int)cred.pid,
               (unsigned)cred.uid);
      if (cred.uid != getuid()) {
        p->strangers++;
        rlx__warn("dropped a connection on our Unix socket from pid %d of uid %u (not ours)",
                  (int)cred.pid, (unsigned)cred.uid);
        conn_close(c);
        return;
      }
    }
  }
  rlx__hs_init(&c->hs, p->job_key, (uint32_t)p->rank, RLX__HS_DATA);
  c->state = C_HS_HELLO;
  c->rstate = R_HS;
  c->need = RLX__HS_HELLO_SIZE;
  c->hs_deadline = rlx__now_ns() + HS_DEADLINE_NS;
  if (uv_read_start(&c->h.stream, on_alloc, on_read) != 0)
    conn_fail(c, RLX_ERR_PEER_LOST, "cannot read");
}

/* Drop connections that do not finish the handshake in time (slow-loris). */
static void send_ping(struct rlx__p2p_conn *c) {
  struct rlx__frame_hdr h;
  memset(&h, 0, sizeof(h));
  h.type = RLX__FT_PING;
  h.kind = 1;
  h.src = (uint32_t)c->p->rank;
  struct ack_write *w = malloc(sizeof(*w));
  if (w == NULL)
    return;
  rlx__frame_encode(&h, w->bytes);
  w->req.data = w;
  uv_buf_t b = uv_buf_init((char *)w->bytes, sizeof(w->bytes));
  if (uv_write(&w->req, &c->h.stream, &b, 1, on_ack_written) != 0)
    free(w);
  c->last_tx = rlx__now_ns();
}

static void on_sweep(uv_timer_t *t) {
  struct rlx__p2p *p = t->data;
  uint64_t now = rlx__now_ns();
  struct rlx__list *l = p->conns.next;
  while (l != &p->conns) {
    struct rlx__p2p_conn *c = rlx__container_of(l, struct rlx__p2p_conn, link);
    l = l->next;
    if ((c->state == C_HS_HELLO || c->state == C_HS_PROOF) && now > c->hs_deadline)
      conn_fail(c, RLX_ERR_AUTH, "no complete handshake within 10 s");
    if (c->state != C_READY || c->peer < 0)
      continue;
    if (c->last_rx && now - c->last_rx > HB_SILENCE_NS) {
      char why[160];
      snprintf(why, sizeof(why), "nothing from rank %d for %.0f s, not even a heartbeat "
               "(its host or link gone, or the process stopped?)", c->peer,
               (double)(now - c->last_rx) / 1e9);
      conn_fail(c, RLX_ERR_PEER_LOST, why);
      continue;
    }
    if (now - c->last_tx > HB_EVERY_NS)
      send_ping(c);
  }
}

/* ---- sending --------------------------------------------------------------- */

/* A write found the peer gone (EPIPE, ECONNRESET). It may have closed on
 * purpose, after an ABORT frame that says why and that is still to be
 * read: park the send; the end of the stream, right after what is left,
 * fails the peer and its parked sends (peer_fail), by then with the
 * reason known. Returns 1 when x was parked. */
static int park_if_closed(struct rlx__p2p_conn *c, struct rlx__xfer *x, int rc) {
  if ((rc != UV_EPIPE && rc != UV_ECONNRESET) || c->state != C_READY || c->peer < 0)
    return 0;
  c->write_dead = 1;
  if (x->cma == 1)
    rlx__list_remove(&x->link);
  x->cma = 0;
  x->queued = 1;
  rlx__list_push(&c->p->peers[c->peer].sendq, &x->link);
  return 1;
}

static void on_write(uv_write_t *req, int status) {
  struct rlx__xfer *x = req->data;
  x->writing = 0;
  if (status < 0) {
    struct rlx__p2p_conn *c = req->handle->data;
    if (c != NULL && park_if_closed(c, x, status))
      return;
    if (x->cma == 1)
      rlx__list_remove(&x->link);
    x->cma = 0;
    finish(x, RLX_ERR_PEER_LOST);
    return;
  }
  switch (x->cma) {
  case 1: /* by reference: done when the receiver says it took the data */
    return;
  case 3: /* NACKed while libuv still held the request */
    resend_on_socket(req->handle->data, x);
    return;
  default:
    x->cma = 0;
    finish(x, RLX_OK);
  }
}

/* What goes on the wire after the header: the payload, or for a send by
 * reference its descriptor. */
static const uint8_t *wire_payload(const struct rlx__xfer *x, size_t *len) {
  if (x->cma) {
    *len = RLX__CMA_DESC_SIZE;
    return x->cma_desc;
  }
  *len = x->len;
  return x->buf;
}

/* A write of x starts (all of it, or what try_write left). */
static void started(struct rlx__p2p *p, struct rlx__xfer *x) {
  if (x->cma == 1)
    rlx__list_push(&p->peers[x->peer].cma_wait, &x->link);
}

static void start_write(struct rlx__p2p_conn *c, struct rlx__xfer *x, size_t skip) {
  uv_buf_t bufs[2];
  int n = 0;
  size_t plen;
  const uint8_t *payload = wire_payload(x, &plen);
  c->last_tx = rlx__now_ns();
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
  started(c->p, x);
  int rc = uv_write(&x->wreq, &c->h.stream, bufs, (unsigned)n, on_write);
  if (rc != 0) {
    x->writing = 0;
    if (x->cma == 1)
      rlx__list_remove(&x->link);
    x->cma = 0;
    finish(x, RLX_ERR_PEER_LOST);
  }
}

static void resend_on_socket(struct rlx__p2p_conn *c, struct rlx__xfer *x) {
  x->cma = 0;
  x->hdr.flags = 0;
  x->hdr.payload_crc = rlx__crc32c(x->buf, x->len); /* now the data itself */
  rlx__frame_encode(&x->hdr, x->hbytes);
  start_write(c, x, 0);
}

static int send_frame(struct rlx__p2p *p, struct rlx__xfer *x, int type);

int rlx__p2p_send(struct rlx__p2p *p, struct rlx__xfer *x) {
  return send_frame(p, x, RLX__FT_DATA);
}

/* An ABORT frame on storage of its own, freed when it is written (or
 * dropped with its connection). */
struct abort_msg {
  struct rlx__xfer x;
  uint8_t payload[4 + ABORT_REASON_MAX];
};

static void abort_sent(struct rlx__xfer *x) { free(x->owner); }

void rlx__p2p_abort(struct rlx__p2p *p, int peer, uint32_t comm_id, uint64_t seq, uint8_t kind,
                    int err, const char *reason) {
  if (peer == p->rank || peer < 0 || peer >= p->size || p->peers[peer].lost || p->closing)
    return;
  struct abort_msg *a = calloc(1, sizeof *a);
  if (a == NULL)
    return;
  size_t n = strlen(reason);
  if (n > ABORT_REASON_MAX)
    n = ABORT_REASON_MAX;
  uint32_t e = (uint32_t)err;
  for (int i = 0; i < 4; i++)
    a->payload[i] = (uint8_t)(e >> (8 * i));
  memcpy(a->payload + 4, reason, n);
  a->x.peer = peer;
  a->x.hdr.comm_id = comm_id;
  a->x.hdr.seq = seq;
  a->x.hdr.kind = kind;
  a->x.buf = a->payload;
  a->x.len = 4 + n;
  a->x.cb = abort_sent;
  a->x.owner = a;
  if (send_frame(p, &a->x, RLX__FT_ABORT))
    free(a);
}

#ifdef RLX_FAULT_INJECTION
/* Test builds: RLX_FAULT_FRAME=flip|truncate|drop|flipref:N[:RANK] spoils
 * the N-th DATA frame world rank RANK (default 0) sends: one payload bit
 * flipped after its CRC was taken, the connection closed half-way through
 * the payload, or closed before the frame; flipref flips a bit of the
 * address in a by-reference frame's descriptor (a frame on the socket: as
 * flip). */
enum { FAULT_NONE, FAULT_FLIP, FAULT_TRUNCATE, FAULT_DROP, FAULT_FLIPREF };
static int fault_action(struct rlx__p2p *p) {
  static int parsed, action, rank;
  static long n, seen;
  if (!parsed) {
    parsed = 1;
    const char *f = getenv("RLX_FAULT_FRAME");
    char what[16] = "";
    if (f && sscanf(f, "%15[a-z]:%ld:%d", what, &n, &rank) >= 2 && n > 0)
      action = !strcmp(what, "flip") ? FAULT_FLIP
               : !strcmp(what, "truncate") ? FAULT_TRUNCATE
               : !strcmp(what, "drop") ? FAULT_DROP
               : !strcmp(what, "flipref") ? FAULT_FLIPREF : FAULT_NONE;
  }
  if (action == FAULT_NONE || p->rank != rank || ++seen != n)
    return FAULT_NONE;
  static const char *const names[] = {"", "flip", "truncate", "drop", "flipref"};
  rlx__warn("fault injection: %s on DATA frame %ld", names[action], n);
  return action;
}

static uint8_t *fault_copy; /* the flipped payload (one frame per process) */

/* Returns 1 when the frame was consumed by the fault (x finished). */
static int inject(struct rlx__p2p *p, struct rlx__xfer *x, int action) {
  struct rlx__p2p_conn *c = p->peers[x->peer].conn;
  if (action == FAULT_FLIP && x->len > 0 && (fault_copy = malloc(x->len)) != NULL) {
    memcpy(fault_copy, x->buf, x->len);
    fault_copy[x->len / 2] ^= 0x10;
    x->buf = fault_copy; /* the header keeps the CRC of the true payload */
    return 0;
  }
  if (c == NULL || c->state != C_READY)
    return 0;
  if (action == FAULT_TRUNCATE) {
    uv_buf_t b[2] = {uv_buf_init((char *)x->hbytes, RLX__FRAME_HDR_SIZE),
                     uv_buf_init((char *)x->buf, (unsigned)(x->len / 2))};
    uv_try_write(&c->h.stream, b, x->len / 2 ? 2 : 1);
  }
  peer_fail(p, x->peer, RLX_ERR_PEER_LOST, action == FAULT_DROP
            ? "connection dropped by fault injection"
            : "connection closed half-way through a frame by fault injection");
  x->status = RLX_ERR_PEER_LOST;
  return 1;
}
#endif

static int send_frame(struct rlx__p2p *p, struct rlx__xfer *x, int type) {
  struct rlx__p2p_peer *pe = &p->peers[x->peer];
  x->is_send = 1;
  x->writing = 0;
  x->cma = 0;
  x->hdr.type = (uint8_t)type;
  x->hdr.flags = 0;
  x->hdr.src = (uint32_t)p->rank;
  x->hdr.payload_len = x->len;
  if (type == RLX__FT_DATA && p->cma && !pe->no_cma && x->len >= CMA_MIN &&
      pe->tr == &rlx__unix_transport) {
    /* By reference: what crosses the socket, and what the CRC covers, is
     * the descriptor; the data itself goes from memory to memory in the
     * kernel, as a memcpy would, and checksumming it on both sides cost
     * more than the copy (512 KiB: ~30 us of CRC32C each side). */
    x->cma = 1;
    x->hdr.flags = RLX__FF_CMA;
    put64(x->cma_desc, (uint64_t)(uintptr_t)x->buf);
    put64(x->cma_desc + 8, (uint64_t)getpid());
    x->hdr.payload_crc = rlx__crc32c(x->cma_desc, RLX__CMA_DESC_SIZE);
  } else {
    x->hdr.payload_crc = rlx__crc32c(x->buf, x->len);
  }
  rlx__frame_encode(&x->hdr, x->hbytes);
  rlx__list_init(&x->link);
#ifdef RLX_FAULT_INJECTION
  int fault = type == RLX__FT_DATA ? fault_action(p) : FAULT_NONE;
  if (fault == FAULT_FLIPREF && x->cma) {
    x->cma_desc[2] ^= 0x10; /* after the descriptor's CRC was taken */
    fault = FAULT_NONE;
  } else if (fault == FAULT_FLIPREF) {
    fault = FAULT_FLIP;
  }
  if (fault != FAULT_NONE) {
    x->cma = 0; /* spoil what goes on the socket */
    x->hdr.flags = 0;
    x->hdr.payload_crc = rlx__crc32c(x->buf, x->len);
    rlx__frame_encode(&x->hdr, x->hbytes);
    if (inject(p, x, fault))
      return 1;
  }
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
      ensure_conn(p, x->peer);
    return 0;
  }
  size_t plen;
  const uint8_t *payload = wire_payload(x, &plen);
  c->last_tx = rlx__now_ns();
  uv_buf_t bufs[2] = {uv_buf_init((char *)x->hbytes, RLX__FRAME_HDR_SIZE),
                      uv_buf_init((char *)payload, (unsigned)plen)};
  size_t total = RLX__FRAME_HDR_SIZE + plen;
  int rc = plen > (1u << 30) ? UV_EAGAIN : uv_try_write(&c->h.stream, bufs, plen ? 2 : 1);
  if (rc >= 0 && (size_t)rc == total) {
    if (x->cma == 1) { /* complete when the ACK comes */
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
    peer_fail(p, x->peer, RLX_ERR_PEER_LOST, why);
    x->status = RLX_ERR_PEER_LOST;
    return 1;
  }
  start_write(c, x, rc > 0 ? (size_t)rc : 0);
  return 0;
}

int rlx__p2p_recv(struct rlx__p2p *p, struct rlx__xfer *x) {
  struct rlx__p2p_peer *pe = &p->peers[x->peer];
  x->is_send = 0;
  rlx__list_init(&x->link);
  for (struct rlx__list *l = pe->unexpected.next; l != &pe->unexpected; l = l->next) {
    struct umsg *m = rlx__container_of(l, struct umsg, link);
    if (same_key(&m->hdr, &x->hdr)) {
      rlx__list_remove(&m->link);
      x->status = deliver_umsg(m, x);
      umsg_put(p, m);
      return 1;
    }
  }
  if (pe->lost) {
    x->status = pe->lost;
    return 1;
  }
  x->queued = 1;
  rlx__list_push(&pe->posted, &x->link);
  ensure_conn(p, x->peer);
  return 0;
}

void rlx__p2p_cancel(struct rlx__p2p *p, struct rlx__xfer *x) {
  struct rlx__p2p_peer *pe = &p->peers[x->peer];
  x->cb = NULL;
  if (x->queued) {
    rlx__list_remove(&x->link);
    x->queued = 0;
  }
  if (pe->conn && pe->conn->target == x) {
    pe->conn->target = NULL;
    peer_fail(p, x->peer, RLX_ERR_PEER_LOST, "a receive was abandoned mid-frame");
  }
  if (x->writing && pe->conn) /* uv_write holds the buffer: only closing frees it */
    peer_fail(p, x->peer, RLX_ERR_PEER_LOST, "a send was abandoned mid-frame");
  else if (x->is_send && x->cma == 1) /* the peer may still read the buffer */
    peer_fail(p, x->peer, RLX_ERR_PEER_LOST, "a send by reference was abandoned");
}

int rlx__p2p_connected(struct rlx__p2p *p, int peer) {
  return peer == p->rank || (p->peers[peer].conn && p->peers[peer].conn->state == C_READY);
}

void rlx__p2p_mark_lost(struct rlx__p2p *p, int peer, const char *why) {
  peer_fail(p, peer, RLX_ERR_PEER_LOST, why);
}

const char *rlx__p2p_transport_of(struct rlx__p2p *p, int peer) {
  if (peer == p->rank)
    return "self";
  return p->peers[peer].tr->name;
}

void rlx__p2p_conn_stats(struct rlx__p2p *p, int *nunix, int *ntcp, unsigned long *retrans) {
  /* Counted over the whole job, not just the connections open now: at
   * finalize a peer that finished first may already have closed its side. */
  *nunix = (int)p->opened_unix;
  *ntcp = (int)p->opened_tcp;
  *retrans = p->retrans_closed;
  for (int r = 0; r < p->size; r++) {
    struct rlx__p2p_conn *c = p->peers[r].conn;
    if (r != p->rank && c != NULL && c->state == C_READY && c->tr == &rlx__tcp_transport)
      *retrans += tcp_retrans(c);
  }
}

const char *rlx__p2p_lost_reason(struct rlx__p2p *p, int peer) {
  return p->peers[peer].lost ? p->peers[peer].why : NULL;
}

/* ---- set-up and tear-down ---------------------------------------------------- */

int rlx__p2p_init(struct rlx__p2p *p, uv_loop_t *loop, int rank, int size, const char *job_key,
                  int choice, const char *tcp_ip, const char *unix_path, int cma,
                  struct rlx__card *mine) {
  int rc;
  memset(p, 0, sizeof(*p));
  p->cma = cma;
  /* Where Yama restricts ptrace to descendants, let peers of our uid read
   * our buffers (process_vm_readv follows ptrace's rules). */
  if (cma)
    prctl(PR_SET_PTRACER, PR_SET_PTRACER_ANY, 0, 0, 0);
  p->loop = loop;
  p->rank = rank;
  p->size = size;
  p->choice = choice;
  snprintf(p->job_key, sizeof(p->job_key), "%s", job_key);
  rlx__list_init(&p->conns);
  rlx__list_init(&p->pool);
  p->peers = calloc((size_t)size, sizeof(*p->peers));
  if (p->peers == NULL)
    return rlx__err(RLX_ERR_NOMEM, "no memory for %d peers", size);
  for (int i = 0; i < size; i++) {
    rlx__list_init(&p->peers[i].posted);
    rlx__list_init(&p->peers[i].unexpected);
    rlx__list_init(&p->peers[i].sendq);
    rlx__list_init(&p->peers[i].cma_wait);
  }
  p->tcp_listener.handle.data = p;
  p->unix_listener.handle.data = p;
  rc = rlx__tcp_transport.listen(loop, &p->tcp_listener, tcp_ip, mine->tcp, sizeof(mine->tcp),
                                 on_connection);
  p->tcp_open = p->tcp_listener.handle.type != UV_UNKNOWN_HANDLE;
  p->tcp_listener.handle.data = p;
  if (rc != 0)
    return rlx__err(RLX_ERR_SYS, "cannot listen on TCP address %s: %s", tcp_ip, uv_strerror(rc));
  if (unix_path != NULL) {
    rc = rlx__unix_transport.listen(loop, &p->unix_listener, unix_path, mine->unix_path,
                                    sizeof(mine->unix_path), on_connection);
    p->unix_open = p->unix_listener.handle.type != UV_UNKNOWN_HANDLE;
    p->unix_listener.handle.data = p;
    if (rc != 0)
      return rlx__err(RLX_ERR_SYS, "cannot listen on Unix socket %s: %s", unix_path,
                      uv_strerror(rc));
  }
  uv_timer_init(loop, &p->sweep);
  p->sweep_open = 1;
  p->sweep.data = p;
  uv_timer_start(&p->sweep, on_sweep, 500, 500);
  uv_unref((uv_handle_t *)&p->sweep);
  return RLX_OK;
}

int rlx__p2p_start(struct rlx__p2p *p, const struct rlx__card *cards) {
  p->cards = cards;
  /* Reach does not change: decide each peer's transport once. */
  for (int i = 0; i < p->size; i++)
    p->peers[i].tr = choose_transport(p, i);
  /* Say which peers go over which transport: "unix 1,2; tcp 3". */
  if (rlx__log_level >= RLX__LOG_INFO) {
    char line[512] = "";
    size_t k = 0;
    const struct rlx__transport_ops *trs[2] = {&rlx__unix_transport, &rlx__tcp_transport};
    for (int t = 0; t < 2; t++) {
      int first = 1;
      for (int i = 0; i < p->size && k + 24 < sizeof line; i++) {
        if (i == p->rank || p->peers[i].tr != trs[t])
          continue;
        if (first)
          k += (size_t)snprintf(line + k, sizeof line - k, "%s%s %d", k ? "; " : "",
                                trs[t]->name, i);
        else
          k += (size_t)snprintf(line + k, sizeof line - k, ",%d", i);
        first = 0;
      }
    }
    rlx__info("transports: %s (host %s)", k ? line : "no peers", cards[p->rank].host);
  }
  return RLX_OK;
}

void rlx__p2p_close(struct rlx__p2p *p) {
  p->closing = 1;
  while (!rlx__list_empty(&p->conns)) {
    struct rlx__p2p_conn *c = rlx__container_of(p->conns.next, struct rlx__p2p_conn, link);
    if (c->peer >= 0 && (c->state == C_READY))
      peer_fail(p, c->peer, RLX_ERR_STATE, "finalized");
    else
      conn_close(c);
  }
  for (int i = 0; p->peers && i < p->size; i++)
    peer_fail(p, i, RLX_ERR_STATE, "finalized");
  if (p->tcp_open)
    uv_close(&p->tcp_listener.handle, NULL);
  if (p->unix_open)
    uv_close(&p->unix_listener.handle, NULL);
  if (p->sweep_open)
    uv_close((uv_handle_t *)&p->sweep, NULL);
  p->tcp_open = p->unix_open = p->sweep_open = 0;
}

void rlx__p2p_free(struct rlx__p2p *p) {
#ifdef RLX_FAULT_INJECTION
  free(fault_copy); /* written by then: the connections are closed */
  fault_copy = NULL;
#endif
  while (p->pool.next != NULL && !rlx__list_empty(&p->pool)) {
    struct rlx__list *l = p->pool.next;
    rlx__list_remove(l);
    free(rlx__container_of(l, struct umsg, link));
  }
  p->npool = 0;
  free(p->peers);
  p->peers = NULL;
}
