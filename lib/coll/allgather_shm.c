/* Allgather in a communicator's shared segment: every rank posts (a chunk
 * of) its block and copies everyone's out. */
#include <string.h>
#include "coll.h"
#include "shm_group.h"

static int run(struct rlx__op *op) {
  struct rlx__shm_group *g = op->shm;
  size_t block = op->count * op->esize, cb = g->slot / op->esize * op->esize;
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

static size_t setup(struct rlx__op *op) {
  (void)op;
  return 0;
}

const struct rlx__algo rlx__allgather_shm = {"shm", NULL, setup, NULL, run};
