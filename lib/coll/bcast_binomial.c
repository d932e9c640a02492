/* Broadcast down a binomial tree rooted at the root.
 *
 * With v = (rank - root) mod p, in round i (mask 2^i) every rank with
 * v < 2^i that has a child v + 2^i < p sends to it, and the ranks with
 * 2^i <= v < 2^(i+1) receive from v - 2^i. Messages above SEG bytes go as
 * several segments per tree edge, so no frame exceeds the frame limit.
 * Cost: ceil(lg p)·(α + n·β). Good for small and medium messages; a
 * scatter+allgather broadcast is better for large ones. */
#include "base/tuning.h"
#include "coll.h"

static size_t setup(struct rlx__op *op) {
  long levels = rlx__ceil_lg(op->size);
  size_t bytes = op->count * op->esize;
  op->st.bino.vrank = (op->rank - op->root + op->size) % op->size;
  op->st.bino.levels = levels;
  op->st.bino.seg_bytes = (long)(RLX__BCAST_SEG - RLX__BCAST_SEG % op->esize);
  op->st.bino.nseg = bytes == 0 ? 1 : (long)((bytes + (size_t)op->st.bino.seg_bytes - 1) /
                                              (size_t)op->st.bino.seg_bytes);
  return 0;
}

static int round_fn(struct rlx__op *op, int lane, int k, struct rlx__round *r) {
  long nseg = op->st.bino.nseg, v = op->st.bino.vrank;
  if (k >= op->st.bino.levels * nseg)
    return 0;
  long level = k / nseg, j = k % nseg, mask = 1L << level;
  size_t bytes = op->count * op->esize, segb = (size_t)op->st.bino.seg_bytes;
  size_t off = (size_t)j * segb, len = bytes - off < segb ? bytes - off : segb;
  if (v < mask && v + mask < op->size) {
    r->n = 1;
    r->x[0].send = 1;
    r->x[0].peer = (int)((v + mask + op->root) % op->size);
  } else if (v >= mask && v < 2 * mask) {
    r->n = 1;
    r->x[0].send = 0;
    r->x[0].peer = (int)((v - mask + op->root) % op->size);
  } else {
    return 1; /* nothing to do in this round */
  }
  r->x[0].buf = (char *)op->dst + off;
  r->x[0].len = len;
  return 1;
}

const struct rlx__algo rlx__bcast_binomial = {
    .name = "binomial",
    .setup = setup,
    .round = round_fn,
};
