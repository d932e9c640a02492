/* A communicator's shared segment, for collectives that work in shared
 * memory when every member runs on one host (rlxcoll(7), RLX_SHM_COLL and
 * RLX_TRANSPORT: the transport by reach). The member with communicator rank 0 makes a memfd and hands
 * it to each other member over their (already authenticated) Unix-socket
 * connection with SCM_RIGHTS: no name anyone could open, nothing left
 * once the processes are gone.
 *
 * Layout: a header page (identity, the futex a sleeping waiter waits on,
 * the failure word), per rank RLX__SHMG_CELLS cells (its step counters,
 * the signature of its current call and a small payload, below) with a
 * spill area each (RLX__SHMG_SPILL), and two data slots, then two result
 * slots. Every collective on it is a series
 * of steps numbered alike on all ranks; step g uses slot parity g & 1 and
 * cell g % RLX__SHMG_CELLS. A rank arrived at step g is done with what
 * every step before left, so a rank writes a slot only once every rank
 * has arrived at step g - 1 (two steps in flight, no extra wait), and a
 * step whose data fit its cell only once every rank has arrived at
 * g - RLX__SHMG_CELLS + 1: a rank that only gives (a gather's senders, a
 * scatter's or bcast's root) runs that many small calls ahead, as an
 * eager protocol would (2 ranks here, 8-byte gathers: 0.43 us a call with
 * two cells, vader's 0.10). Out of room, it waits until the others are
 * half the cells further (rlx__shmg_wait_cell_room), so that it looks at
 * their lines once per RLX__SHMG_CELLS / 2 calls, not once a call.
 * Each process keeps its own copy of the sizes it maps: a member writing
 * nonsense into the header cannot make another read outside its mapping.
 *
 * In a job that may grow (RLX_MAX_NP), the layout holds RLX_MAX_NP ranks
 * (up to RLX__SHMG_CAP_MAX; pages nobody touches cost nothing), and the
 * grown communicator takes the segment over from the one it grew from
 * (rlx__shmg_take_over): the members keep their lines, slots and
 * mappings, their pages already faulted in, and only the joiners map it,
 * before their admission. */
#ifndef RLX_SHM_GROUP_H
#define RLX_SHM_GROUP_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include "base/tuning.h"
#include "transport/list.h"
#include "transport/frame.h"

struct rlx__engine;
struct rlx__p2p;
struct rlx__op;

/* A rank's cells, one per step parity, each a 128-byte aligned pair of
 * cache lines (which the adjacent-line prefetcher fetches together): what
 * a reader of a small call needs (the step, the call, payloads of up to
 * RLX__SHMG_INLINE bytes) comes with the miss on the step, and the
 * writer's next step goes to the next cell, so it does not take the
 * lines from a reader still on this one. */
#define RLX__SHMG_INLINE 96
/* A slot holds whole elements of every dtype (at most 8 bytes): a chunk
 * of a slot's bytes needs no rounding down to the element size. */
_Static_assert(RLX__SHMG_SLOT % 8 == 0, "a slot holds whole elements");
/* 64, not 8: with 8 a sender ahead of its reader waited at every call for
 * the reader's last one, a miss on a line the reader had just written,
 * whose next store then waited for the line to come back; the two ranks
 * went in step (bench/cell_micro.c alone, 2 cores: 0.075 us a step with
 * 8 cells, 0.04-0.057 with 64 and the wait for half of them;
 * bench/results/small-gather-stalls-2core-2026-12-04.txt). */
#define RLX__SHMG_CELLS 64 /* a power of two */
/* A reader asks ahead for the next cell of at most this many ranks
 * (shm_wait.c prefetch_next). */
#define RLX__SHMG_PREFETCH_RANKS 8
struct rlx__shmg_cell {
  _Alignas(128) _Atomic uint64_t arrive; /* the last step of this cell whose data is posted */
  _Atomic uint64_t first;  /* the first step of the call that began in this cell */
  _Atomic uint64_t sig[2]; /* that call's signature (RLX__SIG_SIZE bytes) */
  unsigned char small[RLX__SHMG_INLINE];
};
_Static_assert(sizeof(struct rlx__shmg_cell) == 128, "a cell is a pair of cache lines");

