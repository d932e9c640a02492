/* The public point-to-point calls: rlx_send, rlx_recv, their nonblocking
 * forms and rlx_sendrecv. A message is one MSG frame (lib/transport/msg.c
 * matches it); this file checks the call, starts the transfer, waits with
 * the communicator's deadline, and turns the outcome into a status and an
 * error that names the ranks. A failed message does not revoke its
 * communicator: the ranks need not agree on it, as they must on a
 * collective. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "base/fastdiv.h"
#include "base/tuning.h"
#include "runtime/calls.h"

/* A message's frame is one frame: at most this many bytes. */
#define MSG_MAX_BYTES RLX__FRAME_MAX_PAYLOAD

/* The request rlx_isend hands out for a message that went at once (whole
 * into a shared-memory ring or a socket's buffer): nothing to wait for,
 * nothing to free. Open MPI's ob1 does the same for its inline sends; a
 * window of small sends then costs no allocation. */
static struct rlx__msg_req sent_at_once = {.is_msg = 2, .done = 1};

/* Requests kept by each thread for its next nonblocking messages: a
 * window of them costs no malloc and free (their arena lock, a locked
 * instruction, waited each time for the ring lines the message had
 * written to reach the reader). Freed when the thread exits. */
#define REQ_CACHE 64
struct req_cache {
  int n;
  struct rlx__msg_req *r[REQ_CACHE];
};
/* (initial-exec: a load off the thread pointer, where the shared
 * library's default model called __tls_get_addr for every request; one
 * pointer fits glibc's static TLS room for a library loaded by dlopen,
 * as the Python module loads us) */
static _Thread_local struct req_cache *req_cache __attribute__((tls_model("initial-exec")));
static pthread_key_t req_cache_key;
static pthread_once_t req_cache_once = PTHREAD_ONCE_INIT;

static void req_cache_free(void *arg) {
  struct req_cache *k = arg;
  for (int i = 0; i < k->n; i++)
    free(k->r[i]);
  free(k);
}

static void req_cache_key_make(void) { (void)pthread_key_create(&req_cache_key, req_cache_free); }

static struct rlx__msg_req *req_take(void) {
  struct req_cache *k = req_cache;
  if (k != NULL && k->n > 0)
    return k->r[--k->n];
  return malloc(sizeof(struct rlx__msg_req));
}

static void req_give(struct rlx__msg_req *m) {
  struct req_cache *k = req_cache;
  if (k == NULL) {
    pthread_once(&req_cache_once, req_cache_key_make);
    if ((k = calloc(1, sizeof(*k))) == NULL || pthread_setspecific(req_cache_key, k) != 0) {
      free(k);
      free(m);
      return;
    }
    req_cache = k;
  }
  if (k->n < REQ_CACHE)
    k->r[k->n++] = m;
  else
    free(m);
}

static int check(const char *call, rlx_comm_t *c, const void *buf, size_t count, rlx_dtype_t dt,
                 int peer, int tag, int recv) {
  int rc = rlx__call_check_comm(call, c); /* (initialized, a communicator, not revoked) */
  if (rc != RLX_OK)
    return rc;
  if ((unsigned)dt >= RLX_DTYPE_COUNT)
    return rlx__err(RLX_ERR_ARG, "%s: unknown dtype %d", call, (int)dt);
  size_t es = rlx__dtype_size(dt);
  if (count > MSG_MAX_BYTES / es)
    return rlx__err(RLX_ERR_ARG, "%s: %zu %s is more than a message carries (1 GiB)", call, count,
                    rlx_dtype_name(dt));
  if (buf == NULL && count > 0)
    return rlx__err(RLX_ERR_ARG, "%s: buffer is NULL with count %zu", call, count);
  if (buf == RLX_IN_PLACE)
    return rlx__err(RLX_ERR_ARG, "%s: RLX_IN_PLACE is not a buffer", call);
  if ((peer < 0 || peer >= c->size) && !(recv && peer == RLX_ANY_SOURCE))
    return rlx__err(RLX_ERR_ARG, "%s: %s %d is not a rank of this communicator (size %d)", call,
                    recv ? "source" : "dest", peer, c->size);
  if (tag < 0 && !(recv && tag == RLX_ANY_TAG))
    return rlx__err(RLX_ERR_ARG, "%s: tag %d is negative%s", call, tag,
                    recv ? " (RLX_ANY_TAG is -1)" : "");
  return RLX_OK;
}

static void xfer_done(struct rlx__xfer *x) {
  struct rlx__msg_req *m = x->owner;
  atomic_fetch_add_explicit(&m->progress, 1, memory_order_relaxed);
  atomic_store_explicit(&m->done, 1, memory_order_release);
  rlx__engine_notify(&rlx__rt.engine);
}

