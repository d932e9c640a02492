/* The round executor: drives any algorithm described as rounds of
 * concurrent transfers followed by local work (reduce, average, copy), and
 * turns transfer failures into errors that name the call and the ranks. */
#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "../engine.h"
#include "../internal.h"
#include "../observe.h"
#include "coll.h"
#include "shm_group.h"


void rlx__exec_describe(const struct rlx__op *op, char *buf, size_t len) {
  struct rlx__call c = {op->kind, (int)op->dt, (int)op->rop, op->root, op->count};
  rlx__call_describe(buf, len, op->call, &c);
}

/* Operations in flight, and ABORTs that came before their operation
 * started here (bounded: an ABORT for an operation already over is never
 * claimed). Both under the engine's loop lock. */
static struct rlx__list active_ops = {&active_ops, &active_ops};

int rlx__exec_in_flight(void) { return !rlx__list_empty(&active_ops); }
struct early_abort {
  uint32_t comm_id;
  uint64_t seq;
  int err;
  char reason[600];
};
#define EARLY_MAX 16
static struct early_abort early[EARLY_MAX];
static int nearly;
static atomic_int nearly_any; /* nearly, for a look without the lock */
/* Communicators revoked (rlx_comm_revoke): kept, the oldest forgotten
 * past REVOKED_MAX (a revoked communicator is shrunk or freed soon). */
#define REVOKED_MAX 16
static struct {
  uint32_t comm_id;
  char reason[600];
} revoked_comms[REVOKED_MAX];
static int nrevoked;
static atomic_int nrevoked_any;
static pthread_mutex_t revoked_mtx = PTHREAD_MUTEX_INITIALIZER; /* (readers off the loop) */

/* Tell every other member that this operation failed, and why. A member
 * that gets it fails its part at once instead of waiting for a deadline,
 * and tells the others in turn (ranks the first one cannot reach). */
void rlx__exec_abort_members(struct rlx__p2p *p, const int *world, int size, int me,
                             uint32_t comm_id, uint64_t seq, const uint8_t sig[RLX__SIG_SIZE],
                             int err, const char *why, int skip_world_rank) {
  for (int r = 0; r < size; r++)
    if (r != me && world[r] != skip_world_rank)
      rlx__p2p_abort(p, world[r], comm_id, seq, sig, err, why);
}

static void tell_members(struct rlx__op *op, int skip_world_rank) {
  rlx__exec_abort_members(op->p2p, op->world, op->size, op->rank, op->comm_id, op->seq, op->sig,
                          op->status, op->msg, skip_world_rank);
}

/* op is revoked for the failure of an earlier call (seq) on its
 * communicator: tell the members about that call too, with its own error
 * and reason, so a member still inside it (waiting on a rank that
 * finished its part of it and left, say) fails it now with the cause
 * rather than losing that rank. */
static void tell_earlier(struct rlx__op *op, uint64_t seq, int err, const char *reason,
                         int skip_world_rank) {
  static const uint8_t none[RLX__SIG_SIZE];
  rlx__exec_abort_members(op->p2p, op->world, op->size, op->rank, op->comm_id, seq, none, err,
                          reason, skip_world_rank);
}

static void settle_closed(uv_handle_t *h) { free(h); }

/* The calls completed here lately, for frames that come after their call
 * is over (a root whose bcast was done before the other root's frame came):
 * what this rank called at that seq. Under the loop lock. */
#define DONE_MAX 64
static struct {
  uint32_t comm_id;
  uint64_t seq;
  int me; /* our world rank */
  uint8_t sig[RLX__SIG_SIZE];
} done_ops[DONE_MAX];
static unsigned ndone;

