/* The uneven collectives, blocks of a size per rank (rlx_gatherv,
 * rlx_scatterv, rlx_allgatherv, rlx_alltoallv), point to point and
 * straight into place. A block above RLX__BCAST_SEG bytes goes as several
 * segments. What a rank knows differs by call (gatherv's senders know only
 * their own block), so a transfer's round, which keys its frames, depends
 * only on what both ends know: the peer and the segment index.
 *   gatherv, scatterv (linear): segment j of the block of the rank v ranks
 *     after the root travels in round j*G + (v-1)/4, G = ceil((p-1)/4):
 *     the root handles four peers a round.
 *   alltoallv (pairwise): in step s (1..p-1) rank r sends to r+s and
 *     receives from r-s; segment j of step s travels in round
 *     (s-1)*SEGS_MAX + j + 1 (round 0: its own block).
 *   allgatherv (ring): in step s (0..p-2) rank r sends block (r-s) to r+1
 *     and receives block (r-s-1) from r-1; segment j in round
 *     s*SEGS_MAX + j + 1.
 * A step's rounds past its blocks' last segments are empty, and skipped
 * (rlx__round's skip_to): a step of small blocks is one round, not
 * SEGS_MAX (16 rounds a step made a small alltoallv at 16 ranks 2.2x
 * vader's time, most of it walking empty rounds).
 * A block whose sender and receiver disagree on its size fails the call
 * with RLX_ERR_MISMATCH (the frame's length is checked), naming both
 * sizes. */
#include "base/tuning.h"
#include "coll.h"

/* Segments per block at most: 1 GiB blocks (RLX__UNEVEN_BLOCK_MAX, the
 * callers refuse more) of 64 MiB segments. */
#define SEGS_MAX ((long)(RLX__UNEVEN_BLOCK_MAX / RLX__BCAST_SEG))

static size_t segb(const struct rlx__op *op) {
  return RLX__BCAST_SEG - RLX__BCAST_SEG % op->esize;
}

static long nseg_of(const struct rlx__op *op, size_t count) {
  size_t bytes = count * op->esize, s = segb(op);
  return bytes == 0 ? 0 : (long)((bytes + s - 1) / s);
}

/* Bytes of segment j of a block of count elements. */
static size_t seg_len(const struct rlx__op *op, size_t count, long j, size_t *off) {
  size_t bytes = count * op->esize, s = segb(op);
  *off = (size_t)j * s;
  return bytes - *off < s ? bytes - *off : s;
}

static size_t setup(struct rlx__op *op) {
  long most = 0;
  if (op->counts != NULL) /* (a rank that knows every block: the root, allgatherv) */
    for (int r = 0; r < op->size; r++)
      if (nseg_of(op, op->counts[r]) > most)
        most = nseg_of(op, op->counts[r]);
  if (op->scounts != NULL)
    for (int r = 0; r < op->size; r++)
      if (nseg_of(op, op->scounts[r]) > most)
        most = nseg_of(op, op->scounts[r]);
  if (nseg_of(op, op->count) > most)
    most = nseg_of(op, op->count);
  op->st.bino.nseg = most;
  op->st.bino.vrank = (op->rank - op->root + op->size) % op->size;
  return 0;
}

/* ---- gatherv, scatterv ------------------------------------------------------- */

static int linear_v(struct rlx__op *op, int k, struct rlx__round *r, int to_root) {
  long p = op->size, v = op->st.bino.vrank, groups = (p - 1 + RLX__ROUND_MAX - 1) / RLX__ROUND_MAX;
  size_t es = op->esize;
  if (k == 0 && v == 0) { /* the root's own block */
    const size_t *c = to_root ? op->counts : op->scounts, *d = to_root ? op->displs : op->sdispls;
    char *mine = (char *)(to_root ? op->dst : (void *)op->src) + d[op->root] * es;
    const char *from = to_root ? op->src : mine;
    char *into = to_root ? mine : op->dst;
    if (from != into && c[op->root] > 0) {
      r->copy_dst = into;
      r->copy_src = from;
      r->copy_len = c[op->root] * es;
    }
  }
  if (p == 1 || k >= groups * op->st.bino.nseg)
    return k == 0;
  long j = k / groups, g = k % groups;
  if (v == 0) {
    const size_t *c = to_root ? op->counts : op->scounts, *d = to_root ? op->displs : op->sdispls;
    char *all = to_root ? op->dst : (char *)op->src;
    for (long pv = 1 + g * RLX__ROUND_MAX; pv < p && pv <= (g + 1) * RLX__ROUND_MAX; pv++) {
      int peer = (int)((pv + op->root) % p);
      if (j >= nseg_of(op, c[peer]) && !(j == 0 && c[peer] == 0))
        continue;
      size_t off, len = c[peer] ? seg_len(op, c[peer], j, &off) : (off = 0, 0);
      r->x[r->n].send = !to_root;
      r->x[r->n].peer = peer;
      r->x[r->n].buf = all + d[peer] * es + off;
      r->x[r->n].len = len;
      r->n++;
    }
  } else if ((v - 1) / RLX__ROUND_MAX == g &&
             (j < nseg_of(op, op->count) || (j == 0 && op->count == 0))) {
    size_t off, len = op->count ? seg_len(op, op->count, j, &off) : (off = 0, 0);
    r->n = 1;
    r->x[0].send = to_root;
    r->x[0].peer = op->root;
    r->x[0].buf = (to_root ? (char *)op->src : (char *)op->dst) + off;
    r->x[0].len = len;
  }
  return 1;
}

