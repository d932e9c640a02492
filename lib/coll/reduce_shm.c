/* Reduce to a root in a communicator's shared segment: the steps of the
 * shared-memory allreduce (allreduce_shm.c), with only the root copying
 * the result out. */
#include "coll.h"

static int run(struct rlx__op *op) { return rlx__shm_reduce_run(op, 0); }
static size_t setup(struct rlx__op *op) {
  (void)op;
  return 0;
}

const struct rlx__algo rlx__reduce_shm = {"shm", NULL, setup, NULL, run};