static void finish(struct rlx__op *op, int status) {
  if (op->finished)
    return;
  if (op->nlanes > 0) { /* round-based: under the loop lock (a shared-memory
                           * call finishes on its own thread, and exchanges
                           * no frames to look back at) */
    unsigned d = ndone++ % DONE_MAX;
    done_ops[d].comm_id = op->comm_id;
    done_ops[d].seq = op->seq;
    done_ops[d].me = op->world ? op->world[op->rank] : -1;
    memcpy(done_ops[d].sig, op->sig, RLX__SIG_SIZE);
  }
  op->finished = 1;
  op->status = status;
  op->t_done = rlx__now_ns();
  if (op->settle) {
    uv_timer_stop(op->settle);
    uv_close((uv_handle_t *)op->settle, settle_closed);
    op->settle = NULL;
  }
  if (op->active.next != NULL) {
    rlx__list_remove(&op->active);
    op->active.next = op->active.prev = NULL;
  }
  for (int l = 0; l < op->nlanes; l++) {
    struct rlx__lane *ln = &op->lane[l];
    for (int i = 0; i < RLX__ROUND_MAX; i++) {
      if (ln->active[i]) {
        rlx__p2p_cancel(op->p2p, &ln->xf[i]);
        ln->active[i] = 0;
      }
    }
  }
  atomic_fetch_add(&op->progress, 1);
  if (op->on_done)
    op->on_done(op);
  /* (op is the caller's again once done is set: read nothing of it after) */
  struct rlx__engine *e = op->engine;
  atomic_store_explicit(&op->done, 1, memory_order_release);
  if (e != NULL) /* a caller sleeping until another drives */
    rlx__engine_notify(e);
}

/* The settle time ran out and no ABORT came: the peer is simply lost. */
static void settle_expired(uv_timer_t *t) {
  struct rlx__op *op = t->data;
  op->status = op->settle_err;
  tell_members(op, -1);
  finish(op, op->settle_err);
}

/* op->msg for a partner (comm rank peer) whose call had signature sig. */
static void mismatch_msg(struct rlx__op *op, int peer, const uint8_t sig[RLX__SIG_SIZE]) {
  char mine[160], theirs[160];
  struct rlx__call got;
  rlx__exec_describe(op, mine, sizeof(mine));
  rlx__call_decode(sig, &got);
  rlx__call_describe(theirs, sizeof(theirs), NULL, &got);
  snprintf(op->msg, sizeof(op->msg), "rank %d called %s where rank %d called %s", peer, theirs,
           op->rank, mine);
}

static int comm_rank_of(const struct rlx__op *op, int world_rank) {
  for (int r = 0; r < op->size; r++)
    if (op->world[r] == world_rank)
      return r;
  return -1;
}

/* A partner's frame for op carries another call: fail op (and tell the
 * others), whether or not a receive of ours lines up with the frame. */
static void fail_mismatch(struct rlx__op *op, int from_world, const uint8_t sig[RLX__SIG_SIZE]) {
  if (op->finished)
    return;
  mismatch_msg(op, comm_rank_of(op, from_world), sig);
  op->status = RLX_ERR_MISMATCH;
  tell_members(op, -1);
  finish(op, RLX_ERR_MISMATCH);
}

void rlx__exec_on_early(void *ctx, int from, const struct rlx__frame_hdr *h) {
  for (struct rlx__list *l = active_ops.next; l != &active_ops; l = l->next) {
    struct rlx__op *op = rlx__container_of(l, struct rlx__op, active);
    if (op->comm_id == h->comm_id && op->seq == h->seq) {
      if (memcmp(op->sig, h->sig, RLX__SIG_SIZE) != 0)
        fail_mismatch(op, from, h->sig);
      return;
    }
  }
  /* For a call completed here: if it was another call, the communicator
   * is revoked, as if the sender had sent an ABORT for it (the call in
   * flight after it fails now, or the next one at its start). */
  for (unsigned i = 0; i < DONE_MAX && i < ndone; i++) {
    if (done_ops[i].comm_id != h->comm_id || done_ops[i].seq != h->seq)
      continue;
    if (memcmp(done_ops[i].sig, h->sig, RLX__SIG_SIZE) == 0)
      return;
    struct rlx__call got, mine;
    char theirs[160], ours[160], why[400];
    rlx__call_decode(h->sig, &got);
    rlx__call_decode(done_ops[i].sig, &mine);
    rlx__call_describe(theirs, sizeof(theirs), NULL, &got);
    rlx__call_describe(ours, sizeof(ours), NULL, &mine);
    snprintf(why, sizeof(why), "world rank %d called %s where world rank %d called %s", from,
             theirs, done_ops[i].me, ours);
    rlx__exec_on_abort(ctx, from, h, RLX_ERR_MISMATCH, why);
    return;
  }
}

