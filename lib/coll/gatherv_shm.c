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
 *   by reference (bigger, copies by reference on: RLX_CMA): its address
 *     and pid; the root reads it with process_vm_readv and says so in the
 *     sender's line (taken), which the sender waits for;
 *   fed (bigger, no copies by reference, or the root's read failed: it
 *     says so, and the sender feeds its block then): slot by slot through
 *     the sender's two data slots, the sender counting the chunks it fed
 *     (fed, its line), the root the chunks it took (taken); each slot is
 *     the sender's alone between the call's step and its end, since
 *     every rank arrived at the step, the root too (at its start).
 * The root posts nothing but its arrival, waits for every sender's step
 * (the calls compared there, as a gather's root does), checks each
 * block's size against its count (RLX_ERR_MISMATCH naming both, the
 * segment failed: a sender that left learns it at its next call, one
 * still waiting at once), and takes the blocks.
 *
 * The counters only grow (fed == taken between calls): what a sender
 * posts for a block that does not come inline carries its count, so the
 * root, whichever rank it is, knows where the chunks of this call start. */
#include <stdio.h>
#include <string.h>
#include "base/internal.h"
#include "transport/p2p.h"
#include "coll.h"
#include "shm_group.h"
#include "shm_stream.h"

enum { INLINE, BY_REF, FED };
#define MODE_SHIFT 62
#define LEN_MASK ((1ull << MODE_SHIFT) - 1)

/* what a sender posts when its block does not come inline */
struct desc {
  uint64_t word; /* the block's bytes | mode << MODE_SHIFT */
  uint64_t addr; /* by reference: where it is */
  uint64_t base; /* the sender's fed (and taken) before the call */
  uint64_t pid;  /* by reference: the sender's process */
};

/* the root's record of a sender whose block is fed */
struct feed {
  uint64_t base, chunks; /* its count before the call; the chunks to take (0: none) */
};

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
    memcpy(rlx__shmg_slot(g, g->me, s + k), src + at, n);
    rlx__shmg_publish(g, fed, base + k);
  }
  return rc != RLX_OK ? rc : rlx__shmg_wait_taken(g, op, op->root, base + chunks);
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
  int ref = !g->no_refs && rlx__p2p_by_ref(g->p2p);
  /* (fed == taken between calls; the larger, should a failed call have
   * left them apart) */
  uint64_t fed = atomic_load_explicit(&g->line[g->me].fed, memory_order_relaxed),
           taken = atomic_load_explicit(&g->line[g->me].taken, memory_order_acquire);
  struct desc d = {bytes | (uint64_t)(ref ? BY_REF : FED) << MODE_SHIFT,
                   (uint64_t)(uintptr_t)op->src, fed > taken ? fed : taken,
                   ref ? rlx__shms_own_pid() : 0};
  if ((rc = rlx__shms_room(g, op, s, 0, sizeof(d))) != RLX_OK)
    return rc;
  rlx__shms_move(g, g->me, s, 0, 0, &d, sizeof(d), 0);
  rlx__shmg_arrive(g, s);
  if (!ref)
    return feed(g, op, s, op->src, bytes, d.base);
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
  for (uint64_t k = 1; k <= most; k++)
    for (int r = 0; r < g->n; r++) {
      if (k > f[r].chunks)
        continue;
      uint64_t len = op->counts[r] * es, at = (k - 1) * g->slot;
      if ((rc = rlx__shmg_wait_fed(g, op, r, f[r].base + k)) != RLX_OK)
        return rc;
      memcpy(dst + op->displs[r] * es + at, rlx__shmg_slot(g, r, s + k),
             len - at < g->slot ? len - at : g->slot);
      rlx__shmg_publish(g, &g->line[r].taken, f[r].base + k);
    }
  return RLX_OK;
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
    memcpy(own, op->src, op->counts[g->me] * es);
  char none = 0;
  if ((rc = rlx__shmg_post(g, op, s, &none, 0, 0)) != RLX_OK ||
      (rc = rlx__shmg_wait_arrived(g, op, -1, s)) != RLX_OK)
    return rc;
  return take_blocks(g, op, s);
}

static size_t setup(struct rlx__op *op) {
  return (size_t)op->size * sizeof(struct feed);
}

const struct rlx__algo rlx__gatherv_shm = {"shm", NULL, setup, NULL, gatherv};
