/* alltoallv in a communicator's shared segment (shm_group.h), for
 * blocking calls. Each rank knows only its own row of the count matrix,
 * so nothing about the sizes can pick the path or the number of steps
 * before the call: every rank streams what it sends through its data
 * cell and slot, and the stream starts with a header that tells the
 * others the rest.
 *
 * Rank r's stream: a header (the steps the stream takes; per rank j the
 * offset of its block for j in the stream, or its address when it goes
 * by reference, and that block's bytes; with references, r's pid), then
 * its streamed blocks in rank order. Step k of the call carries bytes
 * [lo_k, lo_k + cap_k) of every stream: step 0 the first
 * RLX__SHMG_INLINE bytes in the rank's cell (they come with the miss on
 * its step, as a small call's data do: the header is compact for small
 * calls, 24 bytes at 2 ranks) and the next slot's worth in its slot,
 * every later step a slot's worth. A rank posts its part of each step,
 * waits for everyone's, and copies out of each sender's chunk the part
 * that is its block; the call takes as many steps as the longest stream
 * needs (every rank reads every header at step 0, so all agree), a rank
 * whose stream has ended posting empty steps.
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
#include <unistd.h>
#include "base/internal.h"
#include "base/tuning.h"
#include "transport/p2p.h"
#include "coll.h"
#include "shm_group.h"

#define INL RLX__SHMG_INLINE

/* A stream's header: the head, then one entry per rank (block j's
 * offset in the stream, or its address when it goes by reference, and
 * its bytes). Compact while the stream is under 4 GiB and nothing goes by
 * reference (a small call's header then fits its data beside it in the
 * rank's cell: 24 bytes at 2 ranks), else wide. */
#define WIDE 0x80000000u
struct head_compact {
  uint32_t steps; /* the steps the stream takes (WIDE clear) */
  uint32_t zero;
};
struct head_wide {
  uint32_t steps; /* | WIDE */
  uint32_t pid;   /* the sender, for the reads by reference */
  uint64_t refs;  /* its blocks that go by reference */
};
struct entry { /* in memory, and in a wide header */
  uint64_t off, len;
};
struct entry_compact {
  uint32_t off, len;
};

static size_t header_bytes(int n, int wide) {
  return wide ? sizeof(struct head_wide) + (size_t)n * sizeof(struct entry)
              : sizeof(struct head_compact) + (size_t)n * sizeof(struct entry_compact);
}

/* Whether a block of len bytes from a rank whose header says refs goes
 * by reference (the sender's rule, which the receiver applies alike). */
static int by_ref(uint64_t refs, uint64_t len) { return refs > 0 && len >= RLX__SHMG_REF_MIN; }

/* The stream offsets step k covers, [*lo, *lo + return). */
static size_t step_span(const struct rlx__shm_group *g, uint64_t k, size_t *lo) {
  *lo = k == 0 ? 0 : INL + (size_t)k * g->slot;
  return k == 0 ? INL + g->slot : g->slot;
}

/* The steps a stream of total bytes takes. */
static uint64_t steps_for(const struct rlx__shm_group *g, uint64_t total) {
  size_t first = INL + g->slot;
  return total <= first ? 1 : 1 + (total - first + g->slot - 1) / g->slot;
}

/* Copy stream bytes [off, off + len) of rank r's step k (within the
 * step's span) to or from buf. */
static void move(struct rlx__shm_group *g, int r, uint64_t s, uint64_t k, size_t off, void *buf,
                 size_t len, int out) {
  size_t lo;
  step_span(g, k, &lo);
  off -= lo;
  while (len > 0) {
    unsigned char *at;
    size_t room;
    if (k == 0 && off < INL) {
      at = rlx__shmg_cell(g, r, s)->small + off;
      room = INL - off;
    } else {
      size_t in = off - (k == 0 ? INL : 0);
      at = rlx__shmg_slot(g, r, s) + in;
      room = g->slot - in;
    }
    size_t n = len < room ? len : room;
    if (out)
      memcpy(buf, at, n);
    else
      memcpy(at, buf, n);
    buf = (char *)buf + n;
    off += n;
    len -= n;
  }
}

/* The part of [a, a + alen) in [b, b + blen): its start, its length. */
static size_t overlap(size_t a, size_t alen, size_t b, size_t blen, size_t *at) {
  size_t lo = a > b ? a : b, hi = a + alen < b + blen ? a + alen : b + blen;
  *at = lo;
  return hi > lo ? hi - lo : 0;
}

static int mismatch(struct rlx__op *op, struct rlx__shm_group *g, int from, uint64_t sent,
                    int to, uint64_t expected) {
  char mine[160], msg[400];
  rlx__exec_describe(op, mine, sizeof(mine));
  snprintf(msg, sizeof(msg),
           "rank %d sent %llu bytes where rank %d expected %llu in %s: their counts for that "
           "block differ",
           from, (unsigned long long)sent, to, (unsigned long long)expected, mine);
  rlx__shmg_fail(g, RLX_ERR_MISMATCH, -1, op->seq, msg);
  rlx__exec_end(op, RLX_ERR_MISMATCH, msg);
  return op->status;
}