static void fail_from_xfer(struct rlx__op *op, struct rlx__xfer *x) {
  char mine[160];
  int peer = -1;
  for (int r = 0; r < op->size; r++)
    if (op->world[r] == x->peer)
      peer = r;
  rlx__exec_describe(op, mine, sizeof(mine));
  switch (x->status) {
  case RLX_ERR_MISMATCH:
    mismatch_msg(op, peer, x->got.sig);
    break;
  case RLX_ERR_CORRUPT:
    snprintf(op->msg, sizeof(op->msg),
             "rank %d received a corrupt frame from rank %d during %s (CRC32C mismatch)",
             op->rank, peer, mine);
    break;
  case RLX_ERR_SYS: /* this process's own shortage, named by the transport */
    snprintf(op->msg, sizeof(op->msg), "%s during %s", rlx__p2p_last_reason(op->p2p, x->peer),
             mine);
    break;
  case RLX_ERR_PEER_LOST:
  default: {
    if (op->settle)
      return; /* the first loss is the one we report */
    const char *why = rlx__p2p_lost_reason(op->p2p, x->peer);
    char me_s[48], peer_s[48];
    snprintf(op->msg, sizeof(op->msg), "%s lost %s during %s: %s",
             rlx__rank_name(op->world, op->rank, me_s, sizeof(me_s)),
             rlx__rank_name(op->world, peer, peer_s, sizeof(peer_s)), mine,
             why ? why : rlx_strerror(x->status));
    /* A peer that fails a call on purpose (a corrupt frame, a mismatch)
     * may have had to close our connection mid-frame; its ABORT, passed on
     * by the others, names the real cause. Give it 200 ms to arrive. */
    if (x->status == RLX_ERR_PEER_LOST && op->size > 2 &&
        (op->settle = malloc(sizeof(*op->settle))) != NULL) {
      uv_timer_init(op->p2p->loop, op->settle);
      op->settle->data = op;
      op->settle_err = x->status;
      uv_timer_start(op->settle, settle_expired, 200, 0);
      return;
    }
    break;
  }
  }
  /* Tell the others before finishing: finishing withdraws our transfers,
   * and withdrawing a send by reference closes that peer's connection
   * (it may still be reading our buffer), after which it could not hear
   * why. */
  op->status = x->status;
  tell_members(op, -1);
  finish(op, x->status);
}

static void advance(struct rlx__op *op, int l);

/* A lane's pending count while its round's transfers are being posted:
 * a transfer that completes during the posting (from its callback) then
 * cannot bring the count to zero and advance the lane under our feet. */
#define POSTING (1 << 20)

static int lane_of(const struct rlx__op *op, const struct rlx__xfer *x) {
  for (int l = 0; l < op->nlanes; l++)
    if (x >= op->lane[l].xf && x < op->lane[l].xf + RLX__ROUND_MAX)
      return l;
  return 0;
}

/* RLX_TRACE: how long this transfer of a round waited on its peer. */
static void trace_wait(const struct rlx__op *op, int l, int i) {
  const struct rlx__lane *ln = &op->lane[l];
  char name[48], args[128];
  snprintf(name, sizeof(name), "%s rank %d", ln->round.x[i].send ? "send to" : "recv from",
           ln->round.x[i].peer);
  snprintf(args, sizeof(args), "\"comm\":%u,\"seq\":%llu,\"round\":%d,\"bytes\":%zu,\"ok\":%d",
           op->comm_id, (unsigned long long)op->seq, ln->k, ln->round.x[i].len,
           ln->xf[i].status == RLX_OK);
  rlx__trace_span(RLX__TRACK_XFER(l, i), "wait", name, ln->posted[i], rlx__now_ns(), args);
}

