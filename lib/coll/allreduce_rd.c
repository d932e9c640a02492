/* Allreduce by recursive doubling, for small messages.
 *
 * p ranks, p' = the largest power of two <= p, r = p - p'.
 *   fold:   among the first 2r ranks, each even rank sends its vector to the
 *           odd rank above it, which reduces; the even ranks then sit out.
 *   double: lg p' rounds among the p' remaining ranks; in round i each
 *           exchanges its whole vector with the rank 2^i away and reduces.
 *   unfold: the odd ranks send the result back to the even ones.
 * Cost: (lg p' + 2[r>0])·α + n·(lg p' + 2[r>0])·β + n·lg p'·γ.
 * Latency-optimal; bandwidth-poor for large n (every round moves all n).
 * Each pair reduces as (lower group) op (higher group), so both sides of a
 * pair, and so every rank, get the bitwise same result. */
#include "coll.h"
#include "fold.h"

enum { A_POF2, A_REM, A_NEWRANK, A_LG };

static int world_of(const struct rlx__op *op, int newrank) {
  long rem = op->st.rd.rem;
  return newrank < rem ? newrank * 2 + 1 : newrank + (int)rem;
}

static size_t setup(struct rlx__op *op) {
  long pof2 = 1, lg = 0;
  while (pof2 * 2 <= op->size) {
    pof2 *= 2;
    lg++;
  }
  long rem = op->size - pof2;
  op->st.rd.pof2 = pof2;
  op->st.rd.rem = rem;
  op->st.rd.lg = lg;
  if (op->rank < 2 * rem)
    op->st.rd.newrank = (op->rank % 2) ? op->rank / 2 : -1;
  else
    op->st.rd.newrank = op->rank - rem;
  return op->count * op->esize;
}

static int round_fn(struct rlx__op *op, int lane, int k, struct rlx__round *r) {
  size_t bytes = op->count * op->esize;
  long rem = op->st.rd.rem, lg = op->st.rd.lg, me = op->st.rd.newrank;

  if (k == 0) { /* fold, or move the input into place */
    rlx__fold_round(op, rem, r);
    return 1;
  }
  if (k <= lg) {
    if (me < 0)
      return 1; /* folded away: an empty round */
    long partner_new = me ^ (1L << (k - 1));
    int partner = world_of(op, (int)partner_new);
    r->n = 2;
    r->x[0].send = 1;
    r->x[0].peer = partner;
    r->x[0].buf = op->dst;
    r->x[0].len = bytes;
    r->x[1].send = 0;
    r->x[1].peer = partner;
    r->x[1].buf = op->tmp;
    r->x[1].len = bytes;
    r->red_out = op->dst;
    r->red_a = partner_new < me ? op->tmp : op->dst;
    r->red_b = partner_new < me ? op->dst : op->tmp;
    r->red_count = op->count;
    return 1;
  }
  if (k == lg + 1) { /* unfold, then average */
    rlx__unfold_round(op, rem, r);
    if (op->rop == RLX_AVG) {
      r->avg_buf = op->dst;
      r->avg_count = op->count;
    }
    return 1;
  }
  return 0;
}

const struct rlx__algo rlx__allreduce_rd = {
    .name = "recursive-doubling",
    .alias = "rd",
    .setup = setup,
    .round = round_fn,
};
