/* rlx_gatherv in a communicator's shared segment (shm_group.h), for
 * blocking calls. A sender knows only its own block's size, the root
 * every size, so no sender can know how many steps the largest block
 * would take: the call takes one step on every rank, as a small gather
 * does, and a block too big for it moves beside the steps.
 *
 * Each sender posts at the call's step what its stream (shm_stream.h)
 * carries: a word with its block's bytes and how the block comes, then
 *   inline: the block itself, in its cell, spill area and slot (up to
 *     RLX__SHMG_INLINE + RLX__SHMG_SPILL + a slot, less the word): the
 *     sender leaves at once, as a small gather's senders do (up to
 *     RLX__SHMG_CELLS - 1 calls ahead while its blocks fit the cell, one
 *     once they take the slot);
 *   pushed (bigger, copies by reference on: RLX_CMA, and other senders
 *     copy beside it or its block is RLX__SHMG_PUSH_MIN at least): the
 *     sender writes its block into the root's buffer itself with
 *     process_vm_writev, where the root's post at the step says it is
 *     (the root's pid and the addresses of its buffer, counts and
 *     displacements: the sender reads its own count and displacement
 *     from there, and writes nothing unless its block is that size),
 *     then says so in its line (fed); every sender copies at once, where
 *     the root would read the blocks one after another
 *     (on 16 cores, 15 blocks of 2 MiB took 1.59x vader read in turn;
 *     on 2 cores, 3 and 4 ranks, 512 KiB - 4 MiB: 0.56-0.86x pushed,
 *     0.86-1.63x read in turn). A root that leaves early (an error)
 *     closes its buffer to pushes, and waits for those under way, before
 *     it gives the buffer back to its program (close_pushes);
 *   by reference (bigger, copies by reference on, 2 ranks, below
 *     RLX__SHMG_PUSH_MIN): its address and pid; the root reads it with
 *     process_vm_readv and says so in the sender's line (taken), which
 *     the sender waits for;
 *   fed (bigger, no copies by reference, or the root's read failed: it
 *     says so; or the sender could not push: it says so, refused in its
 *     line): slot by slot through the sender's two data slots, the
 *     sender counting the chunks it fed (fed, its line), the root the
 *     chunks it took (taken); each slot is the sender's alone between
 *     the call's step and its end, since every rank arrived at the step,
 *     the root too (at its start).
 * The root posts where senders may push (nothing: a zero pid), waits for
 * every sender's step (the calls compared there, as a gather's root
 * does), checks each block's size against its count (RLX_ERR_MISMATCH
 * naming both, the segment failed: a sender that left learns it at its
 * next call, one still waiting at once), takes the blocks, and waits for
 * the pushed ones.
 *
 * The counters only grow (fed == taken between calls): what a sender
 * posts for a block that does not come inline carries its count, so the
 * root, whichever rank it is, knows where the chunks of this call start. */
#include <stdio.h>
#include <string.h>
#include "base/internal.h"
#include "engine/engine.h"
#include "transport/p2p.h"
#include "coll.h"
#include "shm_group.h"
#include "shm_stream.h"
#include "base/copy.h"

enum { INLINE, BY_REF, FED, PUSHED };
#define MODE_SHIFT 62
#define LEN_MASK ((1ull << MODE_SHIFT) - 1)

/* what a sender posts when its block does not come inline */
struct desc {
  uint64_t word; /* the block's bytes | mode << MODE_SHIFT */
  uint64_t addr; /* by reference: where it is */
  uint64_t base; /* the sender's fed (and taken) before the call */
  uint64_t pid;  /* by reference: the sender's process */
};

/* the root's post at the call's step where senders may push: where its
 * blocks go, in its process (pid 0: nowhere, feed them) */
struct where {
  uint64_t pid, dst, counts, displs;
};

/* the root's record of a sender whose block is fed (or pushed) */
struct feed {
  uint64_t base, chunks; /* its count before the call; the chunks to take (0: none) */
  int pushed;            /* its block comes by itself: wait for its word */
};

/* Copies by reference are on, and none failed in this segment (the
 * root's post and the senders' choice both ask this). */
static int refs_on(const struct rlx__shm_group *g) {
  return !g->no_refs && rlx__p2p_by_ref(g->p2p);
}

