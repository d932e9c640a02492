/* Steps of a collective in a communicator's shared segment: publish a
 * step, wait for the others' steps. The caller's thread waits on the
 * other ranks' counters directly: no lock, no syscall while ranks fit the
 * cores (it yields between looks when they do not); past the spin budget
 * it sleeps on the segment's futex, which a publisher rings only when
 * someone sleeps. The progress thread keeps the connections alive
 * meanwhile: a lost member fails the segment (shm_group.c), an ABORT
 * waits for the call in exec.c; every 64 looks the waiter checks both,
 * and its deadline. */
#include <limits.h>
#include <linux/futex.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include "engine/engine.h"
#include "base/internal.h"
#include "base/prefetch.h"
#include "transport/p2p.h"
#include "observe/observe.h"
#include "coll.h"
#include "shm_group.h"
#include "base/copy.h"

enum { ARRIVE, REDUCED, FED, TAKEN };
/* what a rank waited for has not done (describe_wait), and what is
 * waited for (trace_wait) */
static const char *const not_done[] = {"has not arrived", "has not reduced its slice",
                                       "has not fed its block", "has not taken our block"};
static const char *const waited[] = {"data of", "slice of", "block of", "taking by"};

void rlx__shmg_wake(struct rlx__shm_group *g) {
  atomic_fetch_add(&g->hdr->bell, 1);
  syscall(SYS_futex, &g->hdr->bell, FUTEX_WAKE, INT_MAX, NULL, NULL, 0);
}

void rlx__shmg_publish(struct rlx__shm_group *g, _Atomic uint64_t *w, uint64_t step) {
  if (g->engine->yield) {
    /* Ranks outnumber cores: waiters sleep often. Sequentially consistent,
     * so the look at sleepers cannot pass the store, and a waiter that
     * counted itself in and then missed the step is always rung. */
    atomic_store(w, step);
    if (atomic_load(&g->hdr->sleepers) != 0)
      rlx__shmg_wake(g);
    return;
  }
  /* Ranks fit the cores: waiters spin, and sleep only past the spin budget
   * (20 ms by default). A release store lets this rank go on to its own
   * wait while the line travels (a locked store would stall here for it);
   * the price is that a waiter that went to sleep in the instant before
   * the store was seen may sleep out its 20 ms futex timeout, after having
   * waited that long already. */
  atomic_store_explicit(w, step, memory_order_release);
  if (atomic_load_explicit(&g->hdr->sleepers, memory_order_relaxed) != 0)
    rlx__shmg_wake(g);
}

int rlx__shmg_post(struct rlx__shm_group *g, struct rlx__op *op, uint64_t step, const void *src,
                   size_t len, size_t bytes) {
  int rc = bytes <= RLX__SHMG_SPILL ? rlx__shmg_wait_cell_room(g, op, step)
                                     : rlx__shmg_wait_room(g, op, step);
  if (rc != RLX_OK)
    return rc;
  rlx__copy(rlx__shmg_data(g, g->me, step, bytes), src, len);
  if (rlx__shmg_in_spill(bytes))
    g->spill_used = len;
  rlx__shmg_arrive(g, step);
  return RLX_OK;
}

/* The call's first step into its cell (rlx__shmg_begin left it due),
 * right before the arrival that lets the others read it. */
static void publish_first(struct rlx__shm_group *g) {
  atomic_store_explicit(&rlx__shmg_cell(g, g->me, g->first)->first, g->first,
                        memory_order_release);
  g->first_due = 0;
}

void rlx__shmg_arrive(struct rlx__shm_group *g, uint64_t step) {
  if (g->first_due)
    publish_first(g);
  rlx__shmg_publish(g, &rlx__shmg_cell(g, g->me, step)->arrive, step);
  /* This rank's next cell, asked for now (base/prefetch.h): the others
   * read it RLX__SHMG_CELLS steps ago, and the next call's stores, to its
   * own stack, stalled behind the first store to it every call. Asked
   * for here, the line travels while this call ends and the next begins
   * (2 ranks, 8-byte gathers: 0.20 -> 0.10 us a call). */
  const char *next = (const char *)rlx__shmg_cell(g, g->me, step + 1);
  rlx__prefetch_write(next);
  rlx__prefetch_write(next + 64);
  /* and as much of the next spill area as this step's data took there
   * (a loop's next call is mostly of the same size) */
  const unsigned char *spill = g->line[g->me].spill[(step + 1) & (RLX__SHMG_CELLS - 1)];
  for (size_t at = 0; at < g->spill_used; at += 64)
    rlx__prefetch_write(spill + at);
  g->spill_used = 0;
}

