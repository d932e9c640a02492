/* Allreduce by ring: reduce-scatter, then allgather, in segments.
 *
 * The vector is cut into p chunks. Reduce-scatter: in step s (0..p-2) rank r
 * sends chunk (r-s) mod p to r+1 and receives chunk (r-s-1) mod p from r-1,
 * reducing it into its own; afterwards rank r holds chunk (r+1) mod p fully
 * reduced. Allgather: in step s rank r sends chunk (r+1-s) mod p and receives
 * chunk (r-s) mod p straight into the result. Each step is cut into segments
 * of at most a segment (lib/tuning.h), handled by two lanes that run independently (lane l
 * takes segments l, l+2, ...), so one segment's data flows while the
 * other's is reduced, as in Gloo's ring.
 * Cost: 2(p-1)·α·nseg + 2n(p-1)/p·β + n(p-1)/p·γ: bandwidth-optimal.
 * Every chunk's final value is computed by exactly one rank and copied to
 * the others, so all ranks hold bitwise the same result. */
#include "base/tuning.h"
#include "coll.h"

/* Segment sizes and lanes: lib/tuning.h says what measured them. */

static size_t chunk_start(const struct rlx__op *op, int c) {
  size_t base = op->count / (size_t)op->size, extra = op->count % (size_t)op->size;
  return (size_t)c * base + ((size_t)c < extra ? (size_t)c : extra);
}

static size_t chunk_len(const struct rlx__op *op, int c) {
  return chunk_start(op, c + 1) - chunk_start(op, c);
}

static size_t setup(struct rlx__op *op) {
  int by_ref = rlx__p2p_by_ref(op->p2p);
  size_t seg = (!by_ref                     ? RLX__RING_SEG
                : op->p2p->oversubscribed ? RLX__RING_SEG_CMA_OVERSUBSCRIBED
                                          : RLX__RING_SEG_CMA) /
               op->esize;
  size_t biggest = chunk_len(op, 0);
  if (seg == 0)
    seg = 1;
  op->st.ring.seg_elems = (long)seg;
  op->st.ring.nseg = biggest == 0 ? 1 : (long)((biggest + seg - 1) / seg);
  op->nlanes = rlx__ring_lanes(op, op->st.ring.nseg);
  return (size_t)op->nlanes * seg * op->esize; /* a receive segment per lane */
}

/* Elements [*off, *off + *n) of chunk c that segment j covers. */
static void segment(const struct rlx__op *op, int c, long j, size_t *off, size_t *n) {
  size_t seg = (size_t)op->st.ring.seg_elems, len = chunk_len(op, c);
  size_t lo = (size_t)j * seg;
  size_t hi = lo + seg;
  if (lo > len)
    lo = len;
  if (hi > len)
    hi = len;
  *off = chunk_start(op, c) + lo;
  *n = hi - lo;
}

static int round_fn(struct rlx__op *op, int lane, int k, struct rlx__round *r) {
  int p = op->size, me = op->rank;
  long nseg = op->st.ring.nseg;
  long steps = p - 1;
  char *dst = op->dst;
  const char *src = op->src;
  size_t es = op->esize;

  if (p == 1) {
    if (k > 0 || lane > 0)
      return 0;
    if (src != dst) {
      r->copy_dst = dst;
      r->copy_src = src;
      r->copy_len = op->count * es;
    }
    if (op->rop == RLX_AVG) {
      r->avg_buf = dst;
      r->avg_count = op->count;
    }
    return 1;
  }
  /* lane round k: segment j = lane + nlanes*(k / 2 steps), ring step k mod 2 steps */
  long j = lane + (long)op->nlanes * (k / (2 * steps));
  if (j >= nseg)
    return 0;
  int phase = (k % (2 * steps)) >= steps; /* 0 reduce-scatter, 1 allgather */
  long s = (k % (2 * steps)) % steps;
  char *tmp = (char *)op->tmp + (size_t)lane * (size_t)op->st.ring.seg_elems * es;
  int right = (me + 1) % p, left = (me + p - 1) % p;
  size_t soff, sn, roff, rn;

  if (phase == 0) {
    int sc = (int)((me - s + p) % p), rc = (int)((me - s - 1 + 2 * p) % p);
    segment(op, sc, j, &soff, &sn);
    segment(op, rc, j, &roff, &rn);
    r->n = 2;
    r->x[0].send = 1;
    r->x[0].peer = right;
    r->x[0].buf = (void *)((s == 0 ? src : dst) + soff * es);
    r->x[0].len = sn * es;
    r->x[1].send = 0;
    r->x[1].peer = left;
    r->x[1].buf = tmp;
    r->x[1].len = rn * es;
    r->red_out = dst + roff * es;
    r->red_a = tmp;
    r->red_b = src + roff * es;
    r->red_count = rn;
    if (s == steps - 1 && op->rop == RLX_AVG) {
      r->avg_buf = dst + roff * es;
      r->avg_count = rn;
    }
  } else {
    int sc = (int)((me + 1 - s + p) % p), rc = (int)((me - s + p) % p);
    segment(op, sc, j, &soff, &sn);
    segment(op, rc, j, &roff, &rn);
    r->n = 2;
    r->x[0].send = 1;
    r->x[0].peer = right;
    r->x[0].buf = dst + soff * es;
    r->x[0].len = sn * es;
    r->x[1].send = 0;
    r->x[1].peer = left;
    r->x[1].buf = dst + roff * es;
    r->x[1].len = rn * es;
  }
  return 1;
}

const struct rlx__algo rlx__allreduce_ring = {
    .name = "ring",
    .setup = setup,
    .round = round_fn,
};