static uint64_t chunks_of(const struct rlx__shm_group *g, uint64_t bytes) {
  return (bytes + g->slot - 1) / g->slot;
}

/* A sender: bytes of src fed through its slots, the chunks counted from
 * base on, each written once the root took the one two before it (and
 * the first once every rank arrived at the call's step s: then none
 * reads this rank's slot of step s - 1); then wait until it took all. */
static int feed(struct rlx__shm_group *g, struct rlx__op *op, uint64_t s, const char *src,
                uint64_t bytes, uint64_t base) {
  uint64_t chunks = chunks_of(g, bytes);
  _Atomic uint64_t *fed = &g->line[g->me].fed;
  int rc = rlx__shmg_wait_room(g, op, s + 1);
  for (uint64_t k = 1; rc == RLX_OK && k <= chunks; k++) {
    if (k >= 3 && (rc = rlx__shmg_wait_taken(g, op, op->root, base + k - 2)) != RLX_OK)
      break;
    uint64_t at = (k - 1) * g->slot, n = bytes - at < g->slot ? bytes - at : g->slot;
    rlx__copy(rlx__shmg_slot(g, g->me, s + k), src + at, n);
    rlx__shmg_publish(g, fed, base + k);
  }
  return rc != RLX_OK ? rc : rlx__shmg_wait_taken(g, op, op->root, base + chunks);
}

/* A sender's block into the root's buffer (its post at step s says where):
 * 1 when it is there, 0 when it must be fed instead (nowhere posted, a
 * copy refused, or a size other than the root's: the root names that),
 * or -1 with *rc set (the root's post names another process). */
static int push_block(struct rlx__shm_group *g, struct rlx__op *op, uint64_t s, uint64_t bytes,
                      int *rc) {
  struct where w;
  if ((*rc = rlx__shmg_wait_arrived(g, op, op->root, s)) != RLX_OK)
    return -1;
  memcpy(&w, rlx__shmg_data(g, op->root, s, sizeof w), sizeof w);
  if (w.pid == 0)
    return 0;
  int pid = rlx__shms_ref_pid(op, g, op->root, (uint32_t)w.pid, rc);
  if (pid < 0)
    return -1;
  int bad = 0;
#ifdef RLX_FAULT_INJECTION
  bad = rlx__fault_cma_push() != 0; /* (slowpush: 1.5 s late, then on) */
#endif
  /* A root that leaves the call early (another sender's block the wrong
   * size, a lost rank, its deadline) gives its buffer back to its
   * program: it first closes it to writes, then waits for those under
   * way. Each of us stores, then looks at the other's word (sequentially
   * consistent): we see it closed, or it sees us writing. */
  _Atomic uint64_t *mine = &g->line[g->me].pushing;
  atomic_store(mine, s);
  if (atomic_load(&g->line[op->root].push_closed) == s) {
    atomic_store_explicit(mine, 0, memory_order_release);
    return 0;
  }
  /* (its count and displacement: size_t, as ours) */
  _Static_assert(sizeof(size_t) == sizeof(uint64_t), "counts read as 64-bit words");
  uint64_t me = (uint64_t)g->me * sizeof(size_t), at[2] = {w.counts + me, w.displs + me}, cd[2];
  bad = bad || rlx__cma_read_words(pid, at, cd, 2) != 0;
  if (!bad && cd[0] * op->esize != bytes) {
    atomic_store_explicit(mine, 0, memory_order_release);
    return 0; /* (the root names both sizes) */
  }
  bad = bad || rlx__cma_write(pid, w.dst + cd[1] * op->esize, op->src, bytes) != 0;
  atomic_store_explicit(mine, 0, memory_order_release);
  if (!bad)
    return 1;
  rlx__debug("rlx_gatherv: a copy by reference failed in the shared segment (into the root): this "
             "block fed, and every block streamed from now on");
  g->no_refs = 1;
  return 0;
}