void rlx__shmg_reduced(struct rlx__shm_group *g, uint64_t step) {
  rlx__shmg_publish(g, &g->line[g->me].reduced, step);
}

/* A signature beside the step it holds from (a cell's first step, a
 * line's sig_from), as a seqlock: the step is 0 while the signature
 * changes. sig_open is the writer's first half; the writer stores the
 * step (release) when the others may read it. */
static void sig_open(_Atomic uint64_t *step, _Atomic uint64_t sig[2], const uint64_t s[2]) {
  atomic_store_explicit(step, 0, memory_order_relaxed);
  /* (release stores: a reader that sees either new word sees the 0 too;
   * a release fence would do, but ThreadSanitizer's GCC refuses fences) */
  atomic_store_explicit(&sig[0], s[0], memory_order_release);
  atomic_store_explicit(&sig[1], s[1], memory_order_release);
}

/* The reader's: the step and the signature (s) read as one; 0 while it
 * changes (or before it was ever written). The signature's acquire loads
 * keep the second look at the step after them, as a fence would. */
static uint64_t sig_read(_Atomic uint64_t *step, _Atomic uint64_t sig[2], uint64_t s[2]) {
  uint64_t f = atomic_load_explicit(step, memory_order_acquire);
  s[0] = atomic_load_explicit(&sig[0], memory_order_acquire);
  s[1] = atomic_load_explicit(&sig[1], memory_order_acquire);
  return atomic_load_explicit(step, memory_order_relaxed) == f ? f : 0;
}

static int settle(struct rlx__shm_group *g, struct rlx__op *op, uint64_t upto);
static int wait_for(struct rlx__shm_group *g, struct rlx__op *op, int which, int r,
                    uint64_t step, int calls);

int rlx__shmg_begin(struct rlx__shm_group *g, struct rlx__op *op) {
  uint64_t sig[2];
  memcpy(sig, op->sig, sizeof(sig));
  if (g->first_due) /* (a call that never arrived) */
    publish_first(g);
  g->first = g->step + 1;
  g->lost_seen = 0;
  g->sig[0] = sig[0];
  g->sig[1] = sig[1];
  /* What this rank owes is settled before it writes a cell an owed call
   * began in, and before a call unlike the last it owes: a loop of small
   * broadcasts from one root runs up to RLX__SHMG_CELLS - 1 calls ahead
   * (its comparisons, one line of each rank per call, then come together),
   * and a mismatch is named by the next call of another kind. */
  int rc;
  if (g->owing) {
    const struct rlx__shmg_owed *last = &g->owed[g->owed_last & (RLX__SHMG_CELLS - 1)];
    uint64_t cell = g->owed[g->first & (RLX__SHMG_CELLS - 1)].first, upto = cell;
    if (last->first == 0 || last->sig[0] != sig[0] || last->sig[1] != sig[1])
      upto = g->owed_last; /* (not the last owed's cell alone: the ranks behind catch up) */
    if (upto != 0 && (rc = settle(g, op, upto)) != 0)
      return rc;
  }
  if (sig[0] != g->run_sig[0] || sig[1] != g->run_sig[1]) {
    struct rlx__shmg_line *l = &g->line[g->me];
    sig_open(&l->sig_from, l->sig_run, sig);
    atomic_store_explicit(&l->sig_from, g->first, memory_order_release);
    g->run_sig[0] = sig[0];
    g->run_sig[1] = sig[1];
  }
  /* in the cell of the call's first step; a seqlock: first is 0 while the
   * signature changes (check_call). first itself is stored with the
   * call's first arrival (rlx__shmg_arrive): the ranks waiting for that
   * poll the line, and each store to it apart took the line back from
   * them (a 2-rank scatter's root stored first, its data and its arrival
   * there, three transfers of the line a call instead of one). */
  struct rlx__shmg_cell *c = rlx__shmg_cell(g, g->me, g->first);
  uint64_t *mine = g->cell_sig[g->first & (RLX__SHMG_CELLS - 1)];
  if (mine[0] != sig[0] || mine[1] != sig[1]) {
    sig_open(&c->first, c->sig, sig);
    mine[0] = sig[0];
    mine[1] = sig[1];
  }
  g->first_due = 1;
  return RLX_OK;
}