/* Fill m for a message and start it under the loop lock. (Field by
 * field: the transfer's buffers need no clearing, and a message's
 * latency is a few microseconds.) */
static void start(struct rlx__msg_req *m, const char *call, rlx_comm_t *c, const void *buf,
                  size_t count, rlx_dtype_t dt, int peer, int tag, int recv) {
  struct rlx__runtime *rt = &rlx__rt;
  struct rlx__xfer *x = &m->x;
  m->is_msg = 1;
  m->recv = recv;
  atomic_init(&m->done, 0);
  atomic_init(&m->progress, 0);
  m->call = call;
  m->dt = dt;
  m->count = count;
  m->peer = peer;
  m->tag = tag;
  m->comm = c;
  m->deadline = rlx__comm_deadline(c, rlx__tick_ceil_ns(), NULL);
  memset(&x->hdr, 0, sizeof(x->hdr));
  x->got.type = 0;
  x->status = RLX_OK;
  x->is_send = x->queued = x->writing = 0;
  x->ref = RLX__REF_NONE;
  x->peer = peer == RLX_ANY_SOURCE ? RLX__MSG_ANY : c->world[peer];
  x->hdr.comm_id = c->id;
  x->hdr.segment = tag == RLX_ANY_TAG ? RLX__MSG_ANY_TAG : (uint32_t)tag;
  x->hdr.sig[0] = (uint8_t)dt; /* the receiver compares it */
  x->buf = (void *)buf;
  x->len = count * rlx__dtype_size(dt);
  x->cb = xfer_done;
  x->owner = m;
  x->any_of = c->world;
  x->nany = c->size;
  rlx__engine_lock(&rt->engine);
  int now = recv ? rlx__msg_recv(&rt->p2p, x) : rlx__msg_send(&rt->p2p, x);
  /* A send that did not go at once: let the loop take it. Not for a
   * receive: a turn reads what has come, and a window of receives posted
   * one by one then found its own messages arriving ahead of it, kept
   * and copied (64 KiB messages in a 64-deep window: 106 us each, against
   * 5 for vader); a dial it asked for is the progress thread's, woken. */
  int dialing = recv && !now && x->peer >= 0 && !rlx__p2p_connected(&rt->p2p, x->peer);
  if (now)
    atomic_store_explicit(&m->done, 1, memory_order_release);
  else if (!recv)
    rlx__engine_turn(&rt->engine);
  rlx__engine_unlock(&rt->engine);
  if (dialing)
    rlx__engine_kick(&rt->engine);
}

static int comm_rank_of(const rlx_comm_t *c, int world) {
  for (int r = 0; r < c->size; r++)
    if (c->world[r] == world)
      return r;
  return -1;
}

/* "rlx_recv on rank 0 (from rank 1, tag 5)" */
static void describe(const struct rlx__msg_req *m, char *buf, size_t len) {
  char peer[32], tag[32];
  if (m->peer == RLX_ANY_SOURCE)
    snprintf(peer, sizeof peer, "any source");
  else
    snprintf(peer, sizeof peer, "rank %d", m->peer);
  if (m->tag == RLX_ANY_TAG)
    snprintf(tag, sizeof tag, "any tag");
  else
    snprintf(tag, sizeof tag, "tag %d", m->tag);
  snprintf(buf, len, "%s(count=%zu, %s, %s %s, %s) on rank %d", m->call, m->count,
           rlx_dtype_name(m->dt), m->recv ? "from" : "to", peer, tag, m->comm->rank);
}

/* A send by reference whose receiver has not said it read the buffer
 * (stopped, or its progress late) when the call must end: cancelled, it
 * would close the connection to a rank that is alive (the buffer is the
 * caller's again once the call returns, and the receiver may be reading
 * it now). It waits for that word instead, at most RLX__DRAIN_MS, as a
 * collective's does (exec.c); then it is cancelled as before. 1 when it
 * came (the send is done: the receiver has the message). */
static int drain_ref_send(struct rlx__msg_req *m) {
  struct rlx__runtime *rt = &rlx__rt;
  rlx__engine_lock(&rt->engine);
  int wait = !atomic_load(&m->done) && !m->recv && rlx__p2p_ref_unacked(&m->x);
  rlx__engine_unlock(&rt->engine);
  if (!wait)
    return atomic_load(&m->done);
  char call[200];
  describe(m, call, sizeof call);
  rlx__debug("%s: its time is up with the receiver's word on its send by reference still to "
             "come: waiting up to %d ms for it", call, RLX__DRAIN_MS);
  return rlx__engine_wait(&rt->engine, &m->done, &m->progress,
                          rlx__now_ns() + (uint64_t)RLX__DRAIN_MS * 1000000u) == 0;
}

