/* A rank's stream in a communicator's shared segment (shm_group.h): the
 * bytes one call of alltoallv, gatherv or scatterv posts, laid over the
 * call's steps, with a header that tells the readers the rest (no reader
 * knows the sender's sizes before the call).
 *
 * Step k of a call carries stream bytes [lo_k, lo_k + cap_k): step 0 the
 * first RLX__SHMG_INLINE bytes in the rank's cell (they come with the
 * miss on its step, as a small call's data do), the next RLX__SHMG_SPILL
 * in the cell's spill area (both under the cell's rule: a small call's
 * poster may run calls ahead) and the next slot's worth in its data slot;
 * every later step a slot's worth.
 *
 * The header: the steps the stream takes, then per rank j the offset of
 * its block for j in the stream (or its address, when it goes by
 * reference) and that block's bytes. Compact (8 + 8 n bytes) while the
 * stream is under 4 GiB and nothing goes by reference; else wide, with
 * the sender's pid and how many of its blocks go by reference. */
#ifndef RLX_SHM_STREAM_H
#define RLX_SHM_STREAM_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include "shm_group.h"
#include "base/copy.h"

struct rlx__op;

/* a compact header's stream stays below */
#define RLX__SHMS_COMPACT_MAX 0x80000000u

struct rlx__shms_entry {
  uint64_t off, len; /* in the stream (or the sender's address), bytes */
};
struct rlx__shms_head {
  uint64_t steps; /* the steps the stream takes */
  uint64_t refs;  /* its blocks that go by reference (0: a compact header) */
  uint32_t pid;   /* the sender, for the reads by reference */
};

/* The stream offsets step k covers, [*lo, *lo + return). */
size_t rlx__shms_span(const struct rlx__shm_group *g, uint64_t k, size_t *lo);
/* The steps a stream of total bytes takes. */
uint64_t rlx__shms_steps(const struct rlx__shm_group *g, uint64_t total);
/* Before posting step k of a stream of total bytes at segment step s:
 * the cell's rule while the stream ends before the slot, else the
 * slot's. RLX_OK or the error that ended the call. */
int rlx__shms_room(struct rlx__shm_group *g, struct rlx__op *op, uint64_t s, uint64_t k,
                   uint64_t total);
/* Copy stream bytes [off, off + len) of rank r's step k (at segment step
 * s, within the step's span) out to buf (out) or in from it: at once
 * where they lie in the cell (a small call's every piece: the general
 * walk over the step's spans, out of line, cost ~40 instructions a
 * piece), else through rlx__shms_move_spans. */
void rlx__shms_move_spans(struct rlx__shm_group *g, int r, uint64_t s, uint64_t k, size_t off,
                          void *buf, size_t len, int out);
static inline void rlx__shms_move(struct rlx__shm_group *g, int r, uint64_t s, uint64_t k,
                                  size_t off, void *buf, size_t len, int out) {
  if (k == 0 && off + len <= RLX__SHMG_INLINE) { /* all in the cell: a small call's every piece */
    unsigned char *at = rlx__shmg_cell(g, r, s)->small + off;
    rlx__copy(out ? buf : at, out ? at : buf, len);
    return;
  }
  rlx__shms_move_spans(g, r, s, k, off, buf, len, out);
}

/* The part of [a, a + alen) in [b, b + blen): its start, its length. */
size_t rlx__shms_overlap(size_t a, size_t alen, size_t b, size_t blen, size_t *at);

/* Whether a block of len bytes from a rank whose header says refs goes
 * by reference (the sender's rule, which the receiver applies alike). */
int rlx__shms_by_ref(uint64_t refs, uint64_t len);
/* A header's bytes for n ranks, compact or wide. */
size_t rlx__shms_header_bytes(int n, int wide);
/* Write a header into hdr (rlx__shms_header_bytes(n, h->refs > 0 ||
 * wide)): h, then ent[0..n). Returns its bytes. */
size_t rlx__shms_header_put(unsigned char *hdr, int n, const struct rlx__shms_entry *ent,
                            const struct rlx__shms_head *h, int wide);
/* Read rank r's header from its stream's step 0 (at segment step s0):
 * its head and its entry for rank j. A compact header whose entry lies
 * in the cell (up to 11 ranks) is read inline (a small call's every
 * header: the call out of line was ~40 instructions of a 2-rank 8-byte
 * scatterv receiver's ~1,000); rlx__shms_header_get_any reads any. */
#define RLX__SHMS_WIDE 0x80000000u /* in a header's steps: the wide form */
void rlx__shms_header_get_any(struct rlx__shm_group *g, int r, uint64_t s0, int j,
                              struct rlx__shms_head *h, struct rlx__shms_entry *e);
static inline void rlx__shms_header_get(struct rlx__shm_group *g, int r, uint64_t s0, int j,
                                        struct rlx__shms_head *h, struct rlx__shms_entry *e) {
  size_t eo = 8 + (size_t)j * 8; /* (the compact head, then 8 bytes an entry) */
  uint32_t head[2], ent[2];       /* (steps and a zero; an entry's offset and length) */
  if (eo + sizeof(ent) <= RLX__SHMG_INLINE) {
    rlx__shms_move(g, r, s0, 0, 0, head, sizeof(head), 1);
    if (!(head[0] & RLX__SHMS_WIDE)) {
      rlx__shms_move(g, r, s0, 0, eo, ent, sizeof(ent), 1);
      e->off = ent[0];
      e->len = ent[1];
      h->steps = head[0];
      h->refs = 0;
      h->pid = 0;
      return;
    }
  }
  rlx__shms_header_get_any(g, r, s0, j, h, e);
}