void rlx__shmg_owe(struct rlx__shm_group *g, const struct rlx__op *op) {
  if (g->step < g->first)
    return; /* (it took no step: nothing posted, nobody to compare with) */
  struct rlx__shmg_owed *o = &g->owed[g->first & (RLX__SHMG_CELLS - 1)];
  if (g->owing == 0)
    g->owed_next = g->first;
  o->first = g->first; /* (begin settled what the cell owed before) */
  o->seq = op->seq;
  o->sig[0] = g->sig[0];
  o->sig[1] = g->sig[1];
  g->owed_last = g->first;
  g->owing++;
}

/* The counter of rank r's that says whether it did it (for TAKEN, r the
 * root: it writes the count in this rank's line). */
static _Atomic uint64_t *field(struct rlx__shm_group *g, int which, int r, uint64_t step) {
  switch (which) {
  case ARRIVE: return &rlx__shmg_cell(g, r, step)->arrive;
  case REDUCED: return &g->line[r].reduced;
  case FED: return &g->line[r].fed;
  default: return &g->line[g->me].taken;
  }
}

/* Has rank r (every rank from *from on, for r < 0) reached step? */
static int reached(struct rlx__shm_group *g, int which, int r, uint64_t step, int *from) {
  if (r >= 0)
    return atomic_load_explicit(field(g, which, r, step), memory_order_acquire) >= step;
  for (; *from < g->n; (*from)++)
    if (*from != g->me &&
        atomic_load_explicit(field(g, which, *from, step), memory_order_acquire) < step)
      return 0;
  return 1;
}

/* End the call with err; the error it ended with (an ABORT claimed
 * first keeps its own). */
static int end_call(struct rlx__op *op, int err, const char *msg) {
  rlx__exec_end(op, err, msg);
  return op->status;
}

static void describe_sig(const uint64_t s[2], char *buf, size_t len) {
  uint8_t sig[RLX__SIG_SIZE];
  struct rlx__call got;
  memcpy(sig, s, sizeof(sig));
  rlx__call_decode(sig, &got);
  rlx__call_describe(buf, len, NULL, &got);
}

/* Does rank r's call that began at step first differ from sig? Then
 * theirs is its signature. Not when r has moved past it (then r
 * compared). Inline: the look every call of a small call's receivers
 * makes (a call of its own was ~60 of a 2-rank 8-byte scatterv
 * receiver's ~1,000 instructions). */
static inline int cell_differs(struct rlx__shm_group *g, int r, uint64_t first,
                               const uint64_t sig[2], uint64_t theirs[2]) {
  struct rlx__shmg_cell *l = rlx__shmg_cell(g, r, first);
  uint64_t f = sig_read(&l->first, l->sig, theirs);
  /* r past our call (or starting its next one: first 0) compared itself */
  if (f == 0 || f > first)
    return 0;
  /* A call with other arguments, or one that began before ours and is
   * still going (it takes more steps): either way not ours. */
  return !(f == first && theirs[0] == sig[0] && theirs[1] == sig[1]);
}

/* cell_differs, with what r called described in theirs. */
static int call_differs(struct rlx__shm_group *g, int r, uint64_t first, const uint64_t sig[2],
                        char *theirs, size_t len) {
  uint64_t s[2];
  if (!cell_differs(g, r, first, sig, s))
    return 0;
  describe_sig(s, theirs, len);
  return 1;
}

/* A line's run (every call from step f on had signature s) covers a
 * call at step first with signature sig. */
static int run_covers(uint64_t f, const uint64_t s[2], uint64_t first, const uint64_t sig[2]) {
  return f != 0 && f <= first && s[0] == sig[0] && s[1] == sig[1];
}
/* Did rank r, arrived at step first or past it, call sig there? Known
 * from its line when every call it began since a step up to first had
 * that signature (1); else (0) its cell says. */
static int run_matches(struct rlx__shm_group *g, int r, uint64_t first, const uint64_t sig[2]) {
  struct rlx__shmg_line *l = &g->line[r];
  uint64_t s[2], f = sig_read(&l->sig_from, l->sig_run, s);
  return run_covers(f, s, first, sig);
}