static int send_block(struct rlx__shm_group *g, struct rlx__op *op, uint64_t s) {
  uint64_t bytes = op->count * op->esize, word = bytes;
  size_t lo, first = rlx__shms_span(g, 0, &lo);
  int rc;
  if (sizeof(word) + bytes <= first) {
    if ((rc = rlx__shms_room(g, op, s, 0, sizeof(word) + bytes)) != RLX_OK)
      return rc;
    rlx__shms_move(g, g->me, s, 0, 0, &word, sizeof(word), 0);
    rlx__shms_move(g, g->me, s, 0, sizeof(word), (void *)op->src, bytes, 0);
    rlx__shmg_arrive(g, s);
    return RLX_OK;
  }
  int ref = refs_on(g), push = ref && (g->n > 2 || bytes >= RLX__SHMG_PUSH_MIN);
  /* (fed == taken between calls; the larger, should a failed call have
   * left them apart) */
  uint64_t fed = atomic_load_explicit(&g->line[g->me].fed, memory_order_relaxed),
           taken = atomic_load_explicit(&g->line[g->me].taken, memory_order_acquire);
  struct desc d = {bytes | (uint64_t)(push ? PUSHED : ref ? BY_REF : FED) << MODE_SHIFT,
                   (uint64_t)(uintptr_t)op->src, fed > taken ? fed : taken,
                   ref && !push ? rlx__shms_own_pid() : 0};
  if ((rc = rlx__shms_room(g, op, s, 0, sizeof(d))) != RLX_OK)
    return rc;
  rlx__shms_move(g, g->me, s, 0, 0, &d, sizeof(d), 0);
  rlx__shmg_arrive(g, s);
  if (!ref)
    return feed(g, op, s, op->src, bytes, d.base);
  if (push) {
    /* (the block counts as a chunk, as one by reference does; refused
     * goes first, read by the root after fed) */
    int in = push_block(g, op, s, bytes, &rc);
    if (in < 0)
      return rc;
    if (!in)
      atomic_store_explicit(&g->line[g->me].refused, s, memory_order_relaxed);
    rlx__shmg_publish(g, &g->line[g->me].fed, d.base + 1);
    return in ? RLX_OK : feed(g, op, s, op->src, bytes, d.base + 1);
  }
  /* (fed counts the block by reference as a chunk: fed == taken again) */
  if ((rc = rlx__shmg_wait_taken(g, op, op->root, d.base + 1)) != RLX_OK)
    return rc;
  atomic_store_explicit(&g->line[g->me].fed, d.base + 1, memory_order_relaxed);
  if (atomic_load_explicit(&g->line[g->me].refused, memory_order_acquire) != s)
    return RLX_OK;
  rlx__debug("rlx_gatherv: the root's copy by reference failed in the shared segment: this "
             "block fed, and every block streamed from now on");
  g->no_refs = 1;
  return feed(g, op, s, op->src, bytes, d.base + 1);
}

/* The root: every sender's block of step s into place; fed ones in
 * turn, a chunk of each at a time. */
static int take_blocks(struct rlx__shm_group *g, struct rlx__op *op, uint64_t s) {
  struct feed *f = op->tmp;
  size_t es = op->esize;
  char *dst = op->dst;
  uint64_t most = 0;
  int rc;
  for (int r = 0; r < g->n; r++) {
    struct desc d;
    f[r].chunks = 0;
    f[r].pushed = 0;
    if (r == g->me)
      continue;
    rlx__shms_move(g, r, s, 0, 0, &d.word, sizeof(d.word), 1);
    uint64_t len = d.word & LEN_MASK, want = op->counts[r] * es, mode = d.word >> MODE_SHIFT;
    char *to = dst + op->displs[r] * es;
    if (len != want)
      return rlx__shms_mismatch(op, g, r, len, g->me, want);
    if (mode == INLINE) {
      rlx__shms_move(g, r, s, 0, sizeof(d.word), to, len, 1);
      continue;
    }
    rlx__shms_move(g, r, s, 0, 0, &d, sizeof(d), 1);
    f[r].base = d.base;
    if (mode == PUSHED) { /* (copying meanwhile: waited for below) */
      f[r].pushed = 1;
      continue;
    }
    if (mode == BY_REF) {
      int pid = rlx__shms_ref_pid(op, g, r, (uint32_t)d.pid, &rc);
      if (pid < 0)
        return rc;
      int bad = rlx__cma_read(pid, d.addr, to, len) != 0;
      if (bad) { /* (before taken, which the sender reads it after) */
        atomic_store_explicit(&g->line[r].refused, s, memory_order_relaxed);
        if (!g->no_refs)
          rlx__debug("rlx_gatherv: a copy by reference failed in the shared segment (rank %d's "
                     "block, fed instead): every block streamed from now on", r);
        g->no_refs = 1;
      }
      rlx__shmg_publish(g, &g->line[r].taken, ++f[r].base);
      if (!bad)
        continue;
    }
    f[r].chunks = chunks_of(g, len);
    most = f[r].chunks > most ? f[r].chunks : most;
  }
  for (int r = 0; r < g->n; r++) {
    if (!f[r].pushed)
      continue;
    if ((rc = rlx__shmg_wait_fed(g, op, r, f[r].base + 1)) != RLX_OK)
      return rc;
    rlx__shmg_publish(g, &g->line[r].taken, ++f[r].base);
    if (atomic_load_explicit(&g->line[r].refused, memory_order_relaxed) != s)
      continue; /* in place */
    f[r].chunks = chunks_of(g, op->counts[r] * es);
    most = f[r].chunks > most ? f[r].chunks : most;
  }
  for (uint64_t k = 1; k <= most; k++)
    for (int r = 0; r < g->n; r++) {
      if (k > f[r].chunks)
        continue;
      uint64_t len = op->counts[r] * es, at = (k - 1) * g->slot;
      if ((rc = rlx__shmg_wait_fed(g, op, r, f[r].base + k)) != RLX_OK)
        return rc;
      rlx__copy(dst + op->displs[r] * es + at, rlx__shmg_slot(g, r, s + k),
             len - at < g->slot ? len - at : g->slot);
      rlx__shmg_publish(g, &g->line[r].taken, f[r].base + k);
    }
  return RLX_OK;
}

