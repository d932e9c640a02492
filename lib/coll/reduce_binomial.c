/* Reduce to a root up a binomial tree. With v = (rank - root) mod p, in
 * round i (mask 2^i) the ranks with v mod 2^(i+1) = 2^i send their partial
 * result to v - 2^i and drop out; the ranks with v mod 2^(i+1) = 0 receive
 * from v + 2^i (if it exists) and reduce, lower v's partial first.
 * Cost: ceil(lg p)·(α + n·β + n·γ). */
#include "coll.h"

static size_t setup(struct rlx__op *op) {
  long lg = rlx__ceil_lg(op->size);
  op->st.tree.v = (op->rank - op->root + op->size) % op->size;
  op->st.tree.lg = lg;
  /* receive space, and the partial result on ranks other than the root */
  return 2 * op->count * op->esize;
}

static int round_fn(struct rlx__op *op, int lane, int k, struct rlx__round *r) {
  long v = op->st.tree.v, lg = op->st.tree.lg;
  size_t bytes = op->count * op->esize;
  char *acc = op->rank == op->root ? (char *)op->dst : (char *)op->tmp + bytes;
  char *rtmp = op->tmp;
  if (k == 0) {
    if (acc != op->src) {
      r->copy_dst = acc;
      r->copy_src = op->src;
      r->copy_len = bytes;
    }
    return 1;
  }
  if (k > lg + 1)
    return 0;
  if (k == lg + 1) {
    if (op->rank == op->root && op->rop == RLX_AVG) {
      r->avg_buf = acc;
      r->avg_count = op->count;
    }
    return 1;
  }
  long mask = 1L << (k - 1);
  if (v % (2 * mask) == mask) {
    r->n = 1;
    r->x[0].send = 1;
    r->x[0].peer = (int)((v - mask + op->root) % op->size);
    r->x[0].buf = acc;
    r->x[0].len = bytes;
  } else if (v % (2 * mask) == 0 && v + mask < op->size) {
    r->n = 1;
    r->x[0].send = 0;
    r->x[0].peer = (int)((v + mask + op->root) % op->size);
    r->x[0].buf = rtmp;
    r->x[0].len = bytes;
    r->red_out = acc;
    r->red_a = acc;
    r->red_b = rtmp;
    r->red_count = op->count;
  }
  return 1;
}

const struct rlx__algo rlx__reduce_binomial = {
    .name = "binomial",
    .setup = setup,
    .round = round_fn,
};