/* run_matches over the calls one settle walks: each rank's line read once
 * (up to 16 ranks; the line holds for every call r began before the
 * read, and every call walked began before it), not once a call (a
 * 2-rank scatterv's root walks one call a step). */
struct runs {
  uint32_t have; /* bit r: run[r] read */
  struct {
    uint64_t from, sig[2];
  } run[16];
};
static int run_matches_seen(struct rlx__shm_group *g, struct runs *rs, int r, uint64_t first,
                            const uint64_t sig[2]) {
  if (r >= 16)
    return run_matches(g, r, first, sig);
  if (!(rs->have & (1u << r))) {
    struct rlx__shmg_line *l = &g->line[r];
    rs->run[r].from = sig_read(&l->sig_from, l->sig_run, rs->run[r].sig);
    rs->have |= 1u << r;
  }
  return run_covers(rs->run[r].from, rs->run[r].sig, first, sig);
}

/* Rank r's call (signature theirs) differs from ours: fail the call and
 * the segment, naming both (out of line: its messages' buffers). */
__attribute__((noinline)) static int call_mismatch(struct rlx__shm_group *g, struct rlx__op *op,
                                                   int r, const uint64_t theirs[2]) {
  char mine[160], them[160], msg[600];
  describe_sig(theirs, them, sizeof(them));
  rlx__exec_describe(op, mine, sizeof(mine));
  snprintf(msg, sizeof(msg), "rank %d called %s where rank %d called %s", r, them, g->me, mine);
  rlx__shmg_fail(g, RLX_ERR_MISMATCH, -1, op->seq, msg);
  return end_call(op, RLX_ERR_MISMATCH, msg);
}

/* Rank r's call, if it differs from ours; 0 when it matches, or r has
 * moved past ours. */
static inline int check_call(struct rlx__shm_group *g, struct rlx__op *op, int r) {
  uint64_t theirs[2];
  return cell_differs(g, r, g->first, g->sig, theirs) ? call_mismatch(g, op, r, theirs) : 0;
}

#define SETTLE_NS (200ull * 1000ull * 1000ull)

/* The segment failed (a member lost, a mismatch seen elsewhere), or an
 * ABORT ended the call: its error, else 0. */
static int check_failed(struct rlx__shm_group *g, struct rlx__op *op) {
  if (rlx__exec_claim_abort(op, g->engine))
    return op->status;
  if (!atomic_load_explicit(&g->hdr->failed, memory_order_acquire))
    return 0;
  char mine[160], msg[1024];
  rlx__exec_describe(op, mine, sizeof(mine));
  int err = g->hdr->err, lost = g->hdr->lost;
  uint64_t seq = g->hdr->seq;
  if (err >= 0 || err < RLX_ERR_INTERRUPTED)
    err = RLX_ERR_PEER_LOST;
  /* A member gone may have left on purpose, after failing this call for
   * a reason its ABORT (or one passed on by the others) is bringing us:
   * give that 200 ms to come, as point-to-point calls do (exec.c). */
  if (err == RLX_ERR_PEER_LOST && seq >= op->seq && g->n > 2) {
    uint64_t now = rlx__now_ns();
    if (g->lost_seen == 0)
      g->lost_seen = now;
    if (now - g->lost_seen < SETTLE_NS)
      return 0;
  }
  if (err == RLX_ERR_PEER_LOST && lost >= 0 && lost < g->n) {
    /* Another member saw it go: so does our transport now, before its own
     * socket says so, and rlx_comm_shrink starts from the same view on
     * every survivor. */
    rlx__engine_lock(g->engine);
    char why[160];
    snprintf(why, sizeof(why), "%.150s", g->hdr->why); /* (another process wrote it) */
    if (rlx__p2p_lost_reason(g->p2p, g->world[lost]) == NULL)
      rlx__p2p_mark_lost(g->p2p, g->world[lost], 1, why); /* (certain or not: its own view says) */
    rlx__engine_unlock(g->engine);
  }
  if (seq < op->seq) {
    /* a call this rank had completed failed on another: revoked */
    err = RLX_ERR_REVOKED;
    snprintf(msg, sizeof(msg),
             "%s on rank %d: the communicator is revoked: call #%llu, which this rank had "
             "completed, failed elsewhere: %.600s",
             mine, g->me, (unsigned long long)seq, g->hdr->why);
  } else if (err == RLX_ERR_PEER_LOST && lost >= 0 && lost < g->n) {
    char me_s[48], lost_s[48], why[600], why_s[700];
    snprintf(why, sizeof why, "%.599s", g->hdr->why); /* (another process writes it) */
    snprintf(msg, sizeof(msg), "%s lost %s during %s: %.600s",
             rlx__rank_name(g->world, g->me, me_s, sizeof(me_s)),
             rlx__rank_name(g->world, lost, lost_s, sizeof(lost_s)), mine,
             rlx__reason_in_world(g->world, g->n, why, why_s, sizeof why_s));
  }
  else
    snprintf(msg, sizeof(msg), "%.600s", g->hdr->why);
  return end_call(op, err, msg);
}