static int msg_finish(struct rlx__msg_req *m, rlx_status_t *st) {
  struct rlx__runtime *rt = &rlx__rt;
  struct rlx__xfer *x = &m->x;
  rlx_comm_t *c = m->comm;
  char call[200];
  int w = 0;
  if (st != NULL)
    memset(st, 0, sizeof(*st));
  if (!atomic_load(&m->done) &&
      (w = rlx__engine_wait(&rt->engine, &m->done, &m->progress, m->deadline)) != 0 &&
      !drain_ref_send(m)) {
    rlx__engine_lock(&rt->engine);
    int done = atomic_load(&m->done);
    if (!done) {
      if (m->recv)
        rlx__msg_cancel(&rt->p2p, x);
      else
        rlx__p2p_cancel(&rt->p2p, x);
    }
    rlx__engine_unlock(&rt->engine);
    if (!done) {
      const char *why;
      double limit = rlx__comm_timeout(c, &why);
      describe(m, call, sizeof call);
      if (w == -2)
        return rlx__err(RLX_ERR_INTERRUPTED, "%s was interrupted (by the program: a signal?)",
                        call);
      return rlx__err(RLX_ERR_TIMEOUT, "%s timed out after %g s (a timeout set by %s)%s", call,
                      limit, why,
                      m->recv ? ": no message matched it" : ": the receiver did not take it");
    }
  }
  int rc = x->status, from = m->recv ? comm_rank_of(c, (int)x->got.src) : m->peer;
  size_t es = rlx__dtype_size(m->dt);
  if (rc == RLX_OK && m->recv && x->got.sig[0] != (uint8_t)m->dt) {
    describe(m, call, sizeof call);
    const char *sent = rlx_dtype_name((rlx_dtype_t)x->got.sig[0]);
    return rlx__err(RLX_ERR_MISMATCH, "%s: rank %d sent %s (%llu bytes, tag %u) where this "
                    "receive takes %s", call, from, sent ? sent : "an unknown dtype",
                    (unsigned long long)x->got.payload_len, x->got.segment,
                    rlx_dtype_name(m->dt));
  }
  if (st != NULL && m->recv && (rc == RLX_OK || rc == RLX_ERR_TRUNCATE)) {
    st->source = from;
    st->tag = (int)x->got.segment;
    st->count = rlx__per_elem((size_t)x->got.payload_len, es);
  }
  if (rc == RLX_OK)
    return RLX_OK;
  describe(m, call, sizeof call);
  switch (rc) {
  case RLX_ERR_TRUNCATE:
    return rlx__err(rc, "%s: the message from rank %d (tag %u) has %llu bytes, the receive room "
                    "for %zu (%zu %s)", call, from, x->got.segment,
                    (unsigned long long)x->got.payload_len, x->len, m->count,
                    rlx_dtype_name(m->dt));
  case RLX_ERR_CORRUPT:
    if (m->recv)
      return rlx__err(rc, "%s: the message from rank %d came corrupt (a checksum that did not "
                      "match, or a frame by reference naming another process's memory)", call,
                      from);
    /* a send: the peer broke the protocol (the reason names how) */
    /* fall through */
  case RLX_ERR_PEER_LOST:
  case RLX_ERR_SYS: { /* (SYS: a shortage of descriptors, here or at the peer) */
    rlx__engine_lock(&rt->engine);
    const char *lost = rlx__p2p_last_reason(&rt->p2p, m->recv ? (int)x->got.src : x->peer);
    char reason[400], in_world[400];
    snprintf(reason, sizeof reason, "%s",
             lost != NULL ? rlx__reason_in_world(c->world, c->size, lost, in_world,
                                                 sizeof in_world) : "");
    rlx__engine_unlock(&rt->engine);
    return rlx__err(rc, "%s: %s%d: %s", call, rc == RLX_ERR_SYS ? "with rank " : "lost rank ",
                    from, reason);
  }
  default: return rlx__err(rc, "%s failed (%s)", call, rlx_strerror(rc));
  }
}

int rlx__msg_complete(rlx_request_t *r, rlx_status_t *st) {
  struct rlx__msg_req *m = (struct rlx__msg_req *)r;
  if (m == &sent_at_once) {
    if (st != NULL)
      memset(st, 0, sizeof(*st));
    return RLX_OK;
  }
  int rc = msg_finish(m, st);
  atomic_fetch_sub(&m->comm->in_flight, 1);
  req_give(m);
  return rc;
}

void rlx__msg_abandon(rlx_request_t *r) {
  struct rlx__runtime *rt = &rlx__rt;
  struct rlx__msg_req *m = (struct rlx__msg_req *)r;
  if (m == &sent_at_once)
    return;
  drain_ref_send(m);
  rlx__engine_lock(&rt->engine);
  if (!atomic_load(&m->done)) {
    if (m->recv)
      rlx__msg_cancel(&rt->p2p, &m->x);
    else
      rlx__p2p_cancel(&rt->p2p, &m->x);
  }
  rlx__engine_unlock(&rt->engine);
  atomic_fetch_sub(&m->comm->in_flight, 1);
  req_give(m);
}

