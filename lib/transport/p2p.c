/* Point-to-point messaging over connections of any transport: the entry
 * points (send, receive, cancel, abort), failure of a peer and everything
 * that waits on it, set-up and tear-down, and queries. How connections
 * live, how frames are read and written, matched, or copied by reference
 * is in the files p2p_internal.h lists. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <rlxcoll/errors.h>
#include "base/internal.h"
#include "p2p_internal.h"

/* Let the sweep come round this often: heartbeats, handshake deadlines. */
#define SWEEP_MS 500

void rlx__xfer_finish(struct rlx__xfer *x, int status) {
  x->status = status;
  x->queued = 0;
  if (x->cb)
    x->cb(x);
}

void rlx__peer_fail(struct rlx__p2p *p, int peer, int err, const char *why) {
  struct rlx__p2p_peer *pe = &p->peers[peer];
  if (pe->lost)
    return;
  snprintf(pe->why, sizeof(pe->why), "%s", why);
  /* RLX_ERR_SYS: a shortage of this process's (descriptors): what waits on
   * the peer fails, but the peer is not lost (a shrink keeps it, a later
   * call dials again) */
  if (err != RLX_ERR_SYS) {
    pe->lost = err;
    pe->silent = p->fail_silent;
    p->corrupt += err == RLX_ERR_CORRUPT; /* a header that failed its CRC */
    if (!p->closing)
      rlx__info("lost rank %d: %s", peer, why);
    if (p->on_lost)
      p->on_lost(p->abort_ctx, peer, why);
  }
  rlx__msg_peer_lost(p, peer, err);
  struct rlx__list *lists[4] = {&pe->posted, &pe->sendq, &pe->cma_wait, &pe->split_wait};
  for (int i = 0; i < 4; i++) {
    while (!rlx__list_empty(lists[i])) {
      struct rlx__xfer *x = rlx__container_of(lists[i]->next, struct rlx__xfer, link);
      rlx__list_remove(&x->link);
      if (x->writing) { /* its write's cancellation reports the error */
        x->ref = RLX__REF_NONE;
        continue;
      }
      rlx__xfer_finish(x, err);
    }
  }
  /* Frames that arrived whole stay for the receives still to come: a peer
   * that sent its part and then exited (or was finalized) is lost to
   * what it did not send, not to what it did. */
  if (pe->conn)
    rlx__conn_close(pe->conn);
  if (pe->pending)
    rlx__conn_close(pe->pending);
}

/* ---- entry points ------------------------------------------------------------ */

int rlx__p2p_send(struct rlx__p2p *p, struct rlx__xfer *x) {
  return rlx__write_frame(p, x, RLX__FT_DATA);
}

int rlx__p2p_recv(struct rlx__p2p *p, struct rlx__xfer *x) {
  struct rlx__p2p_peer *pe = &p->peers[x->peer];
  x->is_send = 0;
  rlx__list_init(&x->link);
  struct rlx__umsg *m = rlx__match_take_early(pe, x);
  if (m != NULL) {
    x->status = rlx__umsg_deliver(m, x);
    rlx__umsg_put(p, m);
    return 1;
  }
  if (pe->lost) {
    x->status = pe->lost;
    return 1;
  }
  x->queued = 1;
  rlx__list_push(&pe->posted, &x->link);
  rlx__conn_ensure(p, x->peer, 0);
  rlx__sock_watch(p, x->peer);
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
    rlx__peer_fail(p, x->peer, RLX_ERR_PEER_LOST, "a receive was abandoned mid-frame");
  }
  if (x->writing && pe->conn) /* uv_write holds the buffer: only closing frees it */
    rlx__peer_fail(p, x->peer, RLX_ERR_PEER_LOST, "a send was abandoned mid-frame");
  else if (x->is_send && x->ref == RLX__REF_WAIT_ACK) /* the peer may still read the buffer */
    rlx__peer_fail(p, x->peer, RLX_ERR_PEER_LOST, "a send by reference was abandoned");
}

/* ---- queries ------------------------------------------------------------------ */

