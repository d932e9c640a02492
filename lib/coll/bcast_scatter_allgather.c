/* Broadcast of large messages: scatter the message's p parts down a
 * binomial tree, then allgather them around a ring (van de Geijn).
 * With v = (rank - root) mod p, part c belongs to v = c. Scatter round i
 * (mask 2^(L-1-i), top down): v mod 2·mask = 0 sends parts
 * [v+mask, min(v+2·mask, p)) to v+mask. Then p-1 ring steps.
 * Cost: (lg p + p - 1)·α + 2n(p-1)/p·β, against binomial's lg p·n·β. */
#include "chunks.h"
#include "coll.h"

static size_t setup(struct rlx__op *op) {
  long lg = rlx__ceil_lg(op->size);
  op->st.tree.v = (op->rank - op->root + op->size) % op->size;
  op->st.tree.lg = lg;
  return 0;
}

static void parts(const struct rlx__op *op, long lo, long hi, size_t *off, size_t *len) {
  size_t p = (size_t)op->size;
  if (hi > op->size)
    hi = op->size;
  *off = rlx__part_start(op->count, p, (size_t)lo) * op->esize;
  *len = rlx__part_start(op->count, p, (size_t)hi) * op->esize - *off;
}

static int round_fn(struct rlx__op *op, int lane, int k, struct rlx__round *r) {
  long v = op->st.tree.v, lg = op->st.tree.lg, p = op->size;
  char *buf = op->dst;
  size_t off, len;
  if (k < lg) {
    long mask = 1L << (lg - 1 - k);
    if (v % (2 * mask) == 0 && v + mask < p) {
      parts(op, v + mask, v + 2 * mask, &off, &len);
      r->n = 1;
      r->x[0].send = 1;
      r->x[0].peer = (int)((v + mask + op->root) % p);
    } else if (v % (2 * mask) == mask) {
      parts(op, v, v + mask, &off, &len);
      r->n = 1;
      r->x[0].send = 0;
      r->x[0].peer = (int)((v - mask + op->root) % p);
    } else {
      return 1;
    }
    r->x[0].buf = buf + off;
    r->x[0].len = len;
    return 1;
  }
  long s = k - lg;
  if (s >= p - 1)
    return 0;
  size_t soff, slen, roff, rlen;
  long sc = (v - s + p) % p, rc = (v - s - 1 + 2 * p) % p;
  parts(op, sc, sc + 1, &soff, &slen);
  parts(op, rc, rc + 1, &roff, &rlen);
  r->n = 2;
  r->x[0].send = 1;
  r->x[0].peer = (int)((v + 1 + op->root) % p);
  r->x[0].buf = buf + soff;
  r->x[0].len = slen;
  r->x[1].send = 0;
  r->x[1].peer = (int)((v - 1 + p + op->root) % p);
  r->x[1].buf = buf + roff;
  r->x[1].len = rlen;
  return 1;
}

const struct rlx__algo rlx__bcast_scatter_allgather = {
    .name = "scatter-allgather",
    .setup = setup,
    .round = round_fn,
};
