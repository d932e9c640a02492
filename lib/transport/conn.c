/* Connection life: dialing (the higher rank of a pair dials, so two ranks
 * never race to open two), accepting and admitting, the authenticated
 * handshake as a state machine, the ready connection, and closing. A
 * lower rank with a frame for a higher one that has not dialed (a call
 * whose pattern differs there, an ABORT) calls up: it connects and sends
 * only its HELLO, which asks the higher rank to dial it; that connection
 * is then dropped, so the pair still has one connection, dialed by the
 * higher rank. */
#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <rlxcoll/errors.h>
#include "base/internal.h"
#include "observe/observe.h"
#include "p2p_internal.h"

/* A connection that has not finished the handshake by then is dropped. */
#define HS_DEADLINE_NS (10ull * 1000000000ull)

int rlx__transport_index(const struct rlx__transport_ops *tr) {
  for (int i = 0; rlx__transports[i] != NULL; i++)
    if (rlx__transports[i] == tr)
      return i;
  assert(!"a transport missing from rlx__transports");
  return 0;
}

static const char *addr_of(struct rlx__p2p *p, int peer, const struct rlx__transport_ops *tr) {
  size_t cap;
  /* card_addr only writes through its pointer before listening: reading a
   * peer's card through it is safe. */
  return rlx__transport_control(tr)->card_addr((struct rlx__card *)&p->cards[peer], &cap);
}

void rlx__conn_fail(struct rlx__p2p_conn *c, int err, const char *why) {
  struct rlx__p2p *p = c->p;
  if (c->state == C_CLOSING)
    return;
  if (c->call_up && (c->state != C_CONNECTING || p->peers[c->peer].pending != c)) {
    /* the higher rank read our request and closed: its dial follows (one
     * it cannot make fails there, and our frames wait for the deadline);
     * or its dial came first and this request was left to finish */
    rlx__conn_close(c);
    return;
  }
  if (c->peer >= 0 && (c->state == C_READY || c->state == C_CONNECTING ||
                       c->state == C_HS_CLIENT || c->state == C_HS_SEG)) {
    rlx__peer_fail(p, c->peer, err, why);
  } else {
    p->strangers++;
    rlx__warn("dropped connection from %s: %s", c->addr[0] ? c->addr : "?", why);
  }
  rlx__conn_close(c);
}

void rlx__conn_fail_silent(struct rlx__p2p_conn *c, const char *why) {
  c->p->fail_silent = 1;
  rlx__conn_fail(c, RLX_ERR_PEER_LOST, why);
  c->p->fail_silent = 0;
}

#define HS_REDIALS 3
#define HS_REDIAL_NS 200000000ull

void rlx__conn_closed_in_handshake(struct rlx__p2p_conn *c, const char *why) {
  struct rlx__p2p *p = c->p;
  if ((c->state != C_HS_CLIENT && c->state != C_HS_SEG) || c->call_up || c->peer < 0 ||
      p->closing) {
    rlx__conn_fail(c, RLX_ERR_PEER_LOST, why);
    return;
  }
  struct rlx__p2p_peer *pe = &p->peers[c->peer];
  if (++pe->hs_closed <= HS_REDIALS) {
    rlx__debug("rank %d closed our connection in its handshake (%s): dialing again", c->peer,
               why);
    pe->redial_at = rlx__now_ns() + HS_REDIAL_NS;
    rlx__conn_close(c);
    return;
  }
  char msg[300];
  snprintf(msg, sizeof msg, "rank %d closed %d of our connections in their handshakes, though it "
           "still listens (a dead process would refuse): out of descriptors there? (ulimit -n on "
           "its host): not a lost peer", c->peer, pe->hs_closed);
  pe->hs_closed = 0;
  rlx__conn_fail(c, RLX_ERR_SYS, msg);
}

int rlx__status_is_silence(int uv_status) {
  return uv_status == UV_ETIMEDOUT || uv_status == UV_EHOSTUNREACH ||
         uv_status == UV_ENETUNREACH || uv_status == UV_EHOSTDOWN || uv_status == UV_ENETDOWN;
}