/* The root leaves early (rc): no sender may write into its buffer from
 * now on, and those writing finish first (or are lost: a lost rank's
 * process writes no more, unless it was only stopped and comes back: the
 * window between its look and its write). */
static int close_pushes(struct rlx__shm_group *g, uint64_t s, int rc) {
  atomic_store(&g->line[g->me].push_closed, s);
  uint64_t since = rlx__now_ns();
  for (int r = 0; r < g->n; r++) {
    while (r != g->me && atomic_load(&g->line[r].pushing) == s) {
      rlx__engine_lock(g->engine);
      rlx__engine_turn(g->engine); /* (a loss is heard of by driving the loop) */
      int lost = rlx__p2p_lost_reason(g->p2p, g->world[r]) != NULL;
      rlx__engine_unlock(g->engine);
      if (lost)
        break;
      rlx__shmg_rest(since);
    }
  }
  return rc;
}

static int gatherv(struct rlx__op *op) {
  struct rlx__shm_group *g = op->shm;
  int rc;
  if ((rc = rlx__shmg_begin(g, op)) != RLX_OK)
    return rc;
  uint64_t s = ++g->step;
  if (g->me != op->root)
    return send_block(g, op, s);
  size_t es = op->esize;
  char *own = (char *)op->dst + op->displs[g->me] * es;
  if (own != op->src && op->counts[g->me] > 0) /* (in place: the root's block is there) */
    rlx__copy(own, op->src, op->counts[g->me] * es);
  /* (where, only if some block will not come inline: a pid costs a
   * syscall, 1.4 us a call on 64 KiB blocks here) */
  struct where w = {0, 0, 0, 0};
  size_t lo, first = rlx__shms_span(g, 0, &lo);
  int big = 0;
  for (int r = 0; r < g->n && !big; r++)
    big = r != g->me && sizeof(uint64_t) + op->counts[r] * es > first;
  if (big && refs_on(g))
    w = (struct where){rlx__shms_own_pid(), (uint64_t)(uintptr_t)op->dst,
                       (uint64_t)(uintptr_t)op->counts, (uint64_t)(uintptr_t)op->displs};
  if ((rc = rlx__shmg_post(g, op, s, &w, sizeof w, sizeof w)) != RLX_OK)
    return rc;
  if ((rc = rlx__shmg_wait_arrived(g, op, -1, s)) == RLX_OK)
    rc = take_blocks(g, op, s);
  return rc != RLX_OK && w.pid != 0 ? close_pushes(g, s, rc) : rc;
}

static size_t setup(struct rlx__op *op) {
  return (size_t)op->size * sizeof(struct feed);
}

const struct rlx__algo rlx__gatherv_shm = {"shm", NULL, setup, NULL, gatherv};
