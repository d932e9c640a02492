/* Failure and mismatch bookkeeping for the executor (exec.c): a failed
 * transfer or a partner's other call turned into an error that names the
 * call and the ranks; ABORTs told to the members and taken from them,
 * including those that came before their operation started here; the
 * calls completed lately (for frames that come after their call), the
 * calls refused by their arguments, the communicators revoked. Every
 * table is process-wide and bounded, under the engine's loop lock (the
 * revoked table has a lock of its own: callers look at it off the loop). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "engine/engine.h"
#include "base/internal.h"
#include "coll.h"
#include "exec_internal.h"

/* ABORTs that came before their operation started here (bounded: an
 * ABORT for an operation already over is never claimed). */
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
atomic_int rlx__exec_nrevoked_any; /* (coll.h: every call's look) */
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

void rlx__exec_remember_done(const struct rlx__op *op) {
  unsigned d = ndone++ % DONE_MAX;
  done_ops[d].comm_id = op->comm_id;
  done_ops[d].seq = op->seq;
  done_ops[d].me = op->world ? op->world[op->rank] : -1;
  memcpy(done_ops[d].sig, op->sig, RLX__SIG_SIZE);
}

/* The settle time ran out and no ABORT came: the peer is simply lost. */
static void settle_expired(uv_timer_t *t) {
  struct rlx__op *op = t->data;
  op->status = op->settle_err;
  tell_members(op, -1);
  rlx__exec_finish(op, op->settle_err);
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
void rlx__exec_fail_mismatch(struct rlx__op *op, int from_world,
                             const uint8_t sig[RLX__SIG_SIZE]) {
  if (op->finished)
    return;
  mismatch_msg(op, comm_rank_of(op, from_world), sig);
  op->status = RLX_ERR_MISMATCH;
  tell_members(op, -1);
  rlx__exec_finish(op, RLX_ERR_MISMATCH);
}

void rlx__exec_on_early(void *ctx, int from, const struct rlx__frame_hdr *h) {
  for (struct rlx__list *l = rlx__exec_active.next; l != &rlx__exec_active; l = l->next) {
    struct rlx__op *op = rlx__container_of(l, struct rlx__op, active);
    if (op->comm_id == h->comm_id && op->seq == h->seq) {
      if (memcmp(op->sig, h->sig, RLX__SIG_SIZE) != 0)
        rlx__exec_fail_mismatch(op, from, h->sig);
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

void rlx__exec_fail_xfer(struct rlx__op *op, struct rlx__xfer *x) {
  char mine[160];
  int peer = -1;
  for (int r = 0; r < op->size; r++)
    if (op->world[r] == x->peer)
      peer = r;
  rlx__exec_describe(op, mine, sizeof(mine));
  switch (x->status) {
  case RLX_ERR_MISMATCH:
    if (memcmp(x->got.sig, op->sig, RLX__SIG_SIZE) == 0) /* the same call, another block size */
      snprintf(op->msg, sizeof(op->msg), "rank %d sent %llu bytes where rank %d expected %zu "
               "in %s: their counts for that block differ", peer,
               (unsigned long long)x->got.payload_len, op->rank, x->len, mine);
    else
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
    char me_s[48], peer_s[48], why_s[400];
    snprintf(op->msg, sizeof(op->msg), "%s lost %s during %s: %s",
             rlx__rank_name(op->world, op->rank, me_s, sizeof(me_s)),
             rlx__rank_name(op->world, peer, peer_s, sizeof(peer_s)), mine,
             why ? rlx__reason_in_world(op->world, op->size, why, why_s, sizeof(why_s))
                 : rlx_strerror(x->status));
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
  rlx__exec_finish(op, x->status);
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
  rlx__exec_finish(op, RLX_ERR_REVOKED);
}

/* An ABORT that came for op (or for an earlier call on its communicator,
 * which revokes it; or for the call that made it; or a revocation): take
 * it, fail op with it. Under the loop lock. */
int rlx__exec_take_early(struct rlx__op *op) {
  if (rlx__exec_revoked(op->comm_id, op->msg, sizeof(op->msg))) {
    rlx__exec_finish(op, RLX_ERR_REVOKED);
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
      rlx__exec_finish(op, err);
      return 1;
    }
  }
  return 0;
}

/* rlx__exec_claim_abort once an ABORT or a revocation came (out of line:
 * its check is every call's, this hardly any's) */
__attribute__((noinline)) static int claim_abort_locked(struct rlx__op *op,
                                                        struct rlx__engine *e) {
  rlx__engine_lock(e);
  int taken = !op->finished && rlx__exec_take_early(op);
  rlx__engine_unlock(e);
  return taken;
}

int rlx__exec_claim_abort(struct rlx__op *op, struct rlx__engine *e) {
  if (atomic_load_explicit(&nearly_any, memory_order_acquire) == 0 && !rlx__exec_any_revoked())
    return 0;
  return claim_abort_locked(op, e);
}

void rlx__exec_tell(struct rlx__op *op) { tell_members(op, -1); }

const char *rlx__rank_name(const int *world, int r, char *buf, size_t len) {
  if (world != NULL && r >= 0 && world[r] != r)
    snprintf(buf, len, "rank %d (world rank %d)", r, world[r]);
  else
    snprintf(buf, len, "rank %d", r);
  return buf;
}

const char *rlx__reason_in_world(const int *world, int size, const char *why, char *buf,
                                 size_t len) {
  int reordered = 0;
  for (int r = 0; world != NULL && r < size && !reordered; r++)
    reordered = world[r] != r;
  if (!reordered || len == 0)
    return why;
  size_t o = 0;
  for (const char *s = why; *s != '\0' && o + 1 < len; s++) {
    /* "rank " then a digit, not already "world rank " */
    if (strncmp(s, "rank ", 5) == 0 && s[5] >= '0' && s[5] <= '9' &&
        (s == why || s[-1] == ' ' || s[-1] == '(') && !(s - why >= 6 && strncmp(s - 6, "world ", 6) == 0))
      for (const char *w = "world "; *w != '\0' && o + 1 < len; w++)
        buf[o++] = *w;
    if (o + 1 < len)
      buf[o++] = *s;
  }
  buf[o] = '\0';
  return buf;
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
  rlx__exec_finish(op, err);
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
  if (!rlx__exec_any_revoked())
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
    atomic_store_explicit(&rlx__exec_nrevoked_any, nrevoked, memory_order_release);
  }
  pthread_mutex_unlock(&revoked_mtx);
  /* (finish takes an op off the list: look again from the start) */
  for (struct rlx__list *l = rlx__exec_active.next; l != &rlx__exec_active;) {
    struct rlx__op *op = rlx__container_of(l, struct rlx__op, active);
    l = l->next;
    if (op->comm_id != comm_id || op->finished)
      continue;
    snprintf(op->msg, sizeof(op->msg), "%s", reason);
    rlx__exec_finish(op, RLX_ERR_REVOKED);
    l = rlx__exec_active.next;
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
  for (struct rlx__list *l = rlx__exec_active.next; l != &rlx__exec_active; l = l->next) {
    struct rlx__op *op = rlx__container_of(l, struct rlx__op, active);
    if (op->comm_id != h->comm_id || op->seq != h->seq)
      continue;
    snprintf(op->msg, sizeof(op->msg), "%s", reason);
    op->status = err;
    tell_members(op, from);
    rlx__exec_finish(op, err);
    return;
  }
  /* Calls on communicators the failed call made (a split this rank
   * completed while the sender did not): it will not come to them. */
  for (struct rlx__list *l = rlx__exec_active.next; l != &rlx__exec_active;) {
    struct rlx__op *op = rlx__container_of(l, struct rlx__op, active);
    l = l->next;
    if (made_by(op, h->comm_id, h->seq) && !op->finished) {
      parent_failed(op, reason);
      l = rlx__exec_active.next; /* (finish took it off the list) */
    }
  }
  /* Not in flight here. If we are in a later call on that communicator,
   * we completed the failed one while the sender did not: it will not
   * come to this call (it is off to shrink, say), so fail ours now. */
  for (struct rlx__list *l = rlx__exec_active.next; l != &rlx__exec_active; l = l->next) {
    struct rlx__op *op = rlx__container_of(l, struct rlx__op, active);
    if (op->comm_id != h->comm_id || !same_space(op->seq, h->seq) || op->seq <= h->seq)
      continue;
    revoked_msg(op, h->seq, reason);
    op->status = RLX_ERR_REVOKED;
    tell_members(op, from);
    tell_earlier(op, h->seq, err, reason, from);
    rlx__exec_finish(op, RLX_ERR_REVOKED);
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
