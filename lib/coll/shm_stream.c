/* Streams in the shared segment: their layout over a call's steps and
 * their header (shm_stream.h). */
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include "base/internal.h"
#include "base/tuning.h"
#include "transport/p2p.h"
#include "coll.h"
#include "shm_group.h"
#include "shm_stream.h"
#include "base/copy.h"

#define INL RLX__SHMG_INLINE
#define CELL RLX__SHMS_CELL_BYTES /* step 0's bytes in the cell */

#define WIDE RLX__SHMS_WIDE
struct head_compact {
  uint32_t steps; /* (WIDE clear) */
  uint32_t zero;
};
struct head_wide {
  uint32_t steps; /* | WIDE */
  uint32_t pid;
  uint64_t refs;
};
struct entry_compact {
  uint32_t off, len;
};
/* (the inline reader in shm_stream.h takes this layout) */
_Static_assert(sizeof(struct head_compact) == 8 && sizeof(struct entry_compact) == 8 &&
                   offsetof(struct head_compact, steps) == 0 &&
                   offsetof(struct entry_compact, len) == 4,
               "rlx__shms_header_get reads a compact header as 8 + 8 j bytes");

size_t rlx__shms_span(const struct rlx__shm_group *g, uint64_t k, size_t *lo) {
  *lo = k == 0 ? 0 : CELL + (size_t)k * g->slot;
  return k == 0 ? CELL + g->slot : g->slot;
}

uint64_t rlx__shms_steps(const struct rlx__shm_group *g, uint64_t total) {
  size_t first = CELL + g->slot;
  return total <= first ? 1 : 1 + (total - first + g->slot - 1) / g->slot;
}

int rlx__shms_room(struct rlx__shm_group *g, struct rlx__op *op, uint64_t s, uint64_t k,
                   uint64_t total) {
  return k == 0 && total <= CELL ? rlx__shmg_wait_cell_room(g, op, s)
                                 : rlx__shmg_wait_room(g, op, s);
}

void rlx__shms_move_spans(struct rlx__shm_group *g, int r, uint64_t s, uint64_t k, size_t off,
                          void *buf, size_t len, int out) {
  size_t lo;
  rlx__shms_span(g, k, &lo);
  off -= lo;
  while (len > 0) {
    unsigned char *at;
    size_t room;
    if (k == 0 && off < INL) {
      at = rlx__shmg_cell(g, r, s)->small + off;
      room = INL - off;
    } else if (k == 0 && off < CELL) {
      at = g->line[r].spill[s & (RLX__SHMG_CELLS - 1)] + (off - INL);
      room = CELL - off;
    } else {
      size_t in = off - (k == 0 ? CELL : 0);
      at = rlx__shmg_slot(g, r, s) + in;
      room = g->slot - in;
    }
    size_t n = len < room ? len : room;
    if (out) {
      rlx__copy(buf, at, n);
    } else {
      rlx__copy(at, buf, n);
      if (k == 0 && off >= INL && off < CELL && off - INL + n > g->spill_used)
        g->spill_used = off - INL + n;
    }
    buf = (char *)buf + n;
    off += n;
    len -= n;
  }
}

size_t rlx__shms_overlap(size_t a, size_t alen, size_t b, size_t blen, size_t *at) {
  size_t lo = a > b ? a : b, hi = a + alen < b + blen ? a + alen : b + blen;
  *at = lo;
  return hi > lo ? hi - lo : 0;
}

int rlx__shms_by_ref(uint64_t refs, uint64_t len) {
  return refs > 0 && len >= RLX__SHMG_REF_MIN;
}

size_t rlx__shms_header_bytes(int n, int wide) {
  return wide ? sizeof(struct head_wide) + (size_t)n * sizeof(struct rlx__shms_entry)
              : sizeof(struct head_compact) + (size_t)n * sizeof(struct entry_compact);
}

size_t rlx__shms_header_put(unsigned char *hdr, int n, const struct rlx__shms_entry *ent,
                            const struct rlx__shms_head *h, int wide) {
  if (wide || h->refs > 0) {
    struct head_wide w = {(uint32_t)h->steps | WIDE, h->pid, h->refs};
    memcpy(hdr, &w, sizeof(w));
    memcpy(hdr + sizeof(w), ent, (size_t)n * sizeof(*ent));
    return rlx__shms_header_bytes(n, 1);
  }
  struct head_compact c = {(uint32_t)h->steps, 0};
  memcpy(hdr, &c, sizeof(c));
  for (int j = 0; j < n; j++) {
    struct entry_compact e = {(uint32_t)ent[j].off, (uint32_t)ent[j].len};
    memcpy(hdr + sizeof(c) + (size_t)j * sizeof(e), &e, sizeof(e));
  }
  return rlx__shms_header_bytes(n, 0);
}