/* A step's data above RLX__SHMG_INLINE bytes and up to RLX__SHMG_SPILL
 * goes in the rank's spill area of the step's cell, under the cell's
 * rule (posted once every rank arrived at step - RLX__SHMG_CELLS + 1)
 * instead of a data slot's (every rank at step - 1): a small call's root
 * or senders run as many calls ahead there too (2 ranks, 64-128 B
 * scatter blocks: the root one step ahead of its reader was 0.42-0.44 us
 * a call against 0.30 inline). 2048, not 512: a slot waits for every
 * rank, and with more ranks than cores that is their scheduling, ~10 us
 * a call (4 ranks on 2 cores: a scatterv of 256 B blocks 12.3 us in the
 * slot, 1.0 in the spill area, vader 2.2; 2 ranks: 512 B - 4 KiB calls
 * the same or faster; bench/results/spill-2k-2core-2026-12-05.txt). */
#define RLX__SHMG_SPILL 2048
#define RLX__SHMG_LINE (RLX__SHMG_CELLS * (128 + RLX__SHMG_SPILL) + 256) /* a rank's cells, \
                                                                          * spills, counters */
/* The most ranks a layout holds ahead of growth: 64 x two 256 KiB slots
 * is 32 MiB of address space per communicator, none of it memory until
 * touched. A job that may grow larger gets layouts of its size. */
#define RLX__SHMG_CAP_MAX 64
struct rlx__shmg_line {
  struct rlx__shmg_cell cell[RLX__SHMG_CELLS];
  _Alignas(64) _Atomic uint64_t reduced; /* the last step whose slice it has reduced */
  _Atomic uint64_t p2p_seq; /* 1 + the seq of its last call run point to point */
  _Atomic uint64_t p2p_sig[2]; /* and that call's signature (RLX__SIG_SIZE bytes) */
  _Atomic int32_t pid; /* its process, written once it has mapped the segment */
  /* a gatherv sender's blocks too big for its step: the chunks it has
   * fed through its slots, ever (gatherv_shm.c) */
  _Atomic uint64_t fed;
  /* a gatherv sender: the step of the call whose block it is writing
   * into the root's buffer (0: none); a gatherv root: the step of the
   * call whose buffer it closed to such writes, leaving early (push_closed) */
  _Atomic uint64_t pushing, push_closed;
  /* ... and the chunks the roots took, ever, written by them; refused:
   * the step of the call whose block by reference the root could not
   * read (then fed) */
  _Alignas(64) _Atomic uint64_t taken;
  _Atomic uint64_t refused;
  /* The signature of every call this rank began from step sig_from on
   * (a seqlock: sig_from 0 while it changes; 0 also: not known), written
   * only when its calls' signature changes: a root owing comparisons
   * (rlx__shmg_owe) reads this line, which stays in its cache, instead of
   * a cell per call, which its owner wrote since. */
  _Alignas(64) _Atomic uint64_t sig_from;
  _Atomic uint64_t sig_run[2];
  _Alignas(64) unsigned char spill[RLX__SHMG_CELLS][RLX__SHMG_SPILL];
};

struct rlx__shmg_hdr {
  uint64_t magic;
  uint32_t n, comm_id; /* n: the ranks the layout holds */
  uint64_t slot, len;
  /* rank 0, handing the segment to joiners: the last step taken in it,
   * where the joiners' steps begin */
  uint64_t adopt_step;
  /* a waiter past its spin budget sleeps on bell (a futex) after counting
   * itself in sleepers; whoever publishes a step then rings it */
  _Alignas(128) _Atomic uint32_t sleepers;
  _Atomic uint32_t bell;
  /* the first failure of any member (a lost rank, a mismatch): every
   * waiter reads it and fails its call with it */
  _Alignas(128) _Atomic uint32_t failed;
  _Atomic uint32_t claim;
  int32_t err;
  int32_t lost; /* the comm rank lost, or -1 */
  uint64_t seq; /* the call that failed (UINT64_MAX: whichever is in progress) */
  char why[600];
};

struct rlx__shmg_owed {
  uint64_t first, seq; /* the call's first step (0: none) and seq */
  uint64_t sig[2];     /* and its signature */
};

