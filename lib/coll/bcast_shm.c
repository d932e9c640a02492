/* Broadcast in a communicator's shared segment (shm_group.h): the root
 * posts a chunk in its slot, the others copy it out; with two slots the
 * root runs up to a chunk ahead of the slowest reader (a small call: up
 * to RLX__SHMG_CELLS - 1 calls ahead), and leaves once it has posted. */
#include <string.h>
#include "coll.h"
#include "shm_group.h"
#include "base/copy.h"

static int run(struct rlx__op *op) {
  struct rlx__shm_group *g = op->shm;
  size_t total = op->count * op->esize, cb = g->slot; /* (whole elements) */
  int rc;
  if ((rc = rlx__shmg_begin(g, op)) != RLX_OK)
    return rc;
  for (size_t off = 0; off < total; off += cb) {
    size_t len = total - off < cb ? total - off : cb;
    uint64_t s = ++g->step;
    if (g->me == op->root) {
      if ((rc = rlx__shmg_post(g, op, s, (const char *)op->src + off, len, total)) != RLX_OK)
        return rc;
    } else {
      rlx__shmg_arrive(g, s); /* here: the root may reuse what we read at s - 2 */
      if ((rc = rlx__shmg_wait_arrived(g, op, op->root, s)) != RLX_OK)
        return rc;
      rlx__copy((char *)op->dst + off, rlx__shmg_data(g, op->root, s, total), len);
    }
  }
  /* The root leaves once its last chunk is posted, as an eager root
   * does, owing the comparison of the others' calls with its own: each of
   * them compares only with the root it names, and a rank naming itself
   * root (which then posts and leaves as well) would go unseen. When one
   * did not match, the root's next call fails, revoked, and so does every
   * rank's (the segment is failed). */
  if (g->me == op->root)
    rlx__shmg_owe(g, op);
  return RLX_OK;
}

static size_t setup(struct rlx__op *op) {
  (void)op;
  return 0;
}

const struct rlx__algo rlx__bcast_shm = {"shm", NULL, setup, NULL, run};
