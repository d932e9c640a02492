/* Reduce-scatter by ring: rank r ends with block r (count elements, or
 * counts[r] for rlx_reduce_scatterv) of the reduction of every rank's p
 * blocks.
 *
 * In step s (0..p-2) rank r sends block (r-s-1) mod p to r+1 and receives
 * block (r-s-2) mod p from r-1, reducing it with its own; the block it
 * receives in the last step is block r, reduced straight into the result.
 * Partial blocks alternate between two scratch blocks, so the input is
 * never written. Big blocks travel as several segments.
 * Cost: (p-1)·α·nseg + n(p-1)/p·β + n(p-1)/p·γ. */
#include "base/tuning.h"
#include "coll.h"

/* Segment size and lanes as the allreduce ring's (lib/tuning.h).
 *
 * rlx_reduce_scatterv (op->counts set) runs the same ring over blocks of
 * counts[b] elements, packed in rank order. Each block travels as at
 * least one segment (an empty frame for an empty block, so a rank that
 * thinks it empty still meets its peer); segment j of a block it does not
 * have is skipped by its sender and its receiver alike (both know every
 * count: they are in the call's signature). */

/* Elements of block b, and where it starts in the input (a sum over the
 * blocks before it: p is small next to a round's copy and reduction). */
static size_t blk_count(const struct rlx__op *op, int b) {
  return op->counts != NULL ? op->counts[b] : op->count;
}

static size_t blk_off(const struct rlx__op *op, int b) {
  if (op->counts == NULL)
    return (size_t)b * op->count;
  size_t off = 0;
  for (int i = 0; i < b; i++)
    off += op->counts[i];
  return off;
}

static size_t setup(struct rlx__op *op) {
  size_t seg = RLX__RING_SEG / op->esize, most = op->count;
  if (op->counts != NULL) {
    most = 0;
    for (int b = 0; b < op->size; b++)
      most = op->counts[b] > most ? op->counts[b] : most;
  }
  op->st.ring.most = (long)most;
  op->st.ring.seg_elems = (long)seg;
  op->st.ring.nseg = most == 0 ? 1 : (long)((most + seg - 1) / seg);
  op->nlanes = rlx__ring_lanes(op, op->st.ring.nseg);
  /* two partial blocks, and a segment per lane to receive into */
  return (2 * most + (size_t)op->nlanes * seg) * op->esize;
}

/* Segment j of block b: its elements (offset *off in the block), or 0
 * with *has 0 when the block has no segment j (segment 0 always exists). */
static size_t seg_of(const struct rlx__op *op, int b, long j, size_t *off, int *has) {
  size_t segn = (size_t)op->st.ring.seg_elems, n = blk_count(op, b);
  *off = (size_t)j * segn;
  *has = j == 0 || *off < n;
  if (!*has || *off >= n)
    return 0;
  return n - *off < segn ? n - *off : segn;
}

static int round_fn(struct rlx__op *op, int lane, int k, struct rlx__round *r) {
  int p = op->size, me = op->rank;
  long nseg = op->st.ring.nseg;
  size_t es = op->esize, most = (size_t)op->st.ring.most * es;
  const char *src = op->src;
  char *work[2] = {(char *)op->tmp, (char *)op->tmp + most};
  char *rtmp = (char *)op->tmp + 2 * most + (size_t)lane * (size_t)op->st.ring.seg_elems * es;
  if (p == 1) {
    if (k > 0 || lane > 0)
      return 0;
    if (src != op->dst) {
      r->copy_dst = op->dst;
      r->copy_src = src;
      r->copy_len = blk_count(op, 0) * es;
    }
    if (op->rop == RLX_AVG) {
      r->avg_buf = op->dst;
      r->avg_count = blk_count(op, 0);
    }
    return 1;
  }
  /* lane round k: segment j = lane + nlanes*(k / (p-1)), step k mod (p-1) */
  long j = lane + (long)op->nlanes * (k / (p - 1));
  if (j >= nseg)
    return 0;
  long s = k % (p - 1);
  int sb = (int)((me - s - 1 + 2 * p) % p), rb = (int)((me - s - 2 + 2 * p) % p);
  int last = s == p - 2, has_s, has_r;
  size_t soff, roff, sn = seg_of(op, sb, j, &soff, &has_s), rn = seg_of(op, rb, j, &roff, &has_r);
  r->n = 0;
  if (has_s) {
    r->x[r->n].send = 1;
    r->x[r->n].peer = (me + 1) % p;
    r->x[r->n].buf = (void *)(s == 0 ? src + (blk_off(op, sb) + soff) * es
                                     : work[(s - 1) % 2] + soff * es);
    r->x[r->n].len = sn * es;
    r->n++;
  }
  if (has_r) {
    r->x[r->n].send = 0;
    r->x[r->n].peer = (me + p - 1) % p;
    r->x[r->n].buf = rtmp;
    r->x[r->n].len = rn * es;
    r->n++;
  }
  if (rn == 0)
    return 1;
  r->red_out = last ? (char *)op->dst + roff * es : work[s % 2] + roff * es;
  r->red_a = rtmp;
  r->red_b = src + (blk_off(op, rb) + roff) * es;
  r->red_count = rn;
  if (last && op->rop == RLX_AVG) {
    r->avg_buf = r->red_out;
    r->avg_count = rn;
  }
  return 1;
}

const struct rlx__algo rlx__reduce_scatter_ring = {
    .name = "ring",
    .setup = setup,
    .round = round_fn,
};

const struct rlx__algo rlx__reduce_scatterv_ring = {
    .name = "ring",
    .setup = setup,
    .round = round_fn,
};
