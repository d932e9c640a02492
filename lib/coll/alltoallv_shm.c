/* alltoallv in a communicator's shared segment (shm_group.h), for
 * blocking calls. Each rank knows only its own row of the count matrix,
 * so nothing about the sizes can pick the path or the number of steps
 * before the call: every rank streams what it sends through its data
 * cell and slot, and the stream starts with a header that tells the
 * others the rest.
 *
 * Rank r's stream (shm_stream.h): a header (the steps the stream takes;
 * per rank j the offset of its block for j in the stream, or its address
 * when it goes by reference, and that block's bytes; with references,
 * r's pid), then its streamed blocks in rank order (the header is compact
 * for small calls, 24 bytes at 2 ranks: with the data it comes in the
 * rank's cell). Step k of the call carries the stream's step k of every
 * rank. A rank posts its part of each step, waits for everyone's, and
 * copies out of each sender's chunk the part that is its block; the call
 * takes as many steps as the longest stream needs (every rank reads
 * every header at step 0, so all agree), a rank whose stream has ended
 * posting empty steps.
 *
 * Blocks from RLX__SHMG_REF_MIN bytes go by reference where copies by
 * reference are on (RLX_CMA): the receiver reads them straight from the
 * sender's buffer with process_vm_readv once it has the header, one copy
 * instead of two, all receivers at once. Then one more step tells the
 * senders that their buffers are free, and whether a copy failed (ptrace
 * rules, a sandbox): if one did anywhere, every rank knows it at that
 * step, and the call runs again with every block streamed, as do the
 * segment's later calls.
 *
 * Counts that disagree: the receiver of a block whose size in the
 * sender's header differs from the count it expects fails the call with
 * RLX_ERR_MISMATCH before copying anything, naming both sizes, and fails
 * the segment, which ends the call of any rank still waiting in it (a
 * rank that had already finished learns it at its next call: revoked),
 * as the point-to-point algorithm does. */
#include <stdio.h>
#include <string.h>
#include "base/internal.h"
#include "base/tuning.h"
#include "transport/p2p.h"
#include "coll.h"
#include "shm_group.h"
#include "shm_stream.h"
#include "base/copy.h"

static int exchange(struct rlx__op *op, int refs_ok) {
  struct rlx__shm_group *g = op->shm;
  int n = g->n, me = g->me, rc, failed = 0;
  size_t es = op->esize, lo, at, len;
  char *dst = op->dst;
  if ((rc = rlx__shmg_begin(g, op)) != RLX_OK)
    return rc;
  /* this rank's entries, each sender's entry for this rank, and this
   * rank's header as it goes in the stream (op->tmp) */
  struct rlx__shms_entry *ent = op->tmp, *from = ent + n;
  unsigned char *hdr = (unsigned char *)(from + n);
  struct rlx__shms_plan plan;
  rlx__shms_plan(g, op, refs_ok, ent, hdr, &plan);
  uint64_t mine = plan.h.refs, refs = 0, steps = plan.h.steps, s0 = g->step + 1;
  for (uint64_t k = 0; k < steps; k++) {
    uint64_t s = ++g->step;
    size_t cap = rlx__shms_span(g, k, &lo);
    if ((rc = rlx__shms_post(g, op, s, k, ent, hdr, &plan)) != RLX_OK)
      return rc;
    rlx__shmg_arrive(g, s);
    if ((rc = rlx__shmg_wait_arrived(g, op, -1, s)) != RLX_OK)
      return rc;
    if (k == 0) {
      /* every stream's steps and references (the last step); each block
       * for this rank checked against the count it expects, and read
       * when it goes by reference */
      refs = mine;
      for (int i = 1; i < n; i++) {
        int r = rlx__shmg_right(g, i);
        struct rlx__shms_head rh;
        rlx__shms_header_get(g, r, s0, me, &rh, &from[r]);
        if (rh.steps > steps)
          steps = rh.steps;
        refs += rh.refs;
        uint64_t want = op->counts[r] * es;
        if (from[r].len != want)
          return rlx__shms_mismatch(op, g, r, from[r].len, me, want);
        if (rlx__shms_by_ref(rh.refs, from[r].len)) {
          int pid = rlx__shms_ref_pid(op, g, r, rh.pid, &rc);
          if (pid < 0)
            return rc;
          failed |= rlx__cma_read(pid, from[r].off, dst + op->displs[r] * es,
                                  from[r].len) != 0;
          from[r].len = 0; /* (nothing of it in the stream) */
        }
      }
    }
    for (int r = 0; r < n; r++)
      if (r != me && (len = rlx__shms_overlap(from[r].off, from[r].len, lo, cap, &at)) > 0)
        rlx__shms_move(g, r, s, k, at, dst + op->displs[r] * es + (at - from[r].off), len, 1);
  }
  if (refs == 0)
    return RLX_OK;
  return rlx__shms_refs_done(g, op, failed);
}

static int alltoallv(struct rlx__op *op) {
  struct rlx__shm_group *g = op->shm;
  int me = g->me;
  size_t es = op->esize;
  if (op->counts[me] > 0 && (char *)op->dst + op->displs[me] * es !=
                                (const char *)op->src + op->sdispls[me] * es)
    rlx__copy((char *)op->dst + op->displs[me] * es, (const char *)op->src + op->sdispls[me] * es,
           op->counts[me] * es);
  return rlx__shms_run(op, "rlx_alltoallv", exchange);
}

static size_t setup(struct rlx__op *op) {
  return 2 * (size_t)op->size * sizeof(struct rlx__shms_entry) +
         rlx__shms_header_bytes(op->size, 1);
}

/* rlx_alltoall's blocks above what one step of exchange_shm.c moves: the
 * same exchange, block j count elements at j x count on both sides, so
 * every receiver reads every block by reference at once, where pairwise
 * exchange takes p - 1 steps that wait for each other (the counts made
 * in op->tmp, after the entries). */
static int alltoall(struct rlx__op *op) {
  size_t *c = (size_t *)((char *)op->tmp + setup(op)), *d = c + op->size;
  for (int j = 0; j < op->size; j++) {
    c[j] = op->count;
    d[j] = (size_t)j * op->count;
  }
  op->scounts = op->counts = c;
  op->sdispls = op->displs = d;
  return alltoallv(op);
}

static size_t setup_even(struct rlx__op *op) {
  return setup(op) + 2 * (size_t)op->size * sizeof(size_t);
}

const struct rlx__algo rlx__alltoallv_shm = {"shm", NULL, setup, NULL, alltoallv};
const struct rlx__algo rlx__alltoall_shm_big = {"shm", NULL, setup_even, NULL, alltoall};
