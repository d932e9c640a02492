/* rlx_scatterv in a communicator's shared segment (shm_group.h), for
 * blocking calls: the root streams (shm_stream.h) a header, whose entry
 * for rank j says where j's block is in the stream and its bytes, then
 * the blocks, as a broadcast would; every other rank reads the header at
 * the call's first step, so all take the steps the root's stream takes,
 * and copies out its block. Only the root's stream moves: the root of a
 * small call leaves once it is posted, as a small scatter's root does,
 * and owes the comparison of the others' calls with its own
 * (rlx__shmg_owe).
 *
 * Blocks from RLX__SHMG_REF_MIN bytes go by reference where copies by
 * reference are on (RLX_CMA): each receiver reads its block straight
 * from the root's buffer; then one more step tells the root its buffer is
 * free, and every rank whether a copy failed anywhere, when the call runs
 * again with every block streamed, as do the segment's later ones.
 *
 * A receiver whose block in the header differs from the count it
 * expects fails the call with RLX_ERR_MISMATCH naming both sizes, and the
 * segment: the root learns it at its next call (revoked). */
#include <string.h>
#include "base/internal.h"
#include "transport/p2p.h"
#include "coll.h"
#include "shm_group.h"
#include "shm_stream.h"
#include "base/copy.h"

/* The root's stream (its entries and header in op->tmp). */
static int post_stream(struct rlx__shm_group *g, struct rlx__op *op, int refs_ok,
                       uint64_t *refs) {
  struct rlx__shms_entry *ent = op->tmp;
  unsigned char *hdr = (unsigned char *)(ent + g->n);
  uint64_t all = rlx__shms_header_bytes(g->n, 0);
  for (int j = 0; j < g->n; j++)
    all += j == g->me ? 0 : op->scounts[j] * op->esize;
  if (all <= RLX__SHMS_CELL_BYTES) { /* (all in the cell: nothing to plan) */
    uint64_t s = ++g->step;
    int rc = rlx__shms_post_cell(g, op, s, all);
    if (rc == RLX_OK)
      rlx__shmg_arrive(g, s);
    *refs = 0;
    return rc;
  }
  /* (a call whose stream fits in one step streams it all: the root then
   * leaves at once, where the readers by reference would keep it a step) */
  struct rlx__shms_plan plan;
  rlx__shms_plan(g, op, refs_ok && rlx__shms_steps(g, all) > 1, ent, hdr, &plan);
  for (uint64_t k = 0; k < plan.h.steps; k++) {
    uint64_t s = ++g->step;
    int rc = rlx__shms_post(g, op, s, k, ent, hdr, &plan);
    if (rc != RLX_OK)
      return rc;
    rlx__shmg_arrive(g, s);
  }
  *refs = plan.h.refs;
  return RLX_OK;
}

/* A receiver: its block out of the root's stream; *failed when its copy
 * by reference failed. */
static int read_stream(struct rlx__shm_group *g, struct rlx__op *op, uint64_t *refs,
                       int *failed) {
  int root = op->root, rc;
  size_t lo, at, len;
  struct rlx__shms_entry e = {0, 0};
  uint64_t steps = 1, want = op->count * op->esize;
  for (uint64_t k = 0; k < steps; k++) {
    uint64_t s = ++g->step;
    size_t cap = rlx__shms_span(g, k, &lo);
    rlx__shmg_arrive(g, s); /* (the root may reuse what we read at s - 2) */
    if ((rc = rlx__shmg_wait_arrived(g, op, root, s)) != RLX_OK)
      return rc;
    if (k == 0) {
      struct rlx__shms_head h;
      rlx__shms_header_get(g, root, s, g->me, &h, &e);
      steps = h.steps;
      *refs = h.refs;
      if (e.len != want)
        return rlx__shms_mismatch(op, g, root, e.len, g->me, want);
      if (rlx__shms_by_ref(h.refs, e.len)) {
        int pid = rlx__shms_ref_pid(op, g, root, h.pid, &rc);
        if (pid < 0)
          return rc;
        *failed = rlx__cma_read(pid, e.off, op->dst, e.len) != 0;
        e.len = 0; /* (nothing of it in the stream) */
      } else if (e.off + e.len <= RLX__SHMS_CELL_BYTES) { /* (a small call's) */
        rlx__shms_get_cell(g, root, s, e.off, op->dst, e.len);
        e.len = 0;
      }
    }
    if ((len = rlx__shms_overlap(e.off, e.len, lo, cap, &at)) > 0)
      rlx__shms_move(g, root, s, k, at, (char *)op->dst + (at - e.off), len, 1);
  }
  return RLX_OK;
}

static int stream(struct rlx__op *op, int refs_ok) {
  struct rlx__shm_group *g = op->shm;
  int rc, failed = 0, root = g->me == op->root;
  uint64_t refs = 0;
  if ((rc = rlx__shmg_begin(g, op)) != RLX_OK)
    return rc;
  rc = root ? post_stream(g, op, refs_ok, &refs) : read_stream(g, op, &refs, &failed);
  if (rc != RLX_OK)
    return rc;
  if (root) /* (its call compared with the others' later: it waited for none at the first step) */
    rlx__shmg_owe(g, op);
  if (refs == 0)
    return RLX_OK;
  return rlx__shms_refs_done(g, op, failed);
}

static int scatterv(struct rlx__op *op) {
  struct rlx__shm_group *g = op->shm;
  size_t es = op->esize;
  if (g->me == op->root && op->count > 0) {
    const char *own = (const char *)op->src + op->sdispls[g->me] * es;
    if (own != op->dst) /* (in place: the root's block is there) */
      rlx__copy(op->dst, own, op->count * es);
  }
  return rlx__shms_run(op, "rlx_scatterv", stream);
}

static size_t setup(struct rlx__op *op) {
  return (size_t)op->size * sizeof(struct rlx__shms_entry) + rlx__shms_header_bytes(op->size, 1);
}

/* (where the even counts go in op->tmp: after the entries, aligned) */
static size_t even_at(struct rlx__op *op) {
  return (setup(op) + sizeof(size_t) - 1) / sizeof(size_t) * sizeof(size_t);
}

/* rlx_scatter's big blocks (RLX__SHMG_SCATTER_REF_FROM): the same stream,
 * block j count elements at j x count, so that every receiver reads its
 * block from the root's buffer by reference at once, where
 * exchange_shm.c's scatter posts every chunk through the root's slots
 * for all to copy out (the counts made in op->tmp, after the entries). */
static int scatter(struct rlx__op *op) {
  size_t *c = (size_t *)((char *)op->tmp + even_at(op)), *d = c + op->size;
  for (int j = 0; j < op->size; j++) {
    c[j] = op->count;
    d[j] = (size_t)j * op->count;
  }
  op->scounts = c;
  op->sdispls = d;
  return scatterv(op);
}

static size_t setup_even(struct rlx__op *op) {
  return even_at(op) + 2 * (size_t)op->size * sizeof(size_t);
}

const struct rlx__algo rlx__scatterv_shm = {"shm", NULL, setup, NULL, scatterv};
const struct rlx__algo rlx__scatter_shm_big = {"shm", NULL, setup_even, NULL, scatter};