void rlx__shms_header_get_any(struct rlx__shm_group *g, int r, uint64_t s0, int j,
                              struct rlx__shms_head *h, struct rlx__shms_entry *e) {
  struct head_wide w = {0, 0, 0};
  rlx__shms_move(g, r, s0, 0, 0, &w, sizeof(struct head_compact), 1);
  if (w.steps & WIDE) {
    rlx__shms_move(g, r, s0, 0, 0, &w, sizeof(w), 1);
    rlx__shms_move(g, r, s0, 0, sizeof(w) + (size_t)j * sizeof(*e), e, sizeof(*e), 1);
  } else {
    struct entry_compact c;
    rlx__shms_move(g, r, s0, 0, sizeof(struct head_compact) + (size_t)j * sizeof(c), &c,
                   sizeof(c), 1);
    e->off = c.off;
    e->len = c.len;
  }
  h->steps = w.steps & ~WIDE;
  h->refs = w.refs;
  h->pid = w.pid;
}

int rlx__shms_mismatch(struct rlx__op *op, struct rlx__shm_group *g, int from, uint64_t sent,
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

int rlx__shms_corrupt(struct rlx__op *op, struct rlx__shm_group *g, int from, uint32_t pid,
                      int want) {
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

uint32_t rlx__shms_own_pid(void) {
#ifdef RLX_FAULT_INJECTION
  if (rlx__fault_cma_desc_pid())
    return 1;
#endif
  return (uint32_t)getpid();
}

int rlx__shms_ref_pid(struct rlx__op *op, struct rlx__shm_group *g, int r, uint32_t named,
                      int *rc) {
  int pid = rlx__shmg_pid(g, r);
  if (pid > 0 && named == (uint32_t)pid)
    return pid;
  *rc = rlx__shms_corrupt(op, g, r, named, pid);
  return -1;
}

int rlx__shms_refs_done(struct rlx__shm_group *g, struct rlx__op *op, int failed) {
  uint64_t s = ++g->step, bad = (uint64_t)failed;
  int rc;
  if ((rc = rlx__shmg_post(g, op, s, &bad, sizeof(bad), sizeof(bad))) != RLX_OK ||
      (rc = rlx__shmg_wait_arrived(g, op, -1, s)) != RLX_OK)
    return rc;
  for (int r = 0; r < g->n; r++) {
    memcpy(&bad, rlx__shmg_data(g, r, s, sizeof(bad)), sizeof(bad));
    if (bad)
      return RLX__SHMS_AGAIN;
  }
  return RLX_OK;
}

void rlx__shms_plan(struct rlx__shm_group *g, const struct rlx__op *op, int refs_ok,
                    struct rlx__shms_entry *ent, unsigned char *hdr, struct rlx__shms_plan *p) {
  int n = g->n;
  size_t es = op->esize;
  uint64_t mine = 0, streamed = 0;
  for (int j = 0; j < n; j++) {
    ent[j].len = j == g->me ? 0 : op->scounts[j] * es;
    if (refs_ok && rlx__shms_by_ref(1, ent[j].len))
      mine++;
    else
      streamed += ent[j].len;
  }
  /* (wide: references, or streamed gigabytes whose offsets pass 32 bits) */
  int wide = mine > 0 || rlx__shms_header_bytes(n, 0) + streamed >= RLX__SHMS_COMPACT_MAX;
  p->total = rlx__shms_header_bytes(n, wide);
  for (int j = 0; j < n; j++) {
    if (rlx__shms_by_ref(mine, ent[j].len)) {
      ent[j].off = (uint64_t)(uintptr_t)((const char *)op->src + op->sdispls[j] * es);
    } else {
      ent[j].off = p->total;
      p->total += ent[j].len;
    }
  }
  p->h.steps = rlx__shms_steps(g, p->total);
  p->h.refs = mine;
  p->h.pid = mine ? rlx__shms_own_pid() : 0;
  p->hb = rlx__shms_header_put(hdr, n, ent, &p->h, wide);
}

int rlx__shms_post(struct rlx__shm_group *g, struct rlx__op *op, uint64_t s, uint64_t k,
                   const struct rlx__shms_entry *ent, const unsigned char *hdr,
                   const struct rlx__shms_plan *p) {
  size_t lo, at, len, cap = rlx__shms_span(g, k, &lo), es = op->esize;
  int rc = rlx__shms_room(g, op, s, k, p->total);
  if (rc != RLX_OK)
    return rc;
  if (k == 0) /* (the header is all in step 0) */
    rlx__shms_move(g, g->me, s, 0, 0, (void *)hdr, p->hb, 0);
  for (int j = 0; j < g->n; j++)
    if (!rlx__shms_by_ref(p->h.refs, ent[j].len) &&
        (len = rlx__shms_overlap(ent[j].off, ent[j].len, lo, cap, &at)) > 0)
      rlx__shms_move(g, g->me, s, k, at,
                     (char *)op->src + op->sdispls[j] * es + (at - ent[j].off), len, 0);
  return RLX_OK;
}

/* Bytes [off, off + len) of a stream's step 0 held in a cell and its
 * spill area (off + len <= CELL), copied in from buf; inline: all in the
 * cell (off + len <= INL). */
static inline void put_cell(unsigned char *small, unsigned char *spill, size_t off,
                            const void *buf, size_t len, int inl) {
  if (!inl && off + len > INL) {
    if (off >= INL) {
      memcpy(spill + (off - INL), buf, len);
      return;
    }
    memcpy(spill, (const char *)buf + (INL - off), off + len - INL);
    len = INL - off;
  }
  rlx__copy(small + off, buf, len);
}

/* rlx__shms_post_cell's header and blocks; inl: all in the cell (a
 * constant, so that the small call's path has no test for the spill
 * area's) */
__attribute__((always_inline)) static inline size_t post_cell(struct rlx__shm_group *g,
                                                              const struct rlx__op *op,
                                                              unsigned char *small,
                                                              unsigned char *spill, int inl) {
  size_t es = op->esize, off = rlx__shms_header_bytes(g->n, 0);
  const struct head_compact h = {1, 0};
  put_cell(small, spill, 0, &h, sizeof(h), inl);
  for (int j = 0; j < g->n; j++) {
    size_t len = j == g->me ? 0 : op->scounts[j] * es;
    const struct entry_compact e = {(uint32_t)off, (uint32_t)len};
    put_cell(small, spill, sizeof(h) + (size_t)j * sizeof(e), &e, sizeof(e), inl);
    if (len > 0)
      put_cell(small, spill, off, (const char *)op->src + op->sdispls[j] * es, len, inl);
    off += len;
  }
  return off;
}

void rlx__shms_get_cell(struct rlx__shm_group *g, int r, uint64_t s, size_t off, void *buf,
                        size_t len) {
  if (off < INL) {
    size_t n = len < INL - off ? len : INL - off;
    rlx__copy(buf, rlx__shmg_cell(g, r, s)->small + off, n);
    buf = (char *)buf + n;
    off += n;
    len -= n;
  }
  if (len > 0)
    memcpy(buf, g->line[r].spill[s & (RLX__SHMG_CELLS - 1)] + (off - INL), len);
}

int rlx__shms_post_cell(struct rlx__shm_group *g, struct rlx__op *op, uint64_t s, size_t total) {
  int rc = rlx__shmg_wait_cell_room(g, op, s);
  if (rc != RLX_OK)
    return rc;
  unsigned char *small = rlx__shmg_cell(g, g->me, s)->small;
  if (total <= INL) {
    post_cell(g, op, small, NULL, 1);
    return RLX_OK;
  }
  post_cell(g, op, small, g->line[g->me].spill[s & (RLX__SHMG_CELLS - 1)], 0);
  if (total - INL > g->spill_used) /* (rlx__shmg_arrive asks for as many next) */
    g->spill_used = total - INL;
  return RLX_OK;
}

int rlx__shms_run(struct rlx__op *op, const char *name,
                  int (*run)(struct rlx__op *op, int refs_ok)) {
  struct rlx__shm_group *g = op->shm;
  int rc = run(op, !g->no_refs && rlx__p2p_by_ref(g->p2p));
  if (rc != RLX__SHMS_AGAIN)
    return rc;
  rlx__debug("%s: a copy by reference failed in the shared segment: every block streamed from "
             "now on", name);
  g->no_refs = 1;
  return run(op, 0);
}