struct rlx__shm_group {
  struct rlx__list link; /* in the list of live groups (for peer losses) */
  /* on that list: read by its owner without the lock (its links are not:
   * another thread freeing a neighbour writes them) */
  int listed;
  void *base;
  size_t len, slot; /* the mapping; bytes of one data slot */
  int n, me;
  int cap;   /* the ranks the layout holds (n, or more in a job that may grow) */
  int memfd; /* rank 0 of a layout with room: the segment, for joiners; else -1 */
  uint64_t serial; /* this process's number for the group (a joiner's grant names it) */
  uint32_t comm_id;
  int *world; /* comm rank -> world rank (a copy) */
  struct rlx__shmg_hdr *hdr;
  struct rlx__shmg_line *line; /* line[r]: rank r's */
  unsigned char *data;         /* data(g, r, p) */
  unsigned char *result;
  uint64_t step;     /* the last step this rank took */
  uint64_t first;    /* the first step of the call in progress */
  int first_due;     /* not yet in its cell (rlx__shmg_begin) */
  uint64_t sig[2];   /* and its signature */
  uint64_t run_sig[2]; /* what this rank's line says its calls' signature is */
  /* the signature this rank last wrote in each of its cells, kept here:
   * read back from the cell, whose line the ranks that read it took
   * away, it missed every call (20% of a 2-rank gather's time) */
  uint64_t cell_sig[RLX__SHMG_CELLS][2];
  /* Calls this rank left before every rank had arrived (the root of a
   * small broadcast or scatter only gives, and leaves once its data is
   * posted, as an eager root does), by the cell of their first step (first
   * 0: none): their comparison with the others' calls is owed, made once
   * all have arrived, at the latest before this rank writes that cell's
   * call again (rlx__shmg_owe). */
  struct rlx__shmg_owed owed[RLX__SHMG_CELLS];
  int owing;
  uint64_t owed_last; /* the first step of the last call owed */
  uint64_t owed_next; /* no call owed began before this step (settle walks on from it) */
  uint64_t min_seen; /* every other rank has arrived at least here */
  /* bytes of this step's data in its cell's spill area (0: none), for
   * rlx__shmg_arrive to ask for as many lines of the next one */
  size_t spill_used;
  uint64_t lost_seen; /* when this call first saw a member lost (rlx__now_ns), 0: not */
  /* a copy by reference between members failed once (every member saw
   * it in the same step): the segment's alltoallv streams every block */
  int no_refs;
  /* per rank, the process its blocks by reference are read from: its
   * line's pid at the first read, checked against its socket's other end
   * where we have one (rlx__shmg_pid); 0 not yet, -1 none to trust */
  int *pids;
  struct rlx__engine *engine;
  struct rlx__p2p *p2p;
  /* What the caller's thread waits for now, for the flight recorder (read
   * by the loop's thread): the call's seq + 1 (0: not waiting), then the
   * counter (0 arrive, 1 reduced, 2 fed, 3 taken: shm_wait.c), the rank
   * (-1 every rank) and the step. */
  _Atomic uint64_t w_seq, w_step;
  _Atomic int w_which, w_rank;
};

static inline struct rlx__shmg_cell *rlx__shmg_cell(struct rlx__shm_group *g, int r,
                                                   uint64_t step) {
  return &g->line[r].cell[step & (RLX__SHMG_CELLS - 1)];
}
static inline unsigned char *rlx__shmg_slot(struct rlx__shm_group *g, int r, uint64_t step) {
  return g->data + ((size_t)r * 2 + (step & 1)) * g->slot;
}
/* Where rank r's data of step is: inline in its cell when it is that
 * small, in the cell's spill area up to RLX__SHMG_SPILL bytes, else its
 * slot. */
/* The i-th rank to this one's right (i = 0: itself). Readers by
 * reference go round from their right-hand neighbour: all starting at
 * rank 0, 15 readers on 16 cores contended for one process's pages
 * (allgather 1.0-1.54x vader, staggered 0.51-0.78; README). */
static inline int rlx__shmg_right(const struct rlx__shm_group *g, int i) {
  return g->me + i < g->n ? g->me + i : g->me + i - g->n;
}
static inline int rlx__shmg_in_spill(size_t bytes) {
  return bytes > RLX__SHMG_INLINE && bytes <= RLX__SHMG_SPILL;
}
static inline unsigned char *rlx__shmg_data(struct rlx__shm_group *g, int r, uint64_t step,
                                            size_t bytes) {
  if (bytes <= RLX__SHMG_INLINE)
    return rlx__shmg_cell(g, r, step)->small;
  if (rlx__shmg_in_spill(bytes))
    return g->line[r].spill[step & (RLX__SHMG_CELLS - 1)];
  return rlx__shmg_slot(g, r, step);
}
static inline unsigned char *rlx__shmg_result(struct rlx__shm_group *g, uint64_t step) {
  return g->result + (step & 1) * g->slot;
}