void rlx__shmg_describe_wait(struct rlx__shm_group *g, int which, int r, uint64_t step, char *buf,
                             size_t len) {
  size_t used = 0;
  buf[0] = '\0';
  for (int k = r >= 0 ? r : 0; k < (r >= 0 ? r + 1 : g->n) && k < g->n; k++) {
    if (k == g->me || atomic_load(field(g, which, k, step)) >= step)
      continue;
    int n = snprintf(buf + used, len - used, "%srank %d (%s)", used ? ", " : "", k,
                     not_done[which]);
    if (n < 0 || (size_t)n >= len - used)
      return;
    used += (size_t)n;
  }
}

/* End this call with err (the segment failed already) and tell the
 * ranks in a point-to-point call with an ABORT. */
static int end_and_tell(struct rlx__shm_group *g, struct rlx__op *op, int err,
                        const char *msg) {
  int rc = end_call(op, err, msg);
  rlx__engine_lock(g->engine);
  rlx__exec_tell(op);
  rlx__engine_unlock(g->engine);
  return rc;
}

/* This call fails here for a reason of this rank's: the segment fails
 * for the others too, and an ABORT tells any of them in a point-to-point
 * call. */
static int fail_everywhere(struct rlx__shm_group *g, struct rlx__op *op, int err,
                           const char *msg) {
  rlx__shmg_fail(g, err, -1, op->seq, msg);
  return end_and_tell(g, op, err, msg);
}

/* Compare what this rank owes (rlx__shmg_owe) where every rank has
 * arrived at the owed call's first step, having waited for every rank to
 * arrive at step upto (0: not). A call that did not match fails the
 * segment (that call's failure, which the others learn as the revocation
 * of a call they completed) and this one, revoked, naming both calls. */
static int settle(struct rlx__shm_group *g, struct rlx__op *op, uint64_t upto) {
  int rc, from = 0;
  /* One look, at the last owed call, for every owed call, and only when
   * a call must be settled now (upto) or the caller waits anyway (upto 0,
   * wait_for's): that line is the one the other rank has just written, and
   * a look every call (a loop of small broadcasts or scatters from one
   * root) cost the root a miss on it every call; this way one in about
   * RLX__SHMG_CELLS. */
  if ((upto == 0 || upto > g->min_seen) && g->owed_last > g->min_seen &&
      reached(g, ARRIVE, -1, g->owed_last, &from))
    g->min_seen = g->owed_last;
  if (upto > g->min_seen && (rc = wait_for(g, op, ARRIVE, -1, upto, 0)) != 0)
    return rc; /* (its looks may have settled some already) */
  /* The owed calls every rank has arrived at, oldest first: a walk over
   * the steps since the last settle (each step walked once), not over
   * every cell at every call. The first one not every rank has reached
   * ends it (nor have they any later one); it stays owed until a later
   * settle, at the latest before its cell is written again. */
  struct runs rs;
  rs.have = 0;
  for (; g->owing; g->owed_next++) {
    struct rlx__shmg_owed *o = &g->owed[g->owed_next & (RLX__SHMG_CELLS - 1)];
    if (o->first != g->owed_next)
      continue; /* (no call owed began at this step) */
    if (o->first > g->min_seen)
      break; /* (not seen settled: later) */
    uint64_t first = o->first;
    o->first = 0;
    g->owing--;
    for (int r = 0; r < g->n; r++) {
      char theirs[160], mine[160], why[600], msg[1024], call[160];
      if (r == g->me || run_matches_seen(g, &rs, r, first, o->sig) ||
          !call_differs(g, r, first, o->sig, theirs, sizeof(theirs)))
        continue;
      describe_sig(o->sig, mine, sizeof(mine));
      snprintf(why, sizeof(why), "rank %d called %s where rank %d called %s (call #%llu)", r,
               theirs, g->me, mine, (unsigned long long)o->seq);
      rlx__shmg_fail(g, RLX_ERR_MISMATCH, -1, o->seq, why);
      rlx__exec_describe(op, call, sizeof(call));
      snprintf(msg, sizeof(msg), "%s on rank %d: the communicator is revoked: %s, which this rank "
               "had completed as its root, did not match: %s", call, g->me, mine, why);
      return end_and_tell(g, op, RLX_ERR_REVOKED, msg);
    }
  }
  return 0;
}