/* Fail the call and the segment: rank from sent `sent` bytes where rank
 * to expected `expected` (RLX_ERR_MISMATCH, both sizes named). */
int rlx__shms_mismatch(struct rlx__op *op, struct rlx__shm_group *g, int from, uint64_t sent,
                       int to, uint64_t expected);
/* Fail the call and the segment: rank from's blocks by reference name
 * process pid where it is process want (rlx__shmg_pid): corrupt, nothing
 * read. */
int rlx__shms_corrupt(struct rlx__op *op, struct rlx__shm_group *g, int from, uint32_t pid,
                      int want);
/* The process to read rank r's blocks by reference from, checked against
 * what r's stream names (RLX_ERR_CORRUPT when they differ: *rc set, -1
 * returned). */
int rlx__shms_ref_pid(struct rlx__op *op, struct rlx__shm_group *g, int r, uint32_t named,
                      int *rc);
/* The pid a rank names for its own blocks by reference: its own (1 under
 * RLX_FAULT_CMA=descpid in fault-injection builds). */
uint32_t rlx__shms_own_pid(void);

/* This rank's stream for a call whose block for rank j is
 * op->scounts[j] elements at op->sdispls[j] of op->src (none for this
 * rank itself): blocks from RLX__SHMG_REF_MIN bytes by reference when
 * refs_ok. Fills ent[0..n) and the header in hdr (room for
 * rlx__shms_header_bytes(n, 1)); plan says the rest. */
struct rlx__shms_plan {
  struct rlx__shms_head h; /* steps, blocks by reference (h.refs), pid */
  uint64_t total;          /* the stream's bytes */
  size_t hb;               /* the header's */
};
void rlx__shms_plan(struct rlx__shm_group *g, const struct rlx__op *op, int refs_ok,
                    struct rlx__shms_entry *ent, unsigned char *hdr, struct rlx__shms_plan *p);
/* Post step k of that stream at segment step s, once there is room: the
 * header (step 0) and the streamed blocks' parts of the step (the caller
 * arrives). RLX_OK or the error that ended the call. */
int rlx__shms_post(struct rlx__shm_group *g, struct rlx__op *op, uint64_t s, uint64_t k,
                   const struct rlx__shms_entry *ent, const unsigned char *hdr,
                   const struct rlx__shms_plan *p);
/* A stream's step 0 in a rank's cell and spill area: a stream of at
 * most this many bytes is all there, under the cell's rule. */
#define RLX__SHMS_CELL_BYTES (RLX__SHMG_INLINE + RLX__SHMG_SPILL)
/* Post at segment step s, once the cell's rule allows, the stream of a
 * call whose blocks are op->scounts[j] elements at op->sdispls[j] of
 * op->src (none for this rank), total bytes with the header, when they
 * fit the cell and its spill area (RLX__SHMS_CELL_BYTES): what
 * rlx__shms_plan and rlx__shms_post would write, straight there instead
 * of through scratch and the general walk over the step's spans (a 2-rank
 * 8-byte
 * scatterv's root: 1801 -> 1473 instructions a call outside its waits;
 * 128-byte blocks, partly in the spill area: 1685 -> ~1380; callgrind,
 * bench/call_instructions.sh). RLX_OK or the error that ended the call. */
int rlx__shms_post_cell(struct rlx__shm_group *g, struct rlx__op *op, uint64_t s, size_t total);
/* Stream bytes [off, off + len) of rank r's step 0 (at segment step s)
 * that lie in its cell and spill area (off + len <= RLX__SHMS_CELL_BYTES)
 * out to buf: at most two copies, where rlx__shms_move walks the step's
 * spans (a 2-rank scatterv of 128-byte blocks, the receiver: 1290 -> 1214
 * instructions a call outside its waits). */
void rlx__shms_get_cell(struct rlx__shm_group *g, int r, uint64_t s, size_t off, void *buf,
                        size_t len);
/* Run a streaming call (run: one attempt, blocks by reference where
 * refs_ok) with copies by reference where the segment allows them; when
 * one failed anywhere (RLX__SHMS_AGAIN, seen by every rank at the same
 * step), say so and run it again streamed, as the segment's later calls
 * will be. name: the call, for the message. */
int rlx__shms_run(struct rlx__op *op, const char *name, int (*run)(struct rlx__op *op, int refs_ok));

/* After a call whose blocks went by reference (some rank's header said
 * refs): one more step, every rank posting whether its copies failed and
 * waiting for all (the senders' buffers are then free). RLX_OK,
 * RLX__SHMS_AGAIN when a copy failed anywhere (every rank sees it: the
 * call runs again streaming every block), or the error that ended the
 * call. */
#define RLX__SHMS_AGAIN 1
int rlx__shms_refs_done(struct rlx__shm_group *g, struct rlx__op *op, int failed);

#endif