static void xfer_done(struct rlx__xfer *x) {
  struct rlx__op *op = x->owner;
  int l = lane_of(op, x);
  struct rlx__lane *ln = &op->lane[l];
  ln->active[x - ln->xf] = 0;
  if (RLX__TRACING() && ln->posted[x - ln->xf] && !(op->seq & RLX__SEQ_INTERNAL))
    trace_wait(op, l, (int)(x - ln->xf));
  if (op->finished)
    return;
  assert(ln->pending > 0 && !ln->finished);
  if (x->status != RLX_OK) {
    fail_from_xfer(op, x);
    return;
  }
  int slot = (int)(x - ln->xf), from = ln->round.x[slot].peer;
  if (!ln->round.x[slot].send && from >= 0 && from < 256)
    op->heard[from / 8] |= (uint8_t)(1u << (from % 8));
  atomic_fetch_add_explicit(&op->progress, 1, memory_order_relaxed);
  if (--ln->pending == 0)
    advance(op, l);
}

/* Run lane l forward until it waits on a transfer or has no more rounds. */
static void advance(struct rlx__op *op, int l) {
  struct rlx__lane *ln = &op->lane[l];
  for (;;) {
    if (op->finished || ln->finished)
      return;
    if (ln->k >= 0)
      rlx__round_work(op, &ln->round);
    ln->k++;
    memset(&ln->round, 0, sizeof(ln->round));
    if (!op->algo->round(op, l, ln->k, &ln->round)) {
      ln->finished = 1;
      if (--op->lanes_left == 0)
        finish(op, RLX_OK);
      return;
    }
    int pending = 0;
    assert(ln->round.n >= 0 && ln->round.n <= RLX__ROUND_MAX);
    ln->pending = POSTING;
    uint64_t t_post = RLX__TRACING() && l < RLX__LANES_MAX ? rlx__now_ns() : 0;
    for (int i = 0; i < ln->round.n; i++) {
      struct rlx__xfer *x = &ln->xf[i];
      ln->posted[i] = t_post;
      memset(&x->hdr, 0, sizeof(x->hdr));
      x->peer = op->world[ln->round.x[i].peer];
      memcpy(x->hdr.sig, op->sig, RLX__SIG_SIZE);
      x->hdr.comm_id = op->comm_id;
      x->hdr.seq = op->seq;
      /* unique within the operation: lanes interleave their rounds */
      x->hdr.segment = (uint32_t)(ln->k * op->nlanes + l);
      x->buf = ln->round.x[i].buf;
      x->len = ln->round.x[i].len;
      x->cb = xfer_done;
      x->owner = op;
      x->status = RLX_OK;
      int now = ln->round.x[i].send ? rlx__p2p_send(op->p2p, x) : rlx__p2p_recv(op->p2p, x);
      if (now) {
        if (x->status != RLX_OK) {
          fail_from_xfer(op, x);
          return;
        }
      } else {
        ln->active[i] = 1;
        pending++;
      }
    }
    ln->pending = pending;
    if (pending > 0)
      return;
  }
}

/* op comes after call #seq on its communicator, which another member
 * failed after this rank had completed it. */
static void revoked_msg(struct rlx__op *op, uint64_t seq, const char *reason) {
  char mine[160];
  rlx__exec_describe(op, mine, sizeof(mine));
  snprintf(op->msg, sizeof(op->msg),
           "%s on rank %d: the communicator is revoked: call #%llu, which this rank had "
           "completed, failed elsewhere: %s", mine, op->rank, (unsigned long long)seq, reason);
}

/* The library's own calls (making a shared segment) count apart from the
 * program's: an ABORT for one of the program's calls is not news to them,
 * and waits for the program's next call. */
static int same_space(uint64_t a, uint64_t b) {
  return (a & RLX__SEQ_INTERNAL) == (b & RLX__SEQ_INTERNAL);
}

/* An ABORT for the call that made op's communicator: a member that failed
 * it never comes to this one. Under the loop lock. */
static int made_by(const struct rlx__op *op, uint32_t comm_id, uint64_t seq) {
  return op->parent_seq != 0 && op->parent_comm == comm_id && op->parent_seq == seq + 1;
}

static void parent_failed(struct rlx__op *op, const char *reason) {
  char mine[160];
  rlx__exec_describe(op, mine, sizeof(mine));
  snprintf(op->msg, sizeof(op->msg),
           "%s on rank %d: the rlx_comm_split that made this communicator failed on another "
           "member, which will not come: %.300s", mine, op->rank, reason);
  finish(op, RLX_ERR_REVOKED);
}

