/* Allreduce by halving-doubling (Rabenseifner): a reduce-scatter by
 * recursive halving, then an allgather by recursive doubling.
 *
 * p ranks, p' = largest power of two <= p, r = p - p'. The first 2r ranks
 * fold as in recursive doubling (even sends all to odd). Among the p'
 * remaining, the vector is cut into p' blocks. Halving: in step i each rank
 * exchanges half of its current block range with the rank p'/2^(i+1) away,
 * keeps the half on its side and reduces it; after lg p' steps it owns one
 * fully reduced block. Doubling runs the same exchanges backwards, sending
 * what it owns and receiving its partner's part straight into place. The
 * odd fold ranks then send the result to the even ones.
 * Cost: 2 lg p'·α + 2n(p'-1)/p'·β + n(p'-1)/p'·γ (+ 2α + 2nβ for the fold):
 * ring's bandwidth at recursive doubling's latency, for medium sizes.
 * Each block's final value is computed on one rank, so every rank holds
 * bitwise the same result. */
#include "chunks.h"
#include "coll.h"
#include "fold.h"

enum { A_POF2, A_REM, A_NEWRANK, A_LG };

static int real_rank(const struct rlx__op *op, long newrank) {
  return newrank < op->st.rd.rem ? (int)(newrank * 2 + 1) : (int)(newrank + op->st.rd.rem);
}

static size_t setup(struct rlx__op *op) {
  long pof2 = 1, lg = 0;
  while (pof2 * 2 <= op->size) {
    pof2 *= 2;
    lg++;
  }
  op->st.rd.pof2 = pof2;
  op->st.rd.rem = op->size - pof2;
  op->st.rd.lg = lg;
  if (op->rank < 2 * op->st.rd.rem)
    op->st.rd.newrank = (op->rank % 2) ? op->rank / 2 : -1;
  else
    op->st.rd.newrank = op->rank - op->st.rd.rem;
  return op->count * op->esize;
}

/* The block range [lo, hi) a rank holds before halving step i (i = 0..lg),
 * which is also what it holds after doubling step lg-1-i. */
static void range(long me, long pof2, long i, long *lo, long *hi) {
  long width = pof2 >> i;
  *lo = (me / width) * width;
  *hi = *lo + width;
}

static void blocks(const struct rlx__op *op, long lo, long hi, size_t *off, size_t *n) {
  size_t pof2 = (size_t)op->st.rd.pof2;
  *off = rlx__part_start(op->count, pof2, (size_t)lo);
  *n = rlx__part_start(op->count, pof2, (size_t)hi) - *off;
}

static int round_fn(struct rlx__op *op, int lane, int k, struct rlx__round *r) {
  long rem = op->st.rd.rem, lg = op->st.rd.lg, me = op->st.rd.newrank, pof2 = op->st.rd.pof2;
  size_t es = op->esize;
  char *dst = op->dst;

  if (k == 0) {
    rlx__fold_round(op, rem, r);
    return 1;
  }
  if (k > 2 * lg + 1)
    return 0;
  if (k == 2 * lg + 1) {
    rlx__unfold_round(op, rem, r);
    return 1;
  }
  if (me < 0)
    return 1; /* folded away until the unfold */
  long lo, hi, mid, keep_lo, keep_hi, give_lo, give_hi;
  size_t koff, kn, goff, gn;
  if (k <= lg) { /* halving step i = k-1 */
    long i = k - 1, half = pof2 >> (i + 1);
    long partner = me ^ half;
    range(me, pof2, i, &lo, &hi);
    mid = lo + half;
    if (me < partner) {
      keep_lo = lo, keep_hi = mid, give_lo = mid, give_hi = hi;
    } else {
      keep_lo = mid, keep_hi = hi, give_lo = lo, give_hi = mid;
    }
    blocks(op, keep_lo, keep_hi, &koff, &kn);
    blocks(op, give_lo, give_hi, &goff, &gn);
    r->n = 2;
    r->x[0].send = 1;
    r->x[0].peer = real_rank(op, partner);
    r->x[0].buf = dst + goff * es;
    r->x[0].len = gn * es;
    r->x[1].send = 0;
    r->x[1].peer = real_rank(op, partner);
    r->x[1].buf = op->tmp;
    r->x[1].len = kn * es;
    r->red_out = dst + koff * es;
    r->red_a = me < partner ? dst + koff * es : op->tmp; /* lower group first */
    r->red_b = me < partner ? op->tmp : dst + koff * es;
    r->red_count = kn;
    if (k == lg && op->rop == RLX_AVG) {
      r->avg_buf = dst + koff * es;
      r->avg_count = kn;
    }
    return 1;
  }
  /* doubling step j = k-lg-1: undo halving step i = lg-1-j */
  long i = lg - 1 - (k - lg - 1), half = pof2 >> (i + 1);
  long partner = me ^ half;
  range(me, pof2, i + 1, &lo, &hi);         /* what we own now */
  range(partner, pof2, i + 1, &give_lo, &give_hi); /* what the partner owns */
  blocks(op, lo, hi, &koff, &kn);
  blocks(op, give_lo, give_hi, &goff, &gn);
  r->n = 2;
  r->x[0].send = 1;
  r->x[0].peer = real_rank(op, partner);
  r->x[0].buf = dst + koff * es;
  r->x[0].len = kn * es;
  r->x[1].send = 0;
  r->x[1].peer = real_rank(op, partner);
  r->x[1].buf = dst + goff * es;
  r->x[1].len = gn * es;
  return 1;
}

const struct rlx__algo rlx__allreduce_rabenseifner = {
    .name = "rabenseifner",
    .setup = setup,
    .round = round_fn,
};