int rlx__p2p_connected(struct rlx__p2p *p, int peer) {
  return peer == p->rank || (p->peers[peer].conn && p->peers[peer].conn->state == C_READY);
}

void rlx__p2p_dial(struct rlx__p2p *p, int peer) { rlx__conn_ensure(p, peer, 1); }

void rlx__p2p_mark_lost(struct rlx__p2p *p, int peer, int silent, const char *why) {
  p->fail_silent = silent;
  rlx__peer_fail(p, peer, RLX_ERR_PEER_LOST, why);
  p->fail_silent = 0;
}

const char *rlx__p2p_transport_of(struct rlx__p2p *p, int peer) {
  if (peer == p->rank)
    return "self";
  /* (a connection may have fallen back to its control transport) */
  if (p->peers[peer].conn)
    return p->peers[peer].conn->tr->name;
  return p->peers[peer].tr->name;
}

const char *rlx__p2p_lost_reason(struct rlx__p2p *p, int peer) {
  return p->peers[peer].lost ? p->peers[peer].why : NULL;
}

int rlx__p2p_lost_certainly(struct rlx__p2p *p, int peer) {
  return p->peers[peer].lost && !p->peers[peer].silent;
}

const char *rlx__p2p_last_reason(struct rlx__p2p *p, int peer) { return p->peers[peer].why; }

/* Counted over the whole job, not just the connections open now: at
 * finalize a peer that finished first may already have closed its side. */
int rlx__p2p_opened(struct rlx__p2p *p, const char *transport) {
  const struct rlx__transport_ops *tr = rlx__transport_find(transport);
  return tr != NULL ? (int)p->opened[rlx__transport_index(tr)] : 0;
}

unsigned long rlx__p2p_retransmissions(struct rlx__p2p *p) {
  unsigned long n = p->retrans_closed;
  for (int r = 0; r < p->size; r++) {
    struct rlx__p2p_conn *c = p->peers[r].conn;
    if (r != p->rank && c != NULL && c->state == C_READY && c->tr->retransmissions)
      n += c->tr->retransmissions(&c->h.handle);
  }
  return n;
}

/* ---- set-up and tear-down ---------------------------------------------------- */

static int open_listener(struct rlx__p2p *p, const struct rlx__transport_ops *tr,
                         struct rlx__card *mine) {
  size_t cap;
  char *addr = tr->card_addr(mine, &cap), where[256];
  if (addr[0] == '\0')
    return RLX_OK; /* not offered on this rank */
  struct rlx__p2p_listener *l = &p->listeners[rlx__transport_index(tr)];
  snprintf(where, sizeof(where), "%s", addr);
  l->tr = tr;
  l->p = p;
  int rc = tr->listen(p->loop, &l->h, where, addr, cap, rlx__conn_on_connection);
  l->open = l->h.handle.type != UV_UNKNOWN_HANDLE;
  l->h.handle.data = l;
  if (rc != 0)
    return rlx__err(RLX_ERR_SYS, "cannot listen on %s address %s: %s", tr->name, where,
                    uv_strerror(rc));
  return RLX_OK;
}

int rlx__p2p_init(struct rlx__p2p *p, uv_loop_t *loop, int rank, int size, const char *job_key,
                  const char *forced, int cma, struct rlx__card *mine) {
  int rc;
  memset(p, 0, sizeof(*p));
  p->cma = cma;
  if (cma)
    rlx__cma_enable();
  p->loop = loop;
  p->rank = rank;
  p->forced = rlx__transport_find(forced);
  snprintf(p->job_key, sizeof(p->job_key), "%s", job_key);
  rlx__list_init(&p->conns);
  rlx__list_init(&p->pool);
  for (int k = 0; k < RLX__UMSG_CLASSES; k++)
    rlx__list_init(&p->pool_class[k]);
  rlx__list_init(&p->msg_posted);
  rlx__list_init(&p->msg_unexpected);
  /* the peers' tables, as for a job that grew from none (a joining rank
   * has none until it is admitted) */
  if ((rc = rlx__p2p_grow(p, size)) != RLX_OK)
    return rc;
  for (int t = 0; rlx__transports[t] != NULL; t++) /* (not for those riding on another) */
    if (rlx__transports[t]->control == NULL &&
        (rc = open_listener(p, rlx__transports[t], mine)) != RLX_OK)
      return rc;
  uv_timer_init(loop, &p->sweep);
  p->sweep_open = 1;
  p->sweep.data = p;
  uv_timer_start(&p->sweep, rlx__heartbeat_sweep, SWEEP_MS, SWEEP_MS);
  uv_unref((uv_handle_t *)&p->sweep);
  return RLX_OK;
}