/* An ABORT that came for op (or for an earlier call on its communicator,
 * which revokes it; or for the call that made it; or a revocation): take
 * it, fail op with it. Under the loop lock. */
static int take_early(struct rlx__op *op) {
  if (rlx__exec_revoked(op->comm_id, op->msg, sizeof(op->msg))) {
    finish(op, RLX_ERR_REVOKED);
    return 1;
  }
  for (int i = 0; i < nearly; i++)
    if (made_by(op, early[i].comm_id, early[i].seq)) { /* (kept: the parent's next call wants it) */
      parent_failed(op, early[i].reason);
      return 1;
    }
  for (int i = 0; i < nearly; i++) {
    if (early[i].comm_id == op->comm_id && same_space(early[i].seq, op->seq) &&
        early[i].seq <= op->seq) {
      /* A member failed this operation before we entered it; or failed
       * an earlier one that we had completed: the communicator is
       * revoked for us too. */
      int err = early[i].err;
      if (early[i].seq == op->seq) {
        snprintf(op->msg, sizeof(op->msg), "%s", early[i].reason);
      } else {
        revoked_msg(op, early[i].seq, early[i].reason);
        tell_earlier(op, early[i].seq, early[i].err, early[i].reason, -1);
        err = RLX_ERR_REVOKED;
      }
      early[i] = early[--nearly];
      atomic_store(&nearly_any, nearly);
      finish(op, err);
      return 1;
    }
  }
  return 0;
}

void rlx__exec_sign(struct rlx__op *op) {
  struct rlx__call call = {op->kind, (int)op->dt, (int)op->rop, op->root, op->count};
  rlx__call_encode(&call, op->sig);
}

/* What every operation does first: its signature, its outcome cleared. */
static void ready(struct rlx__op *op) {
  rlx__exec_sign(op);
  op->finished = 0;
  op->status = RLX_OK;
  op->msg[0] = '\0';
  op->active.next = op->active.prev = NULL;
  op->settle = NULL;
  memset(op->heard, 0, sizeof(op->heard));
  atomic_store(&op->done, 0);
}

void rlx__exec_start(struct rlx__op *op) {
  if (op->nlanes < 1 || op->nlanes > RLX__LANES_MAX)
    op->nlanes = 1;
  ready(op);
  /* only the lanes it uses (each 2 KiB: all four were a tenth of a small
   * call's own time) */
  memset(op->lane, 0, sizeof(op->lane[0]) * (size_t)op->nlanes);
  if (take_early(op))
    return;
  rlx__list_push(&active_ops, &op->active);
  struct rlx__frame_hdr early_h;
  int from = rlx__p2p_early_mismatch(op->p2p, op->comm_id, op->seq, op->sig, &early_h);
  if (from >= 0) { /* a partner called something else and sent first */
    fail_mismatch(op, from, early_h.sig);
    return;
  }
  op->lanes_left = op->nlanes;
  for (int l = 0; l < op->nlanes; l++)
    op->lane[l].k = -1;
  for (int l = 0; l < op->nlanes && !op->finished; l++)
    advance(op, l);
}

int rlx__exec_begin(struct rlx__op *op, struct rlx__engine *e) {
  op->nlanes = 0; /* no transfers of ours to withdraw */
  op->lanes_left = 0;
  ready(op);
  return rlx__exec_claim_abort(op, e);
}

int rlx__exec_claim_abort(struct rlx__op *op, struct rlx__engine *e) {
  if (atomic_load_explicit(&nearly_any, memory_order_acquire) == 0 &&
      atomic_load_explicit(&nrevoked_any, memory_order_acquire) == 0)
    return 0;
  rlx__engine_lock(e);
  int taken = !op->finished && take_early(op);
  rlx__engine_unlock(e);
  return taken;
}

void rlx__exec_tell(struct rlx__op *op) { tell_members(op, -1); }

const char *rlx__rank_name(const int *world, int r, char *buf, size_t len) {
  if (world != NULL && r >= 0 && world[r] != r)
    snprintf(buf, len, "rank %d (world rank %d)", r, world[r]);
  else
    snprintf(buf, len, "rank %d", r);
  return buf;
}

