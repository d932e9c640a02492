/* All-to-all by pairwise exchange: in step s (1..p-1) rank r sends its
 * block for r+s to it and receives the block of r-s from it, straight
 * into place; step 0 copies its own block. A block above RLX__BCAST_SEG
 * bytes goes as several segments, one a round.
 * Cost: (p-1)·(α + n·β) per rank, every link busy once per step. */
#include "base/tuning.h"
#include "coll.h"

static size_t setup(struct rlx__op *op) {
  size_t bytes = op->count * op->esize, seg = RLX__BCAST_SEG - RLX__BCAST_SEG % op->esize;
  op->st.bino.seg_bytes = (long)seg;
  op->st.bino.nseg = bytes == 0 ? 1 : (long)((bytes + seg - 1) / seg);
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
  long i = k - 1, nseg = op->st.bino.nseg;
  if (i >= (long)(p - 1) * nseg)
    return 0;
  int s = (int)(1 + i / nseg);
  size_t off = (size_t)(i % nseg) * segb, len = block - off < segb ? block - off : segb;
  int to = (me + s) % p, from = (me - s + p) % p;
  r->n = 2;
  r->x[0].send = 1;
  r->x[0].peer = to;
  r->x[0].buf = (char *)op->src + (size_t)to * block + off;
  r->x[0].len = len;
  r->x[1].send = 0;
  r->x[1].peer = from;
  r->x[1].buf = (char *)op->dst + (size_t)from * block + off;
  r->x[1].len = len;
  return 1;
}

const struct rlx__algo rlx__alltoall_pairwise = {
    .name = "pairwise",
    .setup = setup,
    .round = round_fn,
};