/* Make the group of a communicator whose n members all run on this host
 * (world: comm rank -> world rank): rank 0 makes the segment and sends it,
 * the others take it; then all agree (two small allreduces through
 * run_agree, which returns the minimum of every rank's ok). Returns the
 * group, or NULL when shared memory cannot be used (the reason logged at
 * debug; the communicator keeps its point-to-point algorithms). An error
 * of the agreement itself (a lost member) is returned in *err. cap: the
 * ranks the layout holds (at least n; every member passes the same). */
struct rlx__shm_group *rlx__shmg_setup(struct rlx__engine *e, struct rlx__p2p *p,
                                       uint32_t comm_id, const int *world, int n, int me, int cap,
                                       uint64_t deadline, int (*run_agree)(void *ctx, int *ok),
                                       void *ctx, int *err);
/* Taking a segment over when a communicator grows (rlx_comm_grow): the
 * joiners map it while the job goes on, and the admission's one agreement
 * says whether every rank can take it over; no exchange of its own.
 *
 * A joiner receives the segment from world rank `from` (the members'
 * rank 0, which sends it once the joiner connected: rlx__p2p_send_fd of
 * its memfd) and maps it, for a communicator of n ranks, this one at
 * `me`, the layout holding cap. NULL when it could not (the reason at
 * debug). Not live until rlx__shmg_take_over. */
struct rlx__shm_group *rlx__shmg_receive(struct rlx__engine *e, struct rlx__p2p *p, int from,
                                         const int *world, int n, int me, int cap,
                                         uint64_t deadline);
/* A joiner (rank me of the grown communicator of n ranks), before its
 * admission: its mapping of the segment rlx__shmg_receive gave it,
 * faulted in where the members' calls touched it (and its own slots
 * where rank 0 touched its), so that its first calls take fewer faults
 * the members wait for: on 16 cores 22-32 page faults in its first step
 * instead of 58-121 at 4-8 ranks, its first 814 KB allreduce 0.31-0.51 ms
 * instead of 0.44-0.75. Pages nobody touched yet stay unmade (at 2 ranks
 * large calls run point to point: nothing to copy). Best effort (kernels
 * before 5.14 have no MADV_POPULATE_WRITE: the faults come later). */
void rlx__shmg_prefault(struct rlx__shm_group *g, int me, int n);
/* This rank's data slots, faulted in now (and with result, the reduced
 * chunks' area): a one-rank communicator's segment
 * (rlx__comm_shm_solo), whose calls never touch them, so that the first
 * call of the 2-rank communicator it grows into (a broadcast from it, the
 * leader) takes no faults, and its joiner's prefault finds them made; a
 * 2-rank one's that may grow (rlx__comm_shm), whose large allreduces run
 * point to point, so that the grown communicator's first one does not
 * fault them in in the admission's step. */
void rlx__shmg_touch_own(struct rlx__shm_group *g, int result);
/* A member, at the admission before its agreement (every member at the
 * same step: the calls in the segment are over): rank 0 writes the step
 * joiners start from; each clears its record of a point-to-point call
 * (it names the old numbering). */
void rlx__shmg_mark_adopt(struct rlx__shm_group *g);
/* After an agreement that said every rank can: g serves the grown
 * communicator (comm_id, world: n ranks, me this one's; g keeps world,
 * allocated before the agreement so that nothing can fail after it on
 * one rank alone), members' g the one they had, a joiner's what
 * rlx__shmg_receive mapped (its line set to the members' step, then
 * live). */
void rlx__shmg_take_over(struct rlx__shm_group *g, int member, uint32_t comm_id, int *world,
                         int n, int me);
void rlx__shmg_free(struct rlx__shm_group *g);
/* rlx_finalize: unmap every group still live (communicators the program
 * did not free keep their storage, which rlx_comm_free then frees). Under
 * the loop lock. */
void rlx__shmg_unmap_all(void);
/* Fail the group for every member: err, the comm rank lost (or -1), the
 * call that failed (its seq; UINT64_MAX: whichever is in progress), why.
 * The first failure stays. */
void rlx__shmg_fail(struct rlx__shm_group *g, int err, int lost, uint64_t seq, const char *why);
/* The process rank r's blocks by reference are read from (its line's pid
 * at the first call, then that one), or -1 when it cannot be trusted: 0
 * or less, or another than the pid of our socket to r (SO_PEERCRED, when
 * we have one; warned once). A stream naming another process is corrupt. */
