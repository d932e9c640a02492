/* Allgather by ring: in step s (0..p-2) rank r sends block (r-s) mod p to
 * r+1 and receives block (r-s-1) mod p from r-1, straight into place; big
 * blocks travel as several segments.
 * Cost: (p-1)·α·nseg + n(p-1)/p·β, bandwidth-optimal for any p. */
#include "base/tuning.h"
#include "coll.h"

static size_t setup(struct rlx__op *op) {
  size_t seg = RLX__ALLGATHER_SEG / op->esize;
  op->st.ring.seg_elems = (long)seg;
  op->st.ring.nseg = op->count == 0 ? 1 : (long)((op->count + seg - 1) / seg);
  op->nlanes = rlx__ring_lanes(op, op->st.ring.nseg);
  return 0;
}

static int round_fn(struct rlx__op *op, int lane, int k, struct rlx__round *r) {
  int p = op->size, me = op->rank;
  long nseg = op->st.ring.nseg;
  size_t es = op->esize, block = op->count * es;
  char *dst = op->dst;
  if (k == 0) { /* our own block into place (lane 0 does it; others idle) */
    if (lane > 0)
      return 1;
    if (op->src != dst + (size_t)me * block) {
      r->copy_dst = dst + (size_t)me * block;
      r->copy_src = op->src;
      r->copy_len = block;
    }
    return 1;
  }
  k--;
  if (p == 1)
    return 0;
  long j = lane + (long)op->nlanes * (k / (p - 1));
  if (j >= nseg)
    return 0;
  long s = k % (p - 1);
  size_t segb = (size_t)op->st.ring.seg_elems * es;
  size_t off = (size_t)j * segb, len = block - off < segb ? block - off : segb;
  int sb = (int)((me - s + p) % p), rb = (int)((me - s - 1 + 2 * p) % p);
  r->n = 2;
  r->x[0].send = 1;
  r->x[0].peer = (me + 1) % p;
  r->x[0].buf = dst + (size_t)sb * block + off;
  r->x[0].len = len;
  r->x[1].send = 0;
  r->x[1].peer = (me + p - 1) % p;
  r->x[1].buf = dst + (size_t)rb * block + off;
  r->x[1].len = len;
  return 1;
}

const struct rlx__algo rlx__allgather_ring = {
    .name = "ring",
    .setup = setup,
    .round = round_fn,
};