static int timed_out(struct rlx__shm_group *g, struct rlx__op *op, int which, int r,
                     uint64_t step) {
  char mine[160], who[300], msg[640];
  rlx__shmg_describe_wait(g, which, r, step, who, sizeof(who));
  rlx__exec_describe(op, mine, sizeof(mine));
  snprintf(msg, sizeof(msg), "%s on rank %d timed out after %g s (a timeout set by %s) waiting "
           "for %s", mine, g->me, (double)(op->deadline - op->t_start) / 1e9,
           op->deadline_from ? op->deadline_from : "RLX_TIMEOUT", who[0] ? who : "nobody");
  return fail_everywhere(g, op, RLX_ERR_TIMEOUT, msg); /* (exec.c's rlx__exec_abort says why) */
}

void rlx__shmg_p2p_call(struct rlx__shm_group *g, uint64_t seq, const uint8_t sig[RLX__SIG_SIZE]) {
  uint64_t s[2];
  memcpy(s, sig, sizeof(s));
  atomic_store_explicit(&g->line[g->me].p2p_sig[0], s[0], memory_order_relaxed);
  atomic_store_explicit(&g->line[g->me].p2p_sig[1], s[1], memory_order_relaxed);
  atomic_store_explicit(&g->line[g->me].p2p_seq, seq + 1, memory_order_release);
}

/* A rank we wait for runs this very call point to point (rlx_iallreduce
 * against our rlx_allreduce): they cannot meet. Say so now rather than at
 * the deadline, to the other ranks too (an ABORT reaches its
 * point-to-point call). */
static int check_p2p_caller(struct rlx__shm_group *g, struct rlx__op *op, int which, int r0,
                            uint64_t step) {
  int r = -1;
  for (int k = r0 >= 0 ? r0 : 0; k < (r0 >= 0 ? r0 + 1 : g->n) && r < 0; k++)
    if (k != g->me && atomic_load(field(g, which, k, step)) < step &&
        atomic_load_explicit(&g->line[k].p2p_seq, memory_order_acquire) == op->seq + 1)
      r = k;
  if (r < 0)
    return 0;
  char mine[160], theirs[160], msg[640];
  uint64_t s[2] = {atomic_load_explicit(&g->line[r].p2p_sig[0], memory_order_relaxed),
                   atomic_load_explicit(&g->line[r].p2p_sig[1], memory_order_relaxed)};
  uint8_t sig[RLX__SIG_SIZE];
  struct rlx__call got;
  memcpy(sig, s, sizeof(sig));
  rlx__call_decode(sig, &got);
  rlx__call_describe(theirs, sizeof(theirs), NULL, &got);
  rlx__exec_describe(op, mine, sizeof(mine));
  snprintf(msg, sizeof(msg),
           "rank %d called %s where rank %d called %s (call #%llu; rank %d's runs point to point, "
           "nonblocking or a communicator call: a nonblocking collective does not match a "
           "blocking one)",
           r, theirs, g->me, mine, (unsigned long long)op->seq, r);
  return fail_everywhere(g, op, RLX_ERR_MISMATCH, msg);
}

/* The program asked the waiting call to give up (rlx_set_interrupt): it
 * fails here and, through the segment and ABORTs, on the others. */
