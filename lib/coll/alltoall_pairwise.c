/* All-to-all by pairwise exchange: in step s (1..p-1) rank r sends its
 * block for r+s to it and receives the block of r-s from it, straight
 * into place; step 0 copies its own block. Up to
 * RLX__A2A_TWO_STEPS_MAX a block, round g runs steps 2g+1 and 2g+2
 * together (two exchanges in flight). A block above RLX__BCAST_SEG bytes
 * goes as several segments, one a round.
 * Cost: (p-1)·(α + n·β) per rank, every link busy once per step. */
#include "base/tuning.h"
#include "coll.h"


static size_t setup(struct rlx__op *op) {
  size_t bytes = op->count * op->esize, seg = RLX__BCAST_SEG - RLX__BCAST_SEG % op->esize;
  op->st.bino.seg_bytes = (long)seg;
  op->st.bino.nseg = bytes == 0 ? 1 : (long)((bytes + seg - 1) / seg);
  /* steps a round runs at once (two transfers each, RLX__ROUND_MAX in all) */
  op->st.bino.levels = bytes <= RLX__A2A_TWO_STEPS_MAX ? 2 : 1;
  return 0;
}

static int round_fn(struct rlx__op *op, int lane, int k, struct rlx__round *r) {
  int p = op->size, me = op->rank;
  size_t block = op->count * op->esize, segb = (size_t)op->st.bino.seg_bytes;
  (void)lane;
  if (k == 0) { /* our own block (src and dst are two buffers: the caller checked) */
    r->copy_dst = (char *)op->dst + (size_t)me * block;
    r->copy_src = (const char *)op->src + (size_t)me * block;
    r->copy_len = block;
    return 1;
  }
  long i = k - 1, nseg = op->st.bino.nseg, steps = op->st.bino.levels;
  long pairs = (p - 1 + steps - 1) / steps;
  if (i >= pairs * nseg)
    return 0;
  size_t off = (size_t)(i % nseg) * segb, len = block - off < segb ? block - off : segb;
  r->n = 0;
  for (int s = (int)(1 + (i / nseg) * steps); s < p && s <= (int)((i / nseg + 1) * steps); s++) {
    int to = (me + s) % p, from = (me - s + p) % p;
    r->x[r->n].send = 1;
    r->x[r->n].peer = to;
    r->x[r->n].buf = (char *)op->src + (size_t)to * block + off;
    r->x[r->n].len = len;
    r->n++;
    r->x[r->n].send = 0;
    r->x[r->n].peer = from;
    r->x[r->n].buf = (char *)op->dst + (size_t)from * block + off;
    r->x[r->n].len = len;
    r->n++;
  }
  return 1;
}

const struct rlx__algo rlx__alltoall_pairwise = {
    .name = "pairwise",
    .setup = setup,
    .round = round_fn,
};