int rlx__p2p_init_alone(struct rlx__p2p *p) {
  memset(p, 0, sizeof(*p));
  rlx__list_init(&p->conns);
  rlx__list_init(&p->pool);
  for (int k = 0; k < RLX__UMSG_CLASSES; k++)
    rlx__list_init(&p->pool_class[k]);
  rlx__list_init(&p->msg_posted);
  rlx__list_init(&p->msg_unexpected);
  return rlx__p2p_grow(p, 1);
}

/* Say which peers go over which transport: "shm 1,2; tcp 3". */
static void log_transports(struct rlx__p2p *p) {
  char line[512] = "";
  size_t k = 0;
  for (int t = 0; rlx__transports[t] != NULL; t++) {
    int first = 1;
    const char *name = rlx__transports[t]->name;
    for (int i = 0; i < p->size && k + 24 < sizeof line; i++) {
      if (i == p->rank || p->peers[i].tr != rlx__transports[t])
        continue;
      if (first)
        k += (size_t)snprintf(line + k, sizeof line - k, "%s%s %d", k ? "; " : "", name, i);
      else
        k += (size_t)snprintf(line + k, sizeof line - k, ",%d", i);
      first = 0;
    }
  }
  rlx__info("transports: %s (host %s)", k ? line : "no peers", p->cards[p->rank].host);
}

int rlx__p2p_grow(struct rlx__p2p *p, int size) {
  if (size <= p->size)
    return RLX_OK;
  struct rlx__p2p_peer *peers = calloc((size_t)size, sizeof(*peers));
  struct rlx__p2p_conn **polled = calloc((size_t)size, sizeof(*polled));
  int *watch = calloc((size_t)size, sizeof(*watch));
  if (peers == NULL || polled == NULL || watch == NULL) {
    free(peers), free(polled), free(watch);
    return rlx__err(RLX_ERR_NOMEM, "no memory for %d peers", size);
  }
  /* The peers' list heads move: their first and last entries follow. */
  for (int i = 0; i < size; i++) {
    struct rlx__p2p_peer *pe = &peers[i];
    if (i >= p->size) {
      rlx__list_init(&pe->posted);
      rlx__list_init(&pe->unexpected);
      rlx__list_init(&pe->sendq);
      rlx__list_init(&pe->cma_wait);
      rlx__list_init(&pe->split_wait);
      continue;
    }
    struct rlx__p2p_peer *old = &p->peers[i];
    *pe = *old;
    rlx__list_moved(&pe->posted, &old->posted);
    rlx__list_moved(&pe->unexpected, &old->unexpected);
    rlx__list_moved(&pe->sendq, &old->sendq);
    rlx__list_moved(&pe->cma_wait, &old->cma_wait);
    rlx__list_moved(&pe->split_wait, &old->split_wait);
  }
  if (p->npolled > 0)
    memcpy(polled, p->polled, sizeof(*polled) * (size_t)p->npolled);
  if (p->nwatch > 0)
    memcpy(watch, p->watch, sizeof(*watch) * (size_t)p->nwatch);
  free(p->peers);
  free(p->polled);
  free(p->watch);
  p->peers = peers;
  p->polled = polled;
  p->watch = watch;
  p->size = size;
  return RLX_OK;
}

