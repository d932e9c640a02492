/* Allgather and allgatherv in a communicator's shared segment: every rank
 * posts (a chunk of) its block and copies everyone's out. allgatherv's
 * blocks differ by rank, and every rank knows every block's size (its
 * counts, which the call's signature hashes: ranks that disagree fail at
 * the first step), so all take the steps the largest block needs, a rank
 * whose block has ended posting empty ones. Large blocks go by reference
 * instead (by_ref, below). */
#include <string.h>
#include "base/tuning.h"
#include "transport/p2p.h"
#include "coll.h"
#include "shm_group.h"
#include "shm_stream.h"
#include "base/copy.h"

static int streamed(struct rlx__op *op) {
  struct rlx__shm_group *g = op->shm;
  size_t block = op->count * op->esize, cb = g->slot; /* (whole elements) */
  int rc;
  if ((rc = rlx__shmg_begin(g, op)) != RLX_OK)
    return rc;
  for (size_t off = 0; off < block; off += cb) {
    size_t len = block - off < cb ? block - off : cb;
    uint64_t s = ++g->step;
    if ((rc = rlx__shmg_post(g, op, s, (const char *)op->src + off, len, block)) != RLX_OK ||
        (rc = rlx__shmg_wait_arrived(g, op, -1, s)) != RLX_OK)
      return rc;
    for (int r = 0; r < g->n; r++) {
      char *to = (char *)op->dst + (size_t)r * block + off;
      if (to != (const char *)op->src + off) /* in place: our block is there */
        rlx__copy(to, rlx__shmg_data(g, r, s, block), len);
    }
  }
  return RLX_OK;
}

/* Rank r's block of an allgatherv: its bytes, and where it goes. */
static size_t v_block(const struct rlx__op *op, int r, char **at) {
  *at = (char *)op->dst + op->displs[r] * op->esize;
  return op->counts[r] * op->esize;
}

/* most: the largest block's bytes */
static int streamed_v(struct rlx__op *op, size_t most) {
  struct rlx__shm_group *g = op->shm;
  size_t cb = g->slot; /* (whole elements) */
  char *to;
  int rc;
  if ((rc = rlx__shmg_begin(g, op)) != RLX_OK)
    return rc;
  /* (one step when every block is empty: the ranks still meet there) */
  for (size_t off = 0; off == 0 || off < most; off += cb) {
    size_t mine = v_block(op, g->me, &to), len = mine > off ? mine - off : 0;
    uint64_t s = ++g->step;
    if ((rc = rlx__shmg_post(g, op, s, (const char *)op->src + off, len < cb ? len : cb,
                             mine)) != RLX_OK ||
        (rc = rlx__shmg_wait_arrived(g, op, -1, s)) != RLX_OK)
      return rc;
    for (int r = 0; r < g->n; r++) {
      size_t bytes = v_block(op, r, &to);
      if (bytes <= off || to + off == (const char *)op->src + off) /* (ended; in place) */
        continue;
      len = bytes - off < cb ? bytes - off : cb;
      rlx__copy(to + off, rlx__shmg_data(g, r, s, bytes), len);
    }
  }
  return RLX_OK;
}

/* Rank r's block of an allgather, as v_block. */
static size_t even_block(const struct rlx__op *op, int r, char **at) {
  size_t block = op->count * op->esize;
  *at = (char *)op->dst + (size_t)r * block;
  return block;
}

/* what a rank posts when the blocks go by reference */
struct ref_desc {
  uint64_t addr, bytes, pid; /* its block: where, how long, whose memory */
};

/* Every block by reference (copies by reference on, a block of
 * RLX__SHMG_AG_REF_MIN or more, ranks that fit the cores; every rank
 * knows every block's size, so all take this path alike): each rank
 * posts its block's address in its cell, and once all have, reads every
 * other block straight from its owner with process_vm_readv, one copy
 * where the slots take two (in, then out) and a step for each slot's
 * worth; then rlx__shms_refs_done's step frees the buffers and says
 * whether a copy failed anywhere (the call then runs again streamed, as
 * the segment's later calls do). */
static int by_ref(struct rlx__op *op, size_t (*block)(const struct rlx__op *, int, char **)) {
  struct rlx__shm_group *g = op->shm;
  char *to;
  int rc, failed = 0;
  if ((rc = rlx__shmg_begin(g, op)) != RLX_OK)
    return rc;
  uint64_t s = ++g->step;
  struct ref_desc d = {(uint64_t)(uintptr_t)op->src, block(op, g->me, &to), rlx__shms_own_pid()};
  if ((rc = rlx__shmg_post(g, op, s, &d, sizeof(d), sizeof(d))) != RLX_OK ||
      (rc = rlx__shmg_wait_arrived(g, op, -1, s)) != RLX_OK)
    return rc;
  for (int i = 0; i < g->n; i++) {
    int r = rlx__shmg_right(g, i);
    size_t bytes = block(op, r, &to);
    if (r == g->me) {
      if (to != (const char *)op->src && bytes > 0) /* (in place: it is there) */
        rlx__copy(to, op->src, bytes);
      continue;
    }
    memcpy(&d, rlx__shmg_data(g, r, s, sizeof(d)), sizeof(d));
    if (d.bytes != bytes) /* (the signatures agreed on the counts: a spoilt cell) */
      return rlx__shms_mismatch(op, g, r, d.bytes, g->me, bytes);
    int pid = rlx__shms_ref_pid(op, g, r, (uint32_t)d.pid, &rc);
    if (pid < 0)
      return rc;
    if (bytes > 0 && !failed)
      failed = rlx__cma_read(pid, d.addr, to, bytes) != 0;
  }
  return rlx__shms_refs_done(g, op, failed);
}

/* By reference only where the host's ranks fit its cores (a setting
 * every rank of the host shares, so all take the same path): 3 and 4
 * ranks on 2 cores read by reference in 0.81-1.25x vader's time where the
 * slots took 0.48-0.94 (256 KiB - 4 MiB blocks; 2 ranks there 1.44-1.56
 * -> 0.95-1.12 at 512 KiB - 2 MiB). */
static int refs_pay(const struct rlx__op *op, int refs_ok, size_t most) {
  return refs_ok && !op->p2p->oversubscribed && most >= RLX__SHMG_AG_REF_MIN;
}

static int run(struct rlx__op *op, int refs_ok) {
  if (refs_pay(op, refs_ok, op->count * op->esize))
    return by_ref(op, even_block);
  return streamed(op);
}

static int run_v(struct rlx__op *op, int refs_ok) {
  char *to;
  size_t most = 0;
  for (int r = 0; r < op->size; r++) {
    size_t bytes = v_block(op, r, &to);
    most = bytes > most ? bytes : most;
  }
  if (refs_pay(op, refs_ok, most))
    return by_ref(op, v_block);
  return streamed_v(op, most);
}

static int allgather(struct rlx__op *op) { return rlx__shms_run(op, "rlx_allgather", run); }
static int allgatherv(struct rlx__op *op) { return rlx__shms_run(op, "rlx_allgatherv", run_v); }

static size_t setup(struct rlx__op *op) {
  (void)op;
  return 0;
}

const struct rlx__algo rlx__allgather_shm = {"shm", NULL, setup, NULL, allgather};
const struct rlx__algo rlx__allgatherv_shm = {"shm", NULL, setup, NULL, allgatherv};
