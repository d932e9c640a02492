/* Allgather by recursive doubling, for a power-of-two rank count: in step i
 * rank r swaps everything it has gathered (2^i blocks) with rank r ^ 2^i,
 * receiving straight into place.
 * Cost: lg p·α + n(p-1)/p·β: fewest rounds, for small blocks. */
#include "coll.h"

static size_t setup(struct rlx__op *op) {
  long lg = rlx__ceil_lg(op->size);
  op->st.rounds.steps = lg;
  return 0;
}

static int round_fn(struct rlx__op *op, int lane, int k, struct rlx__round *r) {
  int me = op->rank;
  size_t block = op->count * op->esize;
  char *dst = op->dst;
  if (k == 0) {
    if (op->src != dst + (size_t)me * block) {
      r->copy_dst = dst + (size_t)me * block;
      r->copy_src = op->src;
      r->copy_len = block;
    }
    return 1;
  }
  if (k > op->st.rounds.steps)
    return 0;
  long mask = 1L << (k - 1);
  int partner = (int)(me ^ mask);
  size_t mine = (size_t)((me / mask) * mask), theirs = (size_t)((partner / mask) * mask);
  r->n = 2;
  r->x[0].send = 1;
  r->x[0].peer = partner;
  r->x[0].buf = dst + mine * block;
  r->x[0].len = (size_t)mask * block;
  r->x[1].send = 0;
  r->x[1].peer = partner;
  r->x[1].buf = dst + theirs * block;
  r->x[1].len = (size_t)mask * block;
  return 1;
}

const struct rlx__algo rlx__allgather_rd = {
    .name = "recursive-doubling",
    .alias = "rd",
    .setup = setup,
    .round = round_fn,
};
