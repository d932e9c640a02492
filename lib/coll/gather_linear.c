/* Gather, linearly: every rank sends its block to the root, which takes
 * them straight into place, four peers a round (a round's transfers run
 * at once); a block above RLX__BCAST_SEG bytes goes as several segments.
 * Item i of the root's list (peer v = 1 + i mod (p-1) ranks after it,
 * segment i div (p-1)) travels in round i div RLX__ROUND_MAX, on both
 * sides; round 0 also copies the root's own block into place.
 * Cost: the root receives (p-1)·n bytes; ceil((p-1)·nseg / 4) rounds. */
#include "base/tuning.h"
#include "coll.h"

static size_t setup(struct rlx__op *op) {
  size_t bytes = op->count * op->esize, seg = RLX__BCAST_SEG - RLX__BCAST_SEG % op->esize;
  op->st.bino.seg_bytes = (long)seg;
  op->st.bino.nseg = bytes == 0 ? 1 : (long)((bytes + seg - 1) / seg);
  op->st.bino.vrank = (op->rank - op->root + op->size) % op->size;
  return 0;
}

/* Item i's peer (ranks after the root) and where its segment lies. */
static void item(const struct rlx__op *op, long i, long *v, size_t *off, size_t *len) {
  long p = op->size, nseg = op->st.bino.nseg;
  size_t segb = (size_t)op->st.bino.seg_bytes, block = op->count * op->esize;
  *v = 1 + i % (p - 1);
  *off = (size_t)(i / (p - 1)) * segb;
  *len = block - *off < segb ? block - *off : segb;
  (void)nseg;
}

static int linear_round(struct rlx__op *op, int k, struct rlx__round *r, int to_root) {
  long p = op->size, v = op->st.bino.vrank, total = (p - 1) * op->st.bino.nseg;
  size_t block = op->count * op->esize;
  char *all = to_root ? op->dst : (char *)op->src; /* the root's p blocks */
  if (k == 0 && v == 0) { /* the root's own block */
    char *mine = all + (size_t)op->root * block;
    const char *from = to_root ? op->src : mine;
    char *into = to_root ? mine : op->dst;
    if (from != into && block > 0) {
      r->copy_dst = into;
      r->copy_src = from;
      r->copy_len = block;
    }
  }
  if ((long)k * RLX__ROUND_MAX >= total)
    return k == 0; /* (a round 0 of the root's copy alone) */
  for (long i = (long)k * RLX__ROUND_MAX; i < total && i < (long)(k + 1) * RLX__ROUND_MAX; i++) {
    long pv;
    size_t off, len;
    item(op, i, &pv, &off, &len);
    int peer = (int)((pv + op->root) % p);
    if (v == 0) {
      r->x[r->n].send = !to_root;
      r->x[r->n].peer = peer;
      r->x[r->n].buf = all + (size_t)peer * block + off;
      r->x[r->n].len = len;
      r->n++;
    } else if (pv == v) {
      r->x[r->n].send = to_root;
      r->x[r->n].peer = op->root;
      r->x[r->n].buf = (to_root ? (char *)op->src : (char *)op->dst) + off;
      r->x[r->n].len = len;
      r->n++;
    }
  }
  return 1;
}

static int round_fn(struct rlx__op *op, int lane, int k, struct rlx__round *r) {
  (void)lane;
  return linear_round(op, k, r, 1);
}

const struct rlx__algo rlx__gather_linear = {
    .name = "linear",
    .setup = setup,
    .round = round_fn,
};

static int scatter_round(struct rlx__op *op, int lane, int k, struct rlx__round *r) {
  (void)lane;
  return linear_round(op, k, r, 0);
}

/* Scatter, the same way from the root: its blocks out, four a round. */
const struct rlx__algo rlx__scatter_linear = {
    .name = "linear",
    .setup = setup,
    .round = scatter_round,
};