static void on_closed(uv_handle_t *h) {
  struct rlx__p2p_conn *c = h->data;
  if (c->um)
    rlx__umsg_put(c->p, c->um);
  free(c->stage);
  free(c);
}

void rlx__conn_close(struct rlx__p2p_conn *c) {
  struct rlx__p2p *p = c->p;
  if (c->state == C_CLOSING)
    return;
  if (c->peer >= 0) {
    if (p->peers[c->peer].conn == c)
      p->peers[c->peer].conn = NULL;
    if (p->peers[c->peer].pending == c)
      p->peers[c->peer].pending = NULL;
  }
  if (c->state == C_READY && c->tr->retransmissions)
    p->retrans_closed += c->tr->retransmissions(&c->h.handle);
  if (c->state == C_READY) {
    p->nready--;
    for (int i = 0; i < p->npolled; i++)
      if (p->polled[i] == c)
        p->polled[i] = p->polled[--p->npolled];
  }
  c->state = C_CLOSING;
  if (c->target) { /* a receive whose payload was streaming in */
    struct rlx__xfer *x = c->target;
    c->target = NULL;
    rlx__xfer_finish(x, c->peer >= 0 && p->peers[c->peer].lost ? p->peers[c->peer].lost
                                                                : RLX_ERR_PEER_LOST);
  }
  if (c->tr->drop != NULL)
    c->tr->drop(c, c->peer >= 0 && p->peers[c->peer].lost ? p->peers[c->peer].lost
                                                          : RLX_ERR_PEER_LOST);
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

/* This process's limit on open files (ulimit -n; 0: unknown). */
static unsigned long long fd_limit(void) {
  struct rlimit lim;
  return getrlimit(RLIMIT_NOFILE, &lim) == 0 ? (unsigned long long)lim.rlim_cur : 0;
}

static void hs_write(struct rlx__p2p_conn *c, int slot, size_t from, size_t len) {
  uv_buf_t b = uv_buf_init((char *)c->hs_out[slot] + from, (unsigned)(len - from));
  c->hs_wreq[slot].data = c;
  if (uv_write(&c->hs_wreq[slot], &c->h.stream, &b, 1, NULL) != 0)
    rlx__conn_closed_in_handshake(c, "handshake write failed");
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

static void trace_ready(const struct rlx__p2p_conn *c) {
  char name[64], args[96];
  const char *tr = c->tr->name;
  snprintf(name, sizeof(name), "connect rank %d (%s)", c->peer, tr);
  snprintf(args, sizeof(args), "\"peer\":%d,\"transport\":\"%s\",\"side\":\"%s\"", c->peer,
           tr, c->dialed ? "dialed" : "accepted");
  rlx__trace_span(RLX__TRACK_CONNECT, "connect", name, c->t_start, rlx__now_ns(), args);
}

/* The connection is authenticated: it carries frames from now on, and the
 * sends that waited for it go out. */
static void conn_ready(struct rlx__p2p_conn *c) {
  struct rlx__p2p_peer *pe = &c->p->peers[c->peer];
  assert(c->state == C_HS_CLIENT || c->state == C_HS_SEG || c->state == C_HS_PROOF);
  grow_buffers(c);
  if (pe->pending == c)
    pe->pending = NULL;
  if (c->stage == NULL && (c->stage = malloc(RLX__STAGE_SIZE)) == NULL) {
    rlx__conn_fail(c, RLX_ERR_NOMEM, "no memory for a connection's read buffer");
    return;
  }
  pe->conn = c;
  if (pe->pending != NULL && pe->pending->call_up) { /* answered: the request is done */
    struct rlx__p2p_conn *req = pe->pending;
    pe->pending = NULL;
    /* One still connecting goes on to send its HELLO (and is dropped
     * then): a connection closed before its first byte would count as a
     * stranger on the other side. */
    if (req->state != C_CONNECTING)
      rlx__conn_close(req);
  }
  c->last_rx = c->last_tx = rlx__now_ns();
  pe->hs_closed = 0;
  pe->redial_at = 0;
  c->dialed = c->state != C_HS_PROOF;
  c->state = C_READY;
  c->p->opened[rlx__transport_index(c->tr)]++;
  c->p->nready++;
  rlx__read_next(c);
  if (c->tr->start(c) != 0) {
    rlx__conn_fail(c, RLX_ERR_PEER_LOST, "cannot read the connection's socket");
    return;
  }
  rlx__debug("connected to rank %d over %s", c->peer, c->tr->name);
  if (RLX__TRACING())
    trace_ready(c);
  while (!rlx__list_empty(&pe->sendq) && c->state == C_READY) {
    struct rlx__xfer *x = rlx__container_of(pe->sendq.next, struct rlx__xfer, link);
    rlx__list_remove(&x->link);
    rlx__write_start(c, x);
  }
}

/* The dialing side got the server's challenge: prove, and be ready. */
static void hs_client(struct rlx__p2p_conn *c) {
  if (c->call_up) { /* a request only: the higher rank dials */
    rlx__conn_close(c);
    return;
  }
  int st = rlx__hs_client_challenge(&c->hs, c->hs_in, c->hs_out[1]);
  if (st != RLX__HS_OK) {
    char why[128];
    snprintf(why, sizeof(why), "rank %d failed the handshake: %s", c->peer,
             rlx__hs_strstatus(st));
    rlx__conn_fail(c, RLX_ERR_AUTH, why);
    return;
  }
  /* The proof carries what the transport attaches (shm: its segment), and
   * says so; when nothing went, the connection is its control
   * transport's. */
  long sent = 0;
  if (c->tr->offer != NULL) {
    uint8_t marked[RLX__HS_PROOF_SIZE];
    memcpy(marked, c->hs_out[1], sizeof marked);
    rlx__hs_proof_attach(&c->hs, marked);
    if ((sent = c->tr->offer(c, marked, sizeof marked)) > 0)
      memcpy(c->hs_out[1], marked, sizeof marked); /* for the rest of it, below */
  }
  if (sent <= 0)
    c->tr = rlx__transport_control(c->tr);
  if (sent < RLX__HS_PROOF_SIZE)
    hs_write(c, 1, (size_t)sent, RLX__HS_PROOF_SIZE);
  if (c->state == C_CLOSING)
    return;
  if (sent <= 0) {
    conn_ready(c);
    return;
  }
  /* A process out of descriptors gets the bytes without the descriptor
   * (the kernel drops it, and libuv does not say): wait for the answer. */
  c->state = C_HS_SEG;
  c->need = 1;
  c->got = 0;
}

/* The dialing side got the acceptor's answer to its segment: taken ('S'),
 * or it never came ('U'): the pair then stays on the control transport. */
static void hs_segment(struct rlx__p2p_conn *c) {
  if (c->hs_in[0] == 'U') {
    rlx__debug("rank %d did not get our shared segment (out of descriptors there?): our "
               "frames go on the %s socket", c->peer, rlx__transport_control(c->tr)->name);
    if (c->tr->drop != NULL)
      c->tr->drop(c, RLX_ERR_PEER_LOST); /* nothing waits on it yet */
    c->tr = rlx__transport_control(c->tr);
  } else if (c->hs_in[0] != 'S') {
    char why[128];
    snprintf(why, sizeof why, "rank %d answered our shared segment with byte 0x%02x, not 'S' "
             "or 'U'", c->peer, c->hs_in[0]);
    rlx__conn_fail(c, RLX_ERR_CORRUPT, why);
    return;
  }
  conn_ready(c);
}

/* The accepting side got the HELLO: challenge back. */
static void hs_hello(struct rlx__p2p_conn *c) {
  struct rlx__p2p *p = c->p;
  int st = rlx__hs_server_hello(&c->hs, c->hs_in, c->hs_out[0]);
  if (st != RLX__HS_OK) {
    rlx__conn_fail(c, RLX_ERR_AUTH, rlx__hs_strstatus(st));
    return;
  }
  if (c->hs.peer == (uint32_t)p->rank || c->hs.peer >= (uint32_t)p->size) {
    rlx__conn_fail(c, RLX_ERR_AUTH, "handshake names a rank that does not connect to us");
    return;
  }
  /* A lower rank calls up: it has frames for us. Dial it (the pair's one
   * connection is ours to make) and drop the request. The HELLO is not
   * proof of anything yet, but all it can make us do is dial a rank of
   * our own job, which authenticates as every connection does. */
  if (c->hs.peer < (uint32_t)p->rank) {
    int peer = (int)c->hs.peer;
    rlx__conn_close(c);
    rlx__conn_ensure(p, peer, 0);
    return;
  }
  hs_write(c, 0, 0, RLX__HS_CHALLENGE_SIZE);
  c->state = C_HS_PROOF;
  c->need = RLX__HS_PROOF_SIZE;
  c->got = 0;
}

/* The accepting side got the proof: the peer is who it said. */
static void hs_proof(struct rlx__p2p_conn *c) {
  struct rlx__p2p *p = c->p;
  int st = rlx__hs_server_proof(&c->hs, c->hs_in);
  if (st != RLX__HS_OK) {
    rlx__conn_fail(c, RLX_ERR_AUTH, rlx__hs_strstatus(st));
    return;
  }
  int peer = (int)c->hs.peer;
  if (p->peers[peer].conn != NULL || p->peers[peer].lost) {
    rlx__conn_fail(c, RLX_ERR_AUTH, "a second connection for a rank already connected");
    return;
  }
  c->peer = peer;
  if (!c->hs.attached) {
    conn_ready(c);
    return;
  }
  /* A transport riding on this one sent something with the proof: take
   * it, and say whether it came. */
  int got = 0;
  for (int t = 0; rlx__transports[t] != NULL && got == 0; t++) {
    const struct rlx__transport_ops *tr = rlx__transports[t];
    if (tr->control != c->tr || tr->take_offer == NULL)
      continue;
    if ((got = tr->take_offer(c)) < 0) {
      rlx__conn_fail(c, got, rlx_errmsg());
      return;
    }
    if (got == 1)
      c->tr = tr;
  }
  if (got == 0)
    rlx__warn("rank %d's shared segment did not reach us (too many open files? ulimit -n is %llu "
              "here): frames between us go on the %s socket", peer, fd_limit(), c->tr->name);
  c->hs_out[1][0] = got == 1 ? 'S' : 'U';
  hs_write(c, 1, 0, 1);
  if (c->state != C_CLOSING)
    conn_ready(c);
}

void rlx__conn_hs_done(struct rlx__p2p_conn *c) {
  assert(c->rstate == R_HS);
  switch (c->state) {
  case C_HS_CLIENT: hs_client(c); break;
  case C_HS_SEG: hs_segment(c); break;
  case C_HS_HELLO: hs_hello(c); break;
  case C_HS_PROOF: hs_proof(c); break;
  default: assert(!"handshake bytes outside the handshake");
  }
}

/* ---- dialing ------------------------------------------------------------------- */

/* Why a dial to peer failed with status, into why: RLX_ERR_SYS for a
 * shortage of this process's own (descriptors: ulimit -n), naming it and
 * the limit, else RLX_ERR_PEER_LOST. */
static int dial_failed(struct rlx__p2p *p, int peer, const struct rlx__transport_ops *tr,
                       int status, char *why, size_t len) {
  if (status == UV_EMFILE || status == UV_ENFILE) {
    unsigned long long n = fd_limit();
    snprintf(why, len, "rank %d cannot open a connection to rank %d: %s (ulimit -n is %llu "
             "here; a rank needs a descriptor for each peer it talks to, up to %d in this job, "
             "and about 20 of its own): a local limit, not a lost peer",
             p->rank, peer, uv_strerror(status), n, p->size - 1);
    return RLX_ERR_SYS;
  }
  snprintf(why, len, "cannot connect to rank %d at %s (%s): %s", peer, addr_of(p, peer, tr),
           rlx__transport_control(tr)->name, uv_strerror(status));
  return RLX_ERR_PEER_LOST;
}

static void on_connect(uv_connect_t *req, int status) {
  struct rlx__p2p_conn *c = req->data;
  if (c->state == C_CLOSING)
    return;
  if (status < 0) {
    char why[400];
    int err = dial_failed(c->p, c->peer, c->tr, status, why, sizeof(why));
    if (err == RLX_ERR_PEER_LOST && rlx__status_is_silence(status))
      rlx__conn_fail_silent(c, why);
    else
      rlx__conn_fail(c, err, why);
    return;
  }
  c->state = C_HS_CLIENT;
  c->rstate = R_HS;
  c->need = RLX__HS_CHALLENGE_SIZE;
  c->got = 0;
  rlx__hs_client_hello(&c->hs, (uint32_t)c->peer, c->hs_out[0]);
  if (uv_read_start(&c->h.stream, rlx__read_alloc, rlx__read_cb) != 0) {
    rlx__conn_fail(c, RLX_ERR_PEER_LOST, "cannot read from the new connection");
    return;
  }
  hs_write(c, 0, 0, RLX__HS_HELLO_SIZE);
}

void rlx__conn_ensure(struct rlx__p2p *p, int peer, int sending) {
  struct rlx__p2p_peer *pe = &p->peers[peer];
  if (pe->conn || pe->pending || pe->lost || peer == p->rank || p->closing)
    return;
  /* lower ranks wait for the higher one to connect, or call up to send */
  if (peer > p->rank && !sending)
    return;
  const struct rlx__transport_ops *tr = pe->tr;
  struct rlx__p2p_conn *c = conn_new(p, tr);
  char why[400];
  if (c == NULL) {
    rlx__peer_fail(p, peer, RLX_ERR_NOMEM, "no memory for a connection");
    return;
  }
  c->peer = peer;
  c->state = C_CONNECTING;
  c->call_up = peer > p->rank;
  c->creq.data = c;
  rlx__hs_init(&c->hs, p->job_key, (uint32_t)p->rank, RLX__HS_DATA);
  rlx__list_push(&p->conns, &c->link);
  pe->pending = c;
  int rc = rlx__transport_control(tr)->connect(p->loop, &c->h, &c->creq, addr_of(p, peer, tr),
                                               on_connect);
  if (rc != 0) {
    int err = dial_failed(p, peer, tr, rc, why, sizeof(why));
    p->fail_silent = err == RLX_ERR_PEER_LOST && rlx__status_is_silence(rc);
    if (c->h.handle.type == UV_UNKNOWN_HANDLE) { /* never initialised */
      rlx__list_remove(&c->link);
      pe->pending = NULL;
      free(c);
      rlx__peer_fail(p, peer, err, why);
    } else {
      rlx__conn_fail(c, err, why);
    }
    p->fail_silent = 0;
  }
}

/* ---- accepting ------------------------------------------------------------------ */

void rlx__conn_on_connection(uv_stream_t *server, int status) {
  struct rlx__p2p_listener *l = server->data;
  struct rlx__p2p *p = l->p;
  struct rlx__p2p_conn *c;
  if (status < 0 || (c = conn_new(p, l->tr)) == NULL)
    return;
  if (l->tr->accept(p->loop, server, &c->h) != 0) {
    if (c->h.handle.type != UV_UNKNOWN_HANDLE)
      uv_close(&c->h.handle, on_closed);
    else
      free(c);
    return;
  }
  rlx__list_push(&p->conns, &c->link);
  if (l->tr->admit(&c->h.stream, c->addr, sizeof(c->addr)) != 0) {
    p->strangers++;
    rlx__warn("%s", c->addr);
    rlx__conn_close(c);
    return;
  }
  rlx__hs_init(&c->hs, p->job_key, (uint32_t)p->rank, RLX__HS_DATA);
  c->state = C_HS_HELLO;
  c->rstate = R_HS;
  c->need = RLX__HS_HELLO_SIZE;
  c->hs_deadline = rlx__now_ns() + HS_DEADLINE_NS;
  if (uv_read_start(&c->h.stream, rlx__read_alloc, rlx__read_cb) != 0)
    rlx__conn_fail(c, RLX_ERR_PEER_LOST, "cannot read");
}