void rlx__exec_end(struct rlx__op *op, int status, const char *msg) {
  if (op->finished)
    return;
  if (msg != NULL)
    snprintf(op->msg, sizeof(op->msg), "%s", msg);
  finish(op, status);
}

void rlx__exec_abort(struct rlx__op *op, int err, const char *msg) {
  if (op->finished)
    return;
  if (op->settle) {
    /* A peer was lost and we were giving its ABORT 200 ms to arrive: the
     * loss, already described in op->msg, names the cause better than the
     * deadline that came meanwhile ("waiting for its own progress"). */
    settle_expired(op->settle);
    return;
  }
  snprintf(op->msg, sizeof(op->msg), "%s", msg);
  finish(op, err);
  /* The others hear of it: a rank whose limit is later (its own
   * rlx_comm_set_timeout, or a late start) must not complete the call this
   * rank gave up on, nor wait out its own limit for it; the message names
   * the rank this one waited for. */
  tell_members(op, -1);
}

/* Calls this rank refused by their arguments (rlx__refused): an ABORT for
 * one of them is the same refusal elsewhere, not news. */
#define REFUSED_MAX 16
static struct {
  uint32_t comm_id;
  uint64_t seq;
} refused[REFUSED_MAX];
static unsigned nrefused;

void rlx__exec_refused(uint32_t comm_id, uint64_t seq) {
  refused[nrefused % REFUSED_MAX].comm_id = comm_id;
  refused[nrefused % REFUSED_MAX].seq = seq;
  nrefused++;
  for (int i = 0; i < nearly;) { /* ABORTs for it that came first */
    if (early[i].comm_id == comm_id && early[i].seq == seq)
      early[i] = early[--nearly];
    else
      i++;
  }
  atomic_store(&nearly_any, nearly);
}

int rlx__exec_revoked(uint32_t comm_id, char *buf, size_t len) {
  if (atomic_load_explicit(&nrevoked_any, memory_order_acquire) == 0)
    return 0;
  int found = 0;
  pthread_mutex_lock(&revoked_mtx);
  for (int i = 0; i < nrevoked && !found; i++)
    if (revoked_comms[i].comm_id == comm_id) {
      found = 1;
      if (buf != NULL)
        snprintf(buf, len, "%s", revoked_comms[i].reason);
    }
  pthread_mutex_unlock(&revoked_mtx);
  return found;
}

void rlx__exec_revoke(uint32_t comm_id, const char *reason) {
  pthread_mutex_lock(&revoked_mtx);
  int known = 0;
  for (int i = 0; i < nrevoked; i++)
    known |= revoked_comms[i].comm_id == comm_id;
  if (!known) {
    if (nrevoked == REVOKED_MAX) /* forget the oldest */
      memmove(revoked_comms, revoked_comms + 1, sizeof(revoked_comms[0]) * (REVOKED_MAX - 1)),
          nrevoked--;
    revoked_comms[nrevoked].comm_id = comm_id;
    snprintf(revoked_comms[nrevoked].reason, sizeof(revoked_comms[0].reason), "%s", reason);
    nrevoked++;
    atomic_store_explicit(&nrevoked_any, nrevoked, memory_order_release);
  }
  pthread_mutex_unlock(&revoked_mtx);
  /* (finish takes an op off the list: look again from the start) */
  for (struct rlx__list *l = active_ops.next; l != &active_ops;) {
    struct rlx__op *op = rlx__container_of(l, struct rlx__op, active);
    l = l->next;
    if (op->comm_id != comm_id || op->finished)
      continue;
    snprintf(op->msg, sizeof(op->msg), "%s", reason);
    finish(op, RLX_ERR_REVOKED);
    l = active_ops.next;
  }
}