static int interrupted(struct rlx__shm_group *g, struct rlx__op *op, int which, int r,
                       uint64_t step) {
  char mine[160], who[300], msg[640];
  rlx__shmg_describe_wait(g, which, r, step, who, sizeof(who));
  rlx__exec_describe(op, mine, sizeof(mine));
  snprintf(msg, sizeof(msg), "%s on rank %d was interrupted (by the program: a signal?) while "
           "waiting for %s", mine, g->me, who[0] ? who : "nobody");
  return fail_everywhere(g, op, RLX_ERR_INTERRUPTED, msg);
}

static void futex_sleep(struct rlx__shm_group *g, uint32_t bell, uint64_t deadline) {
  uint64_t ns = RLX__INTERRUPT_EVERY_NS; /* and look around again */
  uint64_t now = rlx__now_ns();
  if (deadline && deadline > now && deadline - now < ns)
    ns = deadline - now;
  struct timespec ts = {(time_t)(ns / 1000000000u), (long)(ns % 1000000000u)};
  syscall(SYS_futex, &g->hdr->bell, FUTEX_WAIT, bell, &ts, NULL, 0);
}

/* RLX_TRACE: how long this wait in the segment took, and on whom. */
static void trace_wait(struct rlx__shm_group *g, struct rlx__op *op, int which, int r,
                       uint64_t step, uint64_t t0) {
  char name[48], args[160];
  if (r >= 0)
    snprintf(name, sizeof(name), "%s rank %d", waited[which], r);
  else
    snprintf(name, sizeof(name), "%s every rank", which == ARRIVE ? "data of" : "slices of");
  snprintf(args, sizeof(args), "\"comm\":%u,\"seq\":%llu,\"step\":%llu,\"shm\":1",
           op->comm_id, (unsigned long long)op->seq, (unsigned long long)(step - g->first));
  rlx__trace_span(RLX__TRACK_XFER(0, 0), "wait", name, t0, rlx__now_ns(), args);
}

/* The cells of step + 1 of the ranks this arrival came from, asked for
 * now: they were there before we looked (their writers run ahead: a
 * small scatter's root, a gather's senders), so their next cell most
 * likely is too, and the miss on it overlaps the end of this call and the
 * start of the next. Not when we had to wait: then we are ahead, and our
 * read would take back the line its writer asked for to write
 * (rlx__shmg_arrive). */
static void prefetch_next(struct rlx__shm_group *g, int r, uint64_t step) {
  if (r >= 0) {
    __builtin_prefetch(rlx__shmg_cell(g, r, step + 1), 0, 3);
    return;
  }
  if (g->n > RLX__SHMG_PREFETCH_RANKS)
    return;
  for (int k = 0; k < g->n; k++)
    if (k != g->me)
      __builtin_prefetch(rlx__shmg_cell(g, k, step + 1), 0, 3);
}

/* calls: compare the ranks' calls once they reach the call's first step
 * (not for wait_room, whose step - 1 may be another call's). */
