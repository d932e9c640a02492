/* Reduce-scatter by ring: rank r ends with block r (count elements) of the
 * reduction of every rank's p blocks.
 *
 * In step s (0..p-2) rank r sends block (r-s-1) mod p to r+1 and receives
 * block (r-s-2) mod p from r-1, reducing it with its own; the block it
 * receives in the last step is block r, reduced straight into the result.
 * Partial blocks alternate between two scratch blocks, so the input is
 * never written. Big blocks travel as several segments.
 * Cost: (p-1)·α·nseg + n(p-1)/p·β + n(p-1)/p·γ. */
#include "base/tuning.h"
#include "coll.h"

/* Segment size and lanes as the allreduce ring's (lib/tuning.h). */

static size_t setup(struct rlx__op *op) {
  size_t seg = RLX__RING_SEG / op->esize;
  op->st.ring.seg_elems = (long)seg;
  op->st.ring.nseg = op->count == 0 ? 1 : (long)((op->count + seg - 1) / seg);
  op->nlanes = rlx__ring_lanes(op, op->st.ring.nseg);
  /* two partial blocks, and a segment per lane to receive into */
  return (2 * op->count + (size_t)op->nlanes * seg) * op->esize;
}

static int round_fn(struct rlx__op *op, int lane, int k, struct rlx__round *r) {
  int p = op->size, me = op->rank;
  long nseg = op->st.ring.nseg;
  size_t es = op->esize, block = op->count * es;
  const char *src = op->src;
  char *work[2] = {(char *)op->tmp, (char *)op->tmp + block};
  char *rtmp = (char *)op->tmp + 2 * block + (size_t)lane * (size_t)op->st.ring.seg_elems * es;
  if (p == 1) {
    if (k > 0 || lane > 0)
      return 0;
    if (src != op->dst) {
      r->copy_dst = op->dst;
      r->copy_src = src;
      r->copy_len = block;
    }
    if (op->rop == RLX_AVG) {
      r->avg_buf = op->dst;
      r->avg_count = op->count;
    }
    return 1;
  }
  /* lane round k: segment j = lane + nlanes*(k / (p-1)), step k mod (p-1) */
  long j = lane + (long)op->nlanes * (k / (p - 1));
  if (j >= nseg)
    return 0;
  long s = k % (p - 1);
  size_t segn = (size_t)op->st.ring.seg_elems;
  size_t off = (size_t)j * segn, n = op->count - off < segn ? op->count - off : segn;
  int sb = (int)((me - s - 1 + 2 * p) % p), rb = (int)((me - s - 2 + 2 * p) % p);
  int last = s == p - 2;
  r->n = 2;
  r->x[0].send = 1;
  r->x[0].peer = (me + 1) % p;
  r->x[0].buf = (void *)(s == 0 ? src + (size_t)sb * block + off * es : work[(s - 1) % 2] + off * es);
  r->x[0].len = n * es;
  r->x[1].send = 0;
  r->x[1].peer = (me + p - 1) % p;
  r->x[1].buf = rtmp;
  r->x[1].len = n * es;
  r->red_out = last ? (char *)op->dst + off * es : work[s % 2] + off * es;
  r->red_a = rtmp;
  r->red_b = src + (size_t)rb * block + off * es;
  r->red_count = n;
  if (last && op->rop == RLX_AVG) {
    r->avg_buf = r->red_out;
    r->avg_count = n;
  }
  return 1;
}

const struct rlx__algo rlx__reduce_scatter_ring = {
    .name = "ring",
    .setup = setup,
    .round = round_fn,
};
