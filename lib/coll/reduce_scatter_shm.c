/* Reduce-scatter in a communicator's shared segment: in each step every
 * rank posts the same piece of each of its n input blocks, and rank i
 * reduces piece i of every slot, in rank order, straight into its output. */
#include <string.h>
#include "base/fastdiv.h"
#include "coll.h"
#include "shm_group.h"
#include "base/copy.h"

static int run(struct rlx__op *op) {
  struct rlx__shm_group *g = op->shm;
  size_t es = op->esize, block = op->count * es;
  size_t piece = g->slot / (size_t)g->n & ~(es - 1); /* bytes of each block per step */
  int rc;
  if ((rc = rlx__shmg_begin(g, op)) != RLX_OK)
    return rc;
  for (size_t off = 0; off < block; off += piece) {
    size_t len = block - off < piece ? block - off : piece;
    uint64_t s = ++g->step;
    if ((rc = rlx__shmg_wait_room(g, op, s)) != RLX_OK)
      return rc;
    unsigned char *mine = rlx__shmg_slot(g, g->me, s);
    for (int b = 0; b < g->n; b++)
      rlx__copy(mine + (size_t)b * len, (const char *)op->src + (size_t)b * block + off, len);
    rlx__shmg_arrive(g, s);
    if ((rc = rlx__shmg_wait_arrived(g, op, -1, s)) != RLX_OK)
      return rc;
    /* (g->slot as the size: the pieces are in the slots, never inline) */
    rlx__shm_reduce_slots(op, g, s, g->slot, (size_t)g->me * len, rlx__per_elem(len, es),
                          (char *)op->dst + off);
  }
  return RLX_OK;
}

static size_t setup(struct rlx__op *op) {
  (void)op;
  return 0;
}

const struct rlx__algo rlx__reduce_scatter_shm = {"shm", NULL, setup, NULL, run};
