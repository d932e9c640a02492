/* Gather, scatter and all-to-all in a communicator's shared segment
 * (shm_group.h), for small blocks (lib/tuning.h says up to where): one
 * step moves a whole small call, where point to point takes a frame per
 * peer and a wake-up per frame.
 *   gather: every rank posts (a chunk of) its block; the root copies
 *     everyone's out.
 *   scatter: the root posts its p blocks as a broadcast of p x block
 *     bytes would, chunk by chunk, and leaves; each rank copies out the
 *     part of each chunk that is its block.
 *   all-to-all: every rank posts its p blocks, chunk by chunk; each rank
 *     copies out the part of every rank's chunk that is its block (at the
 *     same offset in every sender's buffer). */
#include <string.h>
#include "coll.h"
#include "shm_group.h"
#include "base/copy.h"

/* (whole elements of any dtype: shm_group.h) */
static size_t chunk_of(const struct rlx__op *op) { return op->shm->slot; }

/* The part of [off, off + len) that is block b of bs bytes: its start in
 * the chunk and its length (0: none). */
static size_t part(size_t off, size_t len, int b, size_t bs, size_t *at) {
  size_t lo = (size_t)b * bs, hi = lo + bs;
  lo = lo > off ? lo : off;
  hi = hi < off + len ? hi : off + len;
  *at = lo - off;
  return hi > lo ? hi - lo : 0;
}

static int gather(struct rlx__op *op) {
  struct rlx__shm_group *g = op->shm;
  size_t block = op->count * op->esize, cb = chunk_of(op);
  int rc;
  if ((rc = rlx__shmg_begin(g, op)) != RLX_OK)
    return rc;
  for (size_t off = 0; off < block; off += cb) {
    size_t len = block - off < cb ? block - off : cb;
    uint64_t s = ++g->step;
    if ((rc = rlx__shmg_post(g, op, s, (const char *)op->src + off, len, block)) != RLX_OK)
      return rc;
    if (g->me != op->root)
      continue; /* (posting its next step waits until the root has read this one) */
    if ((rc = rlx__shmg_wait_arrived(g, op, -1, s)) != RLX_OK)
      return rc;
    for (int r = 0; r < g->n; r++) {
      char *to = (char *)op->dst + (size_t)r * block + off;
      if (to != (const char *)op->src + off) /* in place: the root's block is there */
        rlx__copy(to, rlx__shmg_data(g, r, s, block), len);
    }
  }
  return RLX_OK;
}

static int scatter(struct rlx__op *op) {
  struct rlx__shm_group *g = op->shm;
  size_t block = op->count * op->esize, total = block * (size_t)g->n, cb = chunk_of(op);
  int rc, root = g->me == op->root;
  if ((rc = rlx__shmg_begin(g, op)) != RLX_OK)
    return rc;
  if (root && op->dst != (const char *)op->src + (size_t)g->me * block) /* (not in place) */
    rlx__copy(op->dst, (const char *)op->src + (size_t)g->me * block, block);
  for (size_t off = 0; off < total; off += cb) {
    size_t len = total - off < cb ? total - off : cb, at, n;
    uint64_t s = ++g->step;
    if (root) {
      if ((rc = rlx__shmg_post(g, op, s, (const char *)op->src + off, len, total)) != RLX_OK)
        return rc;
      continue;
    }
    rlx__shmg_arrive(g, s); /* here: the root may reuse what we read at s - 2 */
    if ((rc = rlx__shmg_wait_arrived(g, op, op->root, s)) != RLX_OK)
      return rc;
    if ((n = part(off, len, g->me, block, &at)) > 0)
      rlx__copy((char *)op->dst + (off + at - (size_t)g->me * block),
             rlx__shmg_data(g, op->root, s, total) + at, n);
  }
  /* The root leaves without waiting for the others (as bcast_shm.c's):
   * each other rank compares its call with the root it names, and the
   * root owes the comparison of theirs with its own, which catches a
   * second rank naming itself root. */
  if (root)
    rlx__shmg_owe(g, op);
  return RLX_OK;
}

static int alltoall(struct rlx__op *op) {
  struct rlx__shm_group *g = op->shm;
  size_t block = op->count * op->esize, total = block * (size_t)g->n, cb = chunk_of(op);
  int rc;
  if ((rc = rlx__shmg_begin(g, op)) != RLX_OK)
    return rc;
  for (size_t off = 0; off < total; off += cb) {
    size_t len = total - off < cb ? total - off : cb, at, n;
    uint64_t s = ++g->step;
    if ((rc = rlx__shmg_post(g, op, s, (const char *)op->src + off, len, total)) != RLX_OK)
      return rc;
    if ((n = part(off, len, g->me, block, &at)) == 0)
      continue; /* (not ours: posting the next step waits until all have read this one) */
    if ((rc = rlx__shmg_wait_arrived(g, op, -1, s)) != RLX_OK)
      return rc;
    size_t into = off + at - (size_t)g->me * block;
    for (int r = 0; r < g->n; r++)
      rlx__copy((char *)op->dst + (size_t)r * block + into, rlx__shmg_data(g, r, s, total) + at, n);
  }
  /* Every rank waited for all at the chunk of its own block, whose
   * signatures that wait compared with its own. */
  return RLX_OK;
}

static size_t setup(struct rlx__op *op) {
  (void)op;
  return 0;
}

const struct rlx__algo rlx__gather_shm = {"shm", NULL, setup, NULL, gather};
const struct rlx__algo rlx__scatter_shm = {"shm", NULL, setup, NULL, scatter};
const struct rlx__algo rlx__alltoall_shm = {"shm", NULL, setup, NULL, alltoall};