int rlx__p2p_start(struct rlx__p2p *p, const struct rlx__card *cards) {
  p->cards = cards;
  /* Reach does not change: decide each peer's transport once. */
  for (int i = 0; i < p->size; i++)
    p->peers[i].tr = rlx__transport_choose(p->forced, &cards[p->rank], &cards[i]);
  if (rlx__log_level >= RLX__LOG_INFO)
    log_transports(p);
  return RLX_OK;
}

size_t rlx__p2p_progress(struct rlx__p2p *p) {
  size_t moved = 0;
  for (int t = 0; rlx__transports[t] != NULL; t++)
    if (rlx__transports[t]->progress != NULL)
      moved += rlx__transports[t]->progress(p);
  return moved + rlx__sock_poll(p);
}

int rlx__p2p_prepare_sleep(struct rlx__p2p *p, int sleeping) {
  int t, woke = 0;
  for (t = 0; rlx__transports[t] != NULL && !woke; t++)
    if (rlx__transports[t]->prepare_sleep != NULL)
      woke = rlx__transports[t]->prepare_sleep(p, sleeping);
  /* bytes came: the ones marked asleep before wake again */
  while (woke && --t > 0)
    if (rlx__transports[t - 1]->prepare_sleep != NULL)
      rlx__transports[t - 1]->prepare_sleep(p, 0);
  return woke;
}

int rlx__p2p_in_memory(const struct rlx__p2p *p, int peer) {
  const struct rlx__card *me = &p->cards[p->rank], *them = &p->cards[peer];
  const struct rlx__transport_ops *tr =
      peer == p->rank ? rlx__transport_choose(p->forced, me, me) : p->peers[peer].tr;
  return tr->in_memory && rlx__transport_control(tr)->reaches(me, them);
}

int rlx__p2p_unsent(const struct rlx__p2p *p) {
  if (p->nwriting > 0)
    return 1;
  for (int i = 0; i < p->size; i++) {
    const struct rlx__p2p_peer *pe = &p->peers[i];
    if (pe->lost)
      continue;
    if (!rlx__list_empty(&pe->sendq) || (pe->conn && pe->conn->tr->unsent(pe->conn)))
      return 1;
  }
  return 0;
}

void rlx__p2p_close(struct rlx__p2p *p) {
  p->closing = 1;
  while (!rlx__list_empty(&p->conns)) {
    struct rlx__p2p_conn *c = rlx__container_of(p->conns.next, struct rlx__p2p_conn, link);
    if (c->peer >= 0 && (c->state == C_READY))
      rlx__peer_fail(p, c->peer, RLX_ERR_STATE, "finalized");
    else
      rlx__conn_close(c);
  }
  for (int i = 0; p->peers && i < p->size; i++)
    rlx__peer_fail(p, i, RLX_ERR_STATE, "finalized");
  for (int t = 0; t < RLX__TRANSPORTS_MAX; t++) {
    if (p->listeners[t].open)
      uv_close(&p->listeners[t].h.handle, NULL);
    p->listeners[t].open = 0;
  }
  if (p->sweep_open)
    uv_close((uv_handle_t *)&p->sweep, NULL);
  p->sweep_open = 0;
  if (p->cma_hold_open)
    uv_close((uv_handle_t *)&p->cma_hold, NULL);
  p->cma_hold_open = 0;
}

void rlx__p2p_free(struct rlx__p2p *p) {
#ifdef RLX_FAULT_INJECTION
  rlx__fault_free(); /* written by then: the connections are closed */
#endif
  for (int i = 0; p->peers && i < p->size; i++) {
    struct rlx__list *u = &p->peers[i].unexpected;
    while (!rlx__list_empty(u)) {
      struct rlx__list *l = u->next;
      rlx__list_remove(l);
      free(rlx__container_of(l, struct rlx__umsg, link));
    }
  }
  free(p->early_by_call); /* (its frames are freed above) */
  p->early_by_call = NULL;
  rlx__msg_free(p);
  rlx__pool_free(p);
  free(p->peers);
  free(p->polled);
  free(p->watch);
  p->peers = NULL;
  p->polled = NULL;
  p->watch = NULL;
}