int rlx__shmg_pid(struct rlx__shm_group *g, int r);
/* Wake the members sleeping on the group's futex. */
void rlx__shmg_wake(struct rlx__shm_group *g);
/* Between two looks at something a rare wait waits for (since: when it
 * began): yield the core for 500 us, then sleep 20 us a time. */
void rlx__shmg_rest(uint64_t since);
/* p2p's on_lost: every live group with that world rank fails. Under the
 * loop lock. */
void rlx__shmg_on_lost(int world_rank, const char *why);
/* The ranks call seq on communicator comm_id waits for in its segment
 * ("rank 1 (has not arrived)"), or "" when it does not wait there (the
 * flight recorder's question; under the loop lock). describe_wait: the
 * same for one group (shm_wait.c). */
void rlx__shmg_waiting_for(uint32_t comm_id, uint64_t seq, char *buf, size_t len);
void rlx__shmg_describe_wait(struct rlx__shm_group *g, int which, int r, uint64_t step, char *buf,
                             size_t len);

/* ---- steps (shm_wait.c), on the caller's thread -------------------------- */

/* Begin a call: take its first step number (g->first) and publish the
 * call's signature; first compare what it owes (rlx__shmg_owe) where the
 * others have arrived, waiting for them where its cell is that call's.
 * RLX_OK, or the error that ended the call: a call this rank owed did not
 * match (RLX_ERR_REVOKED, naming both calls), or the wait's. */
int rlx__shmg_begin(struct rlx__shm_group *g, struct rlx__op *op);
/* The call in progress gave all it had to give and leaves without
 * waiting for the others to arrive: each compares its call with the
 * root's, and this rank compares theirs with its own later (at its next
 * call in the segment, or while that call waits), which catches a second
 * rank naming itself root. */
void rlx__shmg_owe(struct rlx__shm_group *g, const struct rlx__op *op);
/* Before writing the slots of step: wait until every rank arrived at
 * step - 1. RLX_OK or the error that ended the call (op->msg says).
 * wait_cell_room: before writing only this rank's cell of step (a
 * payload of up to RLX__SHMG_SPILL bytes): until every rank arrived at
 * step - RLX__SHMG_CELLS + 1. */
int rlx__shmg_wait_room(struct rlx__shm_group *g, struct rlx__op *op, uint64_t step);
int rlx__shmg_wait_cell_room(struct rlx__shm_group *g, struct rlx__op *op, uint64_t step);
/* A call of this rank on the communicator runs point to point (a
 * nonblocking one, rlx_comm_split): a rank waiting for it in the segment
 * learns why it does not come, and which call it is. */
void rlx__shmg_p2p_call(struct rlx__shm_group *g, uint64_t seq, const uint8_t sig[RLX__SIG_SIZE]);
/* Wait for room, copy len bytes of src in as this rank's data of step
 * (bytes: the size that puts it inline or in the cell's spill area, with
 * the cell's room, or in the slot), publish. */
int rlx__shmg_post(struct rlx__shm_group *g, struct rlx__op *op, uint64_t step, const void *src,
                   size_t len, size_t bytes);
/* Publish: this rank's data (or its arrival) for step is in place. */
void rlx__shmg_arrive(struct rlx__shm_group *g, uint64_t step);
void rlx__shmg_reduced(struct rlx__shm_group *g, uint64_t step);
/* Wait until rank r (-1: every rank) has arrived at / reduced step. */
int rlx__shmg_wait_arrived(struct rlx__shm_group *g, struct rlx__op *op, int r, uint64_t step);
int rlx__shmg_wait_reduced(struct rlx__shm_group *g, struct rlx__op *op, int r, uint64_t step);
/* gatherv's chunks fed through the sender's slots (gatherv_shm.c): the
 * root waits until rank r has fed `chunks` in all (its line's fed), the
 * sender until the root (rank root) has taken that many of its own. */
int rlx__shmg_wait_fed(struct rlx__shm_group *g, struct rlx__op *op, int r, uint64_t chunks);
int rlx__shmg_wait_taken(struct rlx__shm_group *g, struct rlx__op *op, int root, uint64_t chunks);
/* Publish a counter of this rank's (or, for taken, the root's of a
 * sender's line) as rlx__shmg_arrive does a step. */
void rlx__shmg_publish(struct rlx__shm_group *g, _Atomic uint64_t *w, uint64_t v);

#endif