static int wait_for(struct rlx__shm_group *g, struct rlx__op *op, int which, int r,
                    uint64_t step, int calls) {
  int from = 0, rc = 0;
  if (reached(g, which, r, step, &from)) {
    if (which == ARRIVE)
      prefetch_next(g, r, step);
  } else {
    struct rlx__engine *e = g->engine;
    /* The wait's start is read at its first look at the clock (turn 64),
     * unless a trace wants the span: most waits of a small call end in a
     * few turns, and a precise read was ~45 instructions of a 2-rank
     * 8-byte scatterv's receiver (the spin budget runs those turns longer). */
    uint64_t t0 = RLX__TRACING() ? rlx__now_ns() : 0, t_p2p = t0, t_int = t0;
    op->waited = 1;
    atomic_store_explicit(&g->w_step, step, memory_order_relaxed);
    atomic_store_explicit(&g->w_which, which, memory_order_relaxed);
    atomic_store_explicit(&g->w_rank, r, memory_order_relaxed);
    atomic_store_explicit(&g->w_seq, op->seq + 1, memory_order_release);
    for (unsigned turn = 1;; turn++) {
      if (e->yield)
        sched_yield();
      else
        rlx__cpu_relax();
      if (reached(g, which, r, step, &from))
        break;
      if (turn % 64 != 0)
        continue;
      /* (a rank that posted an owed call and left is compared with before
       * its loss is: its posts stay in the segment) */
      if (g->owing && (rc = settle(g, op, 0)) != 0)
        break;
      if ((rc = check_failed(g, op)) != 0)
        break;
      uint64_t now = rlx__now_ns();
      if (t0 == 0)
        t0 = t_p2p = t_int = now;
      if (now - t_p2p >= 1000000u) {
        t_p2p = now;
        if ((rc = check_p2p_caller(g, op, which, r, step)) != 0)
          break;
      }
      if (op->deadline != 0 && now >= op->deadline) {
        rc = timed_out(g, op, which, r, step);
        break;
      }
      if (rlx__interrupted(&t_int, now)) {
        rc = interrupted(g, op, which, r, step);
        break;
      }
      if (now - t0 < e->spin_ns)
        continue;
      atomic_fetch_add(&g->hdr->sleepers, 1);
      uint32_t bell = atomic_load(&g->hdr->bell);
      if (!reached(g, which, r, step, &from) && !atomic_load(&g->hdr->failed))
        futex_sleep(g, bell, op->deadline);
      atomic_fetch_sub(&g->hdr->sleepers, 1);
    }
    atomic_store_explicit(&g->w_seq, 0, memory_order_relaxed);
    if (rc != 0)
      return rc;
    if (RLX__TRACING() && !(op->seq & RLX__SEQ_INTERNAL))
      trace_wait(g, op, which, r, step, t0);
  }
  if (calls && which == ARRIVE && r < 0 && step == g->first) {
    for (int k = 0; k < g->n; k++)
      if (k != g->me && (rc = check_call(g, op, k)) != 0)
        return rc;
  } else if (calls && which == ARRIVE && r >= 0 && step == g->first &&
             (rc = check_call(g, op, r)) != 0) {
    return rc;
  }
  if (which == ARRIVE && r < 0)
    g->min_seen = step;
  /* What we waited for was there at once, but a member may have failed
   * this call (or an earlier one) before (its deadline passed while it
   * waited for us: its arrival is in the segment all the same): fail with
   * it, not succeed where it failed. (A later call's failure is not this
   * one's: members that finished it went on.) */
  if (atomic_load_explicit(&g->hdr->failed, memory_order_acquire) && g->hdr->seq <= op->seq)
    return check_failed(g, op);
  return RLX_OK;
}

int rlx__shmg_wait_arrived(struct rlx__shm_group *g, struct rlx__op *op, int r, uint64_t step) {
  return wait_for(g, op, ARRIVE, r, step, 1);
}

int rlx__shmg_wait_reduced(struct rlx__shm_group *g, struct rlx__op *op, int r, uint64_t step) {
  return wait_for(g, op, REDUCED, r, step, 0);
}

int rlx__shmg_wait_fed(struct rlx__shm_group *g, struct rlx__op *op, int r, uint64_t chunks) {
  return wait_for(g, op, FED, r, chunks, 0);
}

int rlx__shmg_wait_taken(struct rlx__shm_group *g, struct rlx__op *op, int root,
                         uint64_t chunks) {
  return wait_for(g, op, TAKEN, root, chunks, 0);
}

int rlx__shmg_wait_room(struct rlx__shm_group *g, struct rlx__op *op, uint64_t step) {
  if (step < 2 || g->min_seen >= step - 1)
    return RLX_OK;
  return wait_for(g, op, ARRIVE, -1, step - 1, 0); /* (sets min_seen) */
}

int rlx__shmg_wait_cell_room(struct rlx__shm_group *g, struct rlx__op *op, uint64_t step) {
  uint64_t need = step > RLX__SHMG_CELLS ? step - RLX__SHMG_CELLS + 1 : 0;
  if (need == 0 || g->min_seen >= need)
    return RLX_OK;
  /* further than needed when they are there already: fewer looks later */
  int from = 0;
  if (reached(g, ARRIVE, -1, step - 1, &from)) {
    g->min_seen = step - 1;
    return RLX_OK;
  }
  /* Out of room: wait until every rank is half the cells further (at most
   * at step - 1, where all that this rank posted lets them be), so that
   * the next posts need no look at their lines: a look a call kept both
   * ranks in step, each waiting for the line the other had just written
   * (shm_group.h). */
  uint64_t want = need + RLX__SHMG_CELLS / 2;
  return wait_for(g, op, ARRIVE, -1, want < step ? want : step - 1, 0); /* (sets min_seen) */
}