/* Rank from's stream names process pid for its blocks by reference, not
 * the one it is (rlx__shmg_pid: want): corrupt; nothing is read. */
static int corrupt(struct rlx__op *op, struct rlx__shm_group *g, int from, uint32_t pid, int want) {
  char mine[160], msg[400];
  rlx__exec_describe(op, mine, sizeof(mine));
  snprintf(msg, sizeof(msg),
           "rank %d's blocks by reference in %s name process %u, where rank %d is process %d: "
           "the shared segment is corrupt",
           from, mine, pid, from, want);
  rlx__shmg_fail(g, RLX_ERR_CORRUPT, -1, op->seq, msg);
  rlx__exec_end(op, RLX_ERR_CORRUPT, msg);
  return op->status;
}

#define AGAIN 1 /* a copy by reference failed somewhere: stream everything */

static int exchange(struct rlx__op *op, int refs_ok) {
  struct rlx__shm_group *g = op->shm;
  int n = g->n, me = g->me, rc, failed = 0;
  size_t es = op->esize, lo, at, len;
  const char *src = op->src;
  char *dst = op->dst;
  if ((rc = rlx__shmg_begin(g, op)) != RLX_OK)
    return rc;
  /* this rank's entries, each sender's entry for this rank, and this
   * rank's header as it goes in the stream (op->tmp) */
  struct entry *ent = op->tmp, *from = ent + n;
  unsigned char *hdr = (unsigned char *)(from + n);
  /* blocks by reference (this rank's, everyone's), bytes streamed */
  uint64_t mine = 0, refs = 0, streamed = 0, total;
  for (int j = 0; j < n; j++) {
    uint64_t b = j == me ? 0 : op->scounts[j] * es;
    if (refs_ok && by_ref(1, b))
      mine++;
    else
      streamed += b;
  }
  /* (wide: references, or streamed gigabytes whose offsets pass 32 bits) */
  int wide = mine > 0 || header_bytes(n, 0) + streamed >= WIDE;
  total = header_bytes(n, wide);
  for (int j = 0; j < n; j++) {
    ent[j].len = j == me ? 0 : op->scounts[j] * es;
    if (by_ref(mine, ent[j].len)) {
      ent[j].off = (uint64_t)(uintptr_t)(src + op->sdispls[j] * es);
    } else {
      ent[j].off = total;
      total += ent[j].len;
    }
  }
  uint64_t steps = steps_for(g, total), s0 = g->step + 1;
  size_t hb = header_bytes(n, wide);
  if (wide) {
    struct head_wide h = {(uint32_t)steps | WIDE, mine ? (uint32_t)getpid() : 0, mine};
#ifdef RLX_FAULT_INJECTION
    if (mine && rlx__fault_cma_desc_pid())
      h.pid = 1;
#endif
    memcpy(hdr, &h, sizeof(h));
    memcpy(hdr + sizeof(h), ent, (size_t)n * sizeof(struct entry));
  } else {
    struct head_compact h = {(uint32_t)steps, 0};
    memcpy(hdr, &h, sizeof(h));
    for (int j = 0; j < n; j++) {
      struct entry_compact e = {(uint32_t)ent[j].off, (uint32_t)ent[j].len};
      memcpy(hdr + sizeof(h) + (size_t)j * sizeof(e), &e, sizeof(e));
    }
  }
  for (uint64_t k = 0; k < steps; k++) {
    uint64_t s = ++g->step;
    size_t cap = step_span(g, k, &lo);
    if ((rc = rlx__shmg_wait_room(g, op, s)) != RLX_OK)
      return rc;
    if (k == 0) /* (the header is all in step 0) */
      move(g, me, s, 0, 0, hdr, hb, 0);
    for (int j = 0; j < n; j++)
      if (!by_ref(mine, ent[j].len) && (len = overlap(ent[j].off, ent[j].len, lo, cap, &at)) > 0)
        move(g, me, s, k, at, (void *)(src + op->sdispls[j] * es + (at - ent[j].off)), len, 0);
    rlx__shmg_arrive(g, s);
    if ((rc = rlx__shmg_wait_arrived(g, op, -1, s)) != RLX_OK)
      return rc;
    if (k == 0) {
      /* every stream's steps and references (the last step); each block
       * for this rank checked against the count it expects, and read
       * when it goes by reference */
      refs = mine;
      for (int r = 0; r < n; r++) {
        if (r == me)
          continue;
        struct head_wide rh = {0, 0, 0};
        move(g, r, s0, 0, 0, &rh, sizeof(struct head_compact), 1);
        int rwide = (rh.steps & WIDE) != 0;
        if (rwide) {
          move(g, r, s0, 0, 0, &rh, sizeof(rh), 1);
          move(g, r, s0, 0, sizeof(rh) + (size_t)me * sizeof(struct entry), &from[r],
               sizeof(struct entry), 1);
        } else {
          struct entry_compact e;
          move(g, r, s0, 0, sizeof(struct head_compact) + (size_t)me * sizeof(e), &e, sizeof(e), 1);
          from[r].off = e.off;
          from[r].len = e.len;
        }
        if ((rh.steps & ~WIDE) > steps)
          steps = rh.steps & ~WIDE;
        refs += rh.refs;
        uint64_t want = op->counts[r] * es;
        if (from[r].len != want)
          return mismatch(op, g, r, from[r].len, me, want);
        if (by_ref(rh.refs, from[r].len)) {
          int pid = rlx__shmg_pid(g, r);
          if (pid <= 0 || rh.pid != (uint32_t)pid)
            return corrupt(op, g, r, rh.pid, pid);
          failed |= rlx__cma_read(pid, from[r].off, dst + op->displs[r] * es,
                                  from[r].len) != 0;
          from[r].len = 0; /* (nothing of it in the stream) */
        }
      }
    }
    for (int r = 0; r < n; r++)
      if (r != me && (len = overlap(from[r].off, from[r].len, lo, cap, &at)) > 0)
        move(g, r, s, k, at, dst + op->displs[r] * es + (at - from[r].off), len, 1);
  }
  if (refs == 0)
    return RLX_OK;
  /* The last step: every reader done with the senders' buffers, and
   * whether any copy failed. */
  uint64_t s = ++g->step, bad = (uint64_t)failed;
  if ((rc = rlx__shmg_post(g, op, s, &bad, sizeof(bad), sizeof(bad))) != RLX_OK ||
      (rc = rlx__shmg_wait_arrived(g, op, -1, s)) != RLX_OK)
    return rc;
  for (int r = 0; r < n; r++) {
    memcpy(&bad, rlx__shmg_data(g, r, s, sizeof(bad)), sizeof(bad));
    if (bad)
      return AGAIN;
  }
  return RLX_OK;
}