static int gatherv_round(struct rlx__op *op, int lane, int k, struct rlx__round *r) {
  (void)lane;
  return linear_v(op, k, r, 1);
}

static int scatterv_round(struct rlx__op *op, int lane, int k, struct rlx__round *r) {
  (void)lane;
  return linear_v(op, k, r, 0);
}

/* (A block of 0 elements still sends an empty frame: the root then knows
 * its sender agreed, and a sender's 0 against the root's 5 is a mismatch,
 * not a wait.) */
static size_t setup_linear(struct rlx__op *op) {
  setup(op);
  if (op->st.bino.nseg == 0)
    op->st.bino.nseg = 1;
  return 0;
}

const struct rlx__algo rlx__gatherv_linear = {
    .name = "linear",
    .setup = setup_linear,
    .round = gatherv_round,
};

const struct rlx__algo rlx__scatterv_linear = {
    .name = "linear",
    .setup = setup_linear,
    .round = scatterv_round,
};

/* ---- alltoallv ------------------------------------------------------------- */

static int alltoallv_round(struct rlx__op *op, int lane, int k, struct rlx__round *r) {
  int p = op->size, me = op->rank;
  size_t es = op->esize;
  (void)lane;
  if (k == 0) {
    const char *from = (const char *)op->src + op->sdispls[me] * es;
    char *into = (char *)op->dst + op->displs[me] * es;
    if (op->counts[me] > 0 && from != into) {
      r->copy_dst = into;
      r->copy_src = from;
      r->copy_len = op->counts[me] * es;
    }
    return 1;
  }
  long i = k - 1;
  if (i >= (long)(p - 1) * SEGS_MAX)
    return 0;
  int s = (int)(1 + i / SEGS_MAX), to = (me + s) % p, from = (me - s + p) % p;
  long j = i % SEGS_MAX;
  size_t sc = op->scounts[to], rc = op->counts[from];
  int sends = j < nseg_of(op, sc) || (j == 0 && sc == 0);
  int recvs = j < nseg_of(op, rc) || (j == 0 && rc == 0);
  if (sends) {
    size_t off, len = sc ? seg_len(op, sc, j, &off) : (off = 0, 0);
    r->x[r->n].send = 1;
    r->x[r->n].peer = to;
    r->x[r->n].buf = (char *)op->src + op->sdispls[to] * es + off;
    r->x[r->n].len = len;
    r->n++;
  }
  if (recvs) {
    size_t off, len = rc ? seg_len(op, rc, j, &off) : (off = 0, 0);
    r->x[r->n].send = 0;
    r->x[r->n].peer = from;
    r->x[r->n].buf = (char *)op->dst + op->displs[from] * es + off;
    r->x[r->n].len = len;
    r->n++;
  }
  if (r->n == 0) /* this step's blocks are done: on to the next step */
    r->skip_to = k + (SEGS_MAX - j);
  return 1;
}

const struct rlx__algo rlx__alltoallv_pairwise = {
    .name = "pairwise",
    .setup = setup,
    .round = alltoallv_round,
};

/* ---- allgatherv ------------------------------------------------------------ */

static int allgatherv_round(struct rlx__op *op, int lane, int k, struct rlx__round *r) {
  int p = op->size, me = op->rank;
  size_t es = op->esize;
  long per = SEGS_MAX; /* (not the largest block's: ranks that disagree on one must not
                         * disagree on every round after it, and wait instead of failing) */
  (void)lane;
  if (k == 0) {
    char *into = (char *)op->dst + op->displs[me] * es;
    if (op->counts[me] > 0 && (const char *)op->src != into) { /* (count: the total) */
      r->copy_dst = into;
      r->copy_src = op->src;
      r->copy_len = op->counts[me] * es;
    }
    return 1;
  }
  long i = k - 1;
  if (p == 1 || i >= (long)(p - 1) * per)
    return 0;
  int s = (int)(i / per);
  long j = i % per;
  int sb = (me - s + p) % p, rb = (me - s - 1 + 2 * p) % p;
  size_t sc = op->counts[sb], rc = op->counts[rb];
  if (j < nseg_of(op, sc) || (j == 0 && sc == 0)) {
    size_t off, len = sc ? seg_len(op, sc, j, &off) : (off = 0, 0);
    r->x[r->n].send = 1;
    r->x[r->n].peer = (me + 1) % p;
    r->x[r->n].buf = (char *)op->dst + op->displs[sb] * es + off;
    r->x[r->n].len = len;
    r->n++;
  }
  if (j < nseg_of(op, rc) || (j == 0 && rc == 0)) {
    size_t off, len = rc ? seg_len(op, rc, j, &off) : (off = 0, 0);
    r->x[r->n].send = 0;
    r->x[r->n].peer = (me + p - 1) % p;
    r->x[r->n].buf = (char *)op->dst + op->displs[rb] * es + off;
    r->x[r->n].len = len;
    r->n++;
  }
  if (r->n == 0) /* this step's blocks are done: on to the next step */
    r->skip_to = k + (per - j);
  return 1;
}

const struct rlx__algo rlx__allgatherv_ring = {
    .name = "ring",
    .setup = setup,
    .round = allgatherv_round,
};