/* A small send that goes whole at once needs no request, no deadline and
 * no frame header: 1 when it went (rlx__msg_send_packed). A 8-byte
 * ping-pong's send was three times vader's instructions. */
static int send_packed(rlx_comm_t *c, const void *buf, size_t len, rlx_dtype_t dt, int peer,
                       int tag) {
  struct rlx__runtime *rt = &rlx__rt;
  rlx__engine_lock(&rt->engine);
  int now = rlx__msg_send_packed(&rt->p2p, c->world[peer], c->id, (uint32_t)tag, (uint8_t)dt,
                                 buf, len);
  rlx__engine_unlock(&rt->engine);
  return now;
}

static int run(const char *call, rlx_comm_t *c, const void *buf, size_t count, rlx_dtype_t dt,
               int peer, int tag, int recv, rlx_status_t *st, rlx_request_t **req) {
  int rc = check(call, c, buf, count, dt, peer, tag, recv);
  if (rc != RLX_OK)
    return rc;
  size_t len = count * rlx__dtype_size(dt);
  if (!recv && len <= RLX__MSG_PACKED_MAX && send_packed(c, buf, len, dt, peer, tag)) {
    if (req != NULL)
      *req = (rlx_request_t *)&sent_at_once;
    return RLX_OK;
  }
  if (req == NULL) {
    struct rlx__msg_req m;
    start(&m, call, c, buf, count, dt, peer, tag, recv);
    return msg_finish(&m, st);
  }
  struct rlx__msg_req *h = req_take();
  if (h == NULL)
    return rlx__err(RLX_ERR_NOMEM, "%s: no memory for a request", call);
  start(h, call, c, buf, count, dt, peer, tag, recv);
  /* (a failure keeps its request, for its message) */
  if (!recv && atomic_load_explicit(&h->done, memory_order_acquire) && h->x.status == RLX_OK) {
    req_give(h);
    h = &sent_at_once;
  } else {
    /* rlx_comm_free refuses until rlx_wait. (Counted after the start: a
     * locked add right after a send's ring stores waited for them to
     * reach the reader, as loop_lock.h tells.) */
    atomic_fetch_add(&c->in_flight, 1);
  }
  *req = (rlx_request_t *)h;
  return RLX_OK;
}

int rlx_send(const void *buf, size_t count, rlx_dtype_t dt, int dest, int tag, rlx_comm_t *c) {
  return run("rlx_send", c, buf, count, dt, dest, tag, 0, NULL, NULL);
}

int rlx_recv(void *buf, size_t count, rlx_dtype_t dt, int source, int tag, rlx_comm_t *c,
             rlx_status_t *st) {
  return run("rlx_recv", c, buf, count, dt, source, tag, 1, st, NULL);
}

int rlx_isend(const void *buf, size_t count, rlx_dtype_t dt, int dest, int tag, rlx_comm_t *c,
              rlx_request_t **req) {
  if (req == NULL)
    return rlx__err(RLX_ERR_ARG, "rlx_isend: req is NULL");
  return run("rlx_isend", c, buf, count, dt, dest, tag, 0, NULL, req);
}

int rlx_irecv(void *buf, size_t count, rlx_dtype_t dt, int source, int tag, rlx_comm_t *c,
              rlx_request_t **req) {
  if (req == NULL)
    return rlx__err(RLX_ERR_ARG, "rlx_irecv: req is NULL");
  return run("rlx_irecv", c, buf, count, dt, source, tag, 1, NULL, req);
}

int rlx_sendrecv(const void *sbuf, size_t scount, int dest, int stag, void *rbuf, size_t rcount,
                 int source, int rtag, rlx_dtype_t dt, rlx_comm_t *c, rlx_status_t *st) {
  rlx_request_t *r = NULL;
  int rc = check("rlx_sendrecv", c, sbuf, scount, dt, dest, stag, 0);
  if (rc == RLX_OK)
    rc = check("rlx_sendrecv", c, rbuf, rcount, dt, source, rtag, 1);
  if (rc != RLX_OK)
    return rc;
  /* the receive first, so that a message to this rank itself finds it */
  if ((rc = run("rlx_sendrecv", c, rbuf, rcount, dt, source, rtag, 1, NULL, &r)) != RLX_OK)
    return rc;
  int src = run("rlx_sendrecv", c, sbuf, scount, dt, dest, stag, 0, NULL, NULL);
  char msg[700];
  snprintf(msg, sizeof msg, "%s", rlx_errmsg());
  if (src != RLX_OK) { /* the receive is withdrawn, not left to match later */
    rlx__msg_abandon(r);
    return rlx__err(src, "%s", msg);
  }
  return rlx__msg_complete(r, st);
}