static int alltoallv(struct rlx__op *op) {
  struct rlx__shm_group *g = op->shm;
  int me = g->me;
  size_t es = op->esize;
  if (op->counts[me] > 0 && (char *)op->dst + op->displs[me] * es !=
                                (const char *)op->src + op->sdispls[me] * es)
    memcpy((char *)op->dst + op->displs[me] * es, (const char *)op->src + op->sdispls[me] * es,
           op->counts[me] * es);
  int rc = exchange(op, !g->no_refs && rlx__p2p_by_ref(g->p2p));
  if (rc != AGAIN)
    return rc;
  /* (every rank saw the failure at the same step: all stream from now on) */
  rlx__debug("rlx_alltoallv: a copy by reference failed in the shared segment: every block "
             "streamed from now on");
  g->no_refs = 1;
  return exchange(op, 0);
}

static size_t setup(struct rlx__op *op) {
  return 2 * (size_t)op->size * sizeof(struct entry) + header_bytes(op->size, 1);
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

/* rlx_gatherv and rlx_scatterv: the same exchange with the blocks that do
 * not move counted 0 (a sender of gatherv sends only to the root, the
 * root of scatterv only sends), so that no rank needs to know the others'
 * sizes to take the call's steps, and a block whose sender and receiver
 * disagree on its size is caught as alltoallv's are (the counts made in
 * op->tmp, after the entries). */
static int rooted_v(struct rlx__op *op, int to_root) {
  int n = op->size, root = op->root;
  size_t *sc = (size_t *)((char *)op->tmp + setup(op)), *sd = sc + n, *rc = sd + n, *rd = rc + n;
  memset(sc, 0, 4 * (size_t)n * sizeof(size_t)); /* (displacements 0: the block is the buffer) */
  if (to_root) { /* every rank's block to the root (the root's own: a copy) */
    sc[root] = op->count;
    if (op->rank == root) {
      memcpy(rc, op->counts, (size_t)n * sizeof(size_t));
      memcpy(rd, op->displs, (size_t)n * sizeof(size_t));
    }
  } else { /* every rank's block from the root */
    rc[root] = op->count;
    if (op->rank == root) {
      memcpy(sc, op->scounts, (size_t)n * sizeof(size_t));
      memcpy(sd, op->sdispls, (size_t)n * sizeof(size_t));
    }
  }
  op->scounts = sc;
  op->sdispls = sd;
  op->counts = rc;
  op->displs = rd;
  return alltoallv(op);
}

static int gatherv(struct rlx__op *op) { return rooted_v(op, 1); }
static int scatterv(struct rlx__op *op) { return rooted_v(op, 0); }

static size_t setup_rooted(struct rlx__op *op) {
  return setup(op) + 4 * (size_t)op->size * sizeof(size_t);
}

const struct rlx__algo rlx__alltoallv_shm = {"shm", NULL, setup, NULL, alltoallv};
const struct rlx__algo rlx__alltoall_shm_big = {"shm", NULL, setup_even, NULL, alltoall};
const struct rlx__algo rlx__gatherv_shm = {"shm", NULL, setup_rooted, NULL, gatherv};
const struct rlx__algo rlx__scatterv_shm = {"shm", NULL, setup_rooted, NULL, scatterv};