void rlx__exec_on_abort(void *ctx, int from, const struct rlx__frame_hdr *h, int err,
                        const char *reason) {
  (void)ctx;
  if (h->seq == RLX__SEQ_REVOKE) { /* a member revoked the communicator (it told every one) */
    rlx__exec_revoke(h->comm_id, reason);
    return;
  }
  for (unsigned i = 0; i < nrefused && i < REFUSED_MAX; i++)
    if (refused[i].comm_id == h->comm_id && refused[i].seq == h->seq)
      return;
  if (err >= 0 || err < RLX_ERR_INTERRUPTED)
    err = RLX_ERR_PEER_LOST; /* not an error code we know: still a failure */
  for (struct rlx__list *l = active_ops.next; l != &active_ops; l = l->next) {
    struct rlx__op *op = rlx__container_of(l, struct rlx__op, active);
    if (op->comm_id != h->comm_id || op->seq != h->seq)
      continue;
    snprintf(op->msg, sizeof(op->msg), "%s", reason);
    op->status = err;
    tell_members(op, from);
    finish(op, err);
    return;
  }
  /* Calls on communicators the failed call made (a split this rank
   * completed while the sender did not): it will not come to them. */
  for (struct rlx__list *l = active_ops.next; l != &active_ops;) {
    struct rlx__op *op = rlx__container_of(l, struct rlx__op, active);
    l = l->next;
    if (made_by(op, h->comm_id, h->seq) && !op->finished) {
      parent_failed(op, reason);
      l = active_ops.next; /* (finish took it off the list) */
    }
  }
  /* Not in flight here. If we are in a later call on that communicator,
   * we completed the failed one while the sender did not: it will not
   * come to this call (it is off to shrink, say), so fail ours now. */
  for (struct rlx__list *l = active_ops.next; l != &active_ops; l = l->next) {
    struct rlx__op *op = rlx__container_of(l, struct rlx__op, active);
    if (op->comm_id != h->comm_id || !same_space(op->seq, h->seq) || op->seq <= h->seq)
      continue;
    revoked_msg(op, h->seq, reason);
    op->status = RLX_ERR_REVOKED;
    tell_members(op, from);
    tell_earlier(op, h->seq, err, reason, from);
    finish(op, RLX_ERR_REVOKED);
    return;
  }
  for (int i = 0; i < nearly; i++)
    if (early[i].comm_id == h->comm_id && early[i].seq == h->seq)
      return;
  if (nearly == EARLY_MAX) /* forget the oldest */
    memmove(early, early + 1, sizeof(early[0]) * (EARLY_MAX - 1)), nearly--;
  early[nearly].comm_id = h->comm_id;
  early[nearly].seq = h->seq;
  early[nearly].err = err;
  snprintf(early[nearly].reason, sizeof(early[nearly].reason), "%s", reason);
  nearly++;
  atomic_store_explicit(&nearly_any, nearly, memory_order_release);
}

void rlx__exec_waiting_for(uint32_t comm_id, uint64_t seq, char *buf, size_t len) {
  buf[0] = '\0';
  for (struct rlx__list *l = active_ops.next; l != &active_ops; l = l->next) {
    struct rlx__op *op = rlx__container_of(l, struct rlx__op, active);
    if (op->comm_id == comm_id && op->seq == seq) {
      rlx__exec_waiting_on(op, buf, len);
      return;
    }
  }
  rlx__shmg_waiting_for(comm_id, seq, buf, len); /* a call in a shared segment */
}

void rlx__exec_waiting_on(const struct rlx__op *op, char *buf, size_t len) {
  size_t used = 0;
  buf[0] = '\0';
  for (int l = 0; l < op->nlanes; l++) {
    const struct rlx__lane *ln = &op->lane[l];
    for (int i = 0; i < ln->round.n && i < RLX__ROUND_MAX; i++) {
      if (!ln->active[i])
        continue;
      int peer = ln->round.x[i].peer;
      int heard = peer >= 0 && peer < 256 && (op->heard[peer / 8] & (1u << (peer % 8)));
      /* Nothing at all from it in this call means it has not entered the
       * call, or waits in it on someone else; which one, only that rank
       * knows: the flight recorder (rlxrun's table) says. */
      int n = snprintf(buf + used, len - used, "%srank %d (%s)", used ? ", " : "", peer,
                       ln->round.x[i].send ? "not reading what we send"
                       : heard || peer >= 256 ? "nothing received for this step"
                                              : "nothing received from it in this call");
      if (n < 0 || (size_t)n >= len - used)
        return;
      used += (size_t)n;
    }
  }
}
