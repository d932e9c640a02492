/* Allgather and allgatherv in a communicator's shared segment: every rank
 * posts (a chunk of) its block and copies everyone's out. allgatherv's
 * blocks differ by rank, and every rank knows every block's size (its
 * counts, which the call's signature hashes: ranks that disagree fail at
 * the first step), so all take the steps the largest block needs, a rank
 * whose block has ended posting empty ones. */
#include <string.h>
#include "coll.h"
#include "shm_group.h"

static int run(struct rlx__op *op) {
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
        memcpy(to, rlx__shmg_data(g, r, s, block), len);
    }
  }
  return RLX_OK;
}

/* Rank r's block of an allgatherv: its bytes, and where it goes. */
static size_t v_block(const struct rlx__op *op, int r, char **at) {
  *at = (char *)op->dst + op->displs[r] * op->esize;
  return op->counts[r] * op->esize;
}

static int run_v(struct rlx__op *op) {
  struct rlx__shm_group *g = op->shm;
  size_t cb = g->slot, most = 0; /* (whole elements) */
  char *to;
  int rc;
  for (int r = 0; r < g->n; r++)
    if (v_block(op, r, &to) > most)
      most = v_block(op, r, &to);
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
      memcpy(to + off, rlx__shmg_data(g, r, s, bytes), len);
    }
  }
  return RLX_OK;
}

static size_t setup(struct rlx__op *op) {
  (void)op;
  return 0;
}

const struct rlx__algo rlx__allgather_shm = {"shm", NULL, setup, NULL, run};
const struct rlx__algo rlx__allgatherv_shm = {"shm", NULL, setup, NULL, run_v};
