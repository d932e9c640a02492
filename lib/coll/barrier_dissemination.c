/* Barrier by dissemination: in round i every rank sends an empty frame to
 * rank + 2^i and waits for one from rank - 2^i (mod p). After ceil(lg p)
 * rounds each rank has heard, directly or not, from every other.
 * Cost: ceil(lg p)·α, for any p. */
#include "coll.h"

static size_t setup(struct rlx__op *op) {
  long levels = rlx__ceil_lg(op->size);
  op->st.rounds.steps = levels;
  return 0;
}

static int round_fn(struct rlx__op *op, int lane, int k, struct rlx__round *r) {
  if (k >= op->st.rounds.steps)
    return 0;
  int d = (int)((1L << k) % op->size);
  r->n = 2;
  r->x[0].send = 1;
  r->x[0].peer = (op->rank + d) % op->size;
  r->x[0].buf = NULL;
  r->x[0].len = 0;
  r->x[1].send = 0;
  r->x[1].peer = (op->rank - d + op->size) % op->size;
  r->x[1].buf = NULL;
  r->x[1].len = 0;
  return 1;
}

const struct rlx__algo rlx__barrier_dissemination = {
    .name = "dissemination",
    .setup = setup,
    .round = round_fn,
};
