/* lib/coll, above base, engine, observe and transport (its frames and
 * point-to-point transfers); the runtime uses it. The contract inside
 * lib/coll/: reduction kernels, half-precision conversion, and the
 * round-based algorithm interface every collective algorithm file
 * implements. */
#ifndef RLX_COLL_H
#define RLX_COLL_H

#include <stddef.h>
#include <stdint.h>
#include <rlxcoll/rlxcoll.h>

/* ---- half precision: ../half.h (the base library's) ------------------------ */
#include "base/half.h"

/* ---- reduction kernels (reduce.c) ---------------------------------------- */
/* out[i] = a[i] op b[i] for i < n; out may alias a or b. RLX_AVG reduces as a
 * sum here; rlx__avg_finish divides by the rank count at the end. Floating
 * MIN/MAX propagate NaN, so every kernel is symmetric in a and b. */
void rlx__reduce(void *out, const void *a, const void *b, size_t n, rlx_dtype_t dt,
                 rlx_op_t op);
void rlx__avg_finish(void *buf, size_t n, rlx_dtype_t dt, int nranks);
int rlx__dtype_is_float(rlx_dtype_t dt);

/* ceil(log2 n) for n >= 1: the rounds of a tree or dissemination. */
static inline long rlx__ceil_lg(long n) {
  long lg = 0;
  while ((1L << lg) < n)
    lg++;
  return lg;
}

/* ---- operations and their rounds (exec.c) -------------------------------- */
#include <stdatomic.h>
#include "transport/p2p.h"
#include "base/tuning.h"
#include "call.h"

struct rlx__shm_group;

#define RLX__ROUND_MAX 4
#define RLX__LANES_MAX 4

/* One round of an algorithm: transfers that run at once, then local work.
 * Peers are communicator ranks. */
struct rlx__round {
  int n;
  struct {
    int send; /* 1 send, 0 receive */
    int peer;
    void *buf;
    size_t len;
  } x[RLX__ROUND_MAX];
  /* after the transfers: out = a op b over red_count elements */
  void *red_out;
  const void *red_a, *red_b;
  size_t red_count;
  /* after that: divide avg_count elements at avg_buf by the rank count */
  void *avg_buf;
  size_t avg_count;
  /* or a plain copy */
  void *copy_dst;
  const void *copy_src;
  size_t copy_len;
  /* > k: the rounds after this one up to skip_to (not included) are empty,
   * and the lane goes on with round skip_to (rounds keep their numbers:
   * they key the frames) */
  long skip_to;
};

struct rlx__op;

/* Run a round's local work (round.c): the copy, then the reduction, then
 * the average, as the algorithm described them. */
void rlx__round_work(const struct rlx__op *op, const struct rlx__round *r);

struct rlx__algo {
  /* The one name of the algorithm: RLX_<COLL>_ALGO takes it, and logs,
   * traces, the flight recorder and RLX_STATS show it. */
  const char *name;
  const char *alias; /* a shorter spelling RLX_<COLL>_ALGO also takes, or NULL */
  /* Precompute what the rounds need (and op->nlanes, default 1); return
   * the scratch bytes wanted. */
  size_t (*setup)(struct rlx__op *op);
  /* Describe round k (0, 1, ...) of a lane; return 0 when the lane has no
   * round k. Lanes run independently of each other, so one lane's
   * transfers proceed while another reduces (pipelining). */
  int (*round)(struct rlx__op *op, int lane, int k, struct rlx__round *r);
  /* Or: the whole operation, run on the caller's thread in the
   * communicator's shared segment (op->shm; shm_group.h); RLX_OK or the
   * error, op->msg saying why. Only for blocking calls. */
  int (*run)(struct rlx__op *op);
};

/* One independent sequence of rounds of an operation. */
struct rlx__lane {
  int k, pending, finished;
  struct rlx__round round;
  struct rlx__xfer xf[RLX__ROUND_MAX];
  int active[RLX__ROUND_MAX];
  uint64_t posted[RLX__ROUND_MAX]; /* when each was posted (RLX_TRACE only) */
};

/* What an algorithm's setup works out once for its rounds, by family. */
union rlx__algo_state {
  struct { /* recursive doubling, Rabenseifner: the power of two below size */
    long pof2, rem, lg, newrank; /* newrank -1: a rank folded in before the doubling */
  } rd;
  struct { /* rings: a payload in segments, lanes over them */
    long seg_elems, nseg;
    long most; /* reduce_scatterv: its largest block, in elements */
  } ring;
  struct { /* the binomial bcast: a tree over segments */
    long vrank, levels, nseg, seg_bytes;
  } bino;
  struct { /* trees rooted anywhere: the rank counted from the root */
    long v, lg;
  } tree;
  struct { /* algorithms of a fixed number of rounds (Bruck, dissemination) */
    long steps;
  } rounds;
};

struct rlx__op {
  /* Every field from here to `seq` is written on every call's way before
   * it is read (rlx__call_fill, rlx__call_pick, the start, exec's ready),
   * so a call clears only the fields from `seq` to `msg` (fill()): the
   * 400 bytes it cleared before were ~45 instructions of a 2-rank 8-byte
   * call's ~1,100, on every rank. */
  /* the call */
  int kind; /* enum rlx__coll_kind */
  uint8_t sig[RLX__SIG_SIZE]; /* its signature, as every frame of it carries */
  const char *call;
  rlx_dtype_t dt;
  rlx_op_t rop;
  size_t count, esize;
  int root;
  int comm_taken; /* the call took its communicator for its thread (rlx__comm_take) */
  const void *src; /* equals dst when in place */
  void *dst;
  /* the communicator */
  struct rlx__p2p *p2p;
  struct rlx__engine *engine; /* to wake callers sleeping on its completion */
  const int *world; /* comm rank -> world rank */
  int rank, size;
  uint32_t comm_id;
  /* the call that made the communicator (rlx_comm_split: its parent and
   * sequence number + 1; parent_seq 0: none): an ABORT for it fails this
   * too, since a member that failed it never comes to this communicator */
  uint32_t parent_comm;
  uint64_t parent_seq;
  uint64_t deadline;          /* rlx__now_ns() of RLX_TIMEOUT, 0 = none */
  const char *deadline_from;  /* what set it, for messages (NULL: RLX_TIMEOUT) */
  const struct rlx__algo *algo;
  void *tmp;
  size_t tmp_len;
  int finished;
  /* the outcome */
  int status;
  atomic_int done;
  struct rlx__list active; /* in exec.c's list of operations in flight */
  uv_timer_t *settle;      /* a lost connection, waiting briefly for an ABORT that explains it */
  uint64_t t_start; /* rlx__now_ns() when started (or the coarse clock's, below) */
  int coarse_clock;
  uint64_t ticket;          /* its entry in the flight recorder */
  uint8_t heard[32];        /* comm ranks < 256 we have received from in this call */
  /* From here to `msg`: zero at a call's start (fill() clears them). */
  uint64_t seq;
  /* The uneven calls (rlx_gatherv, ...): elements per rank and where each
   * block starts, in elements, of dst (counts, displs) and of src
   * (scounts, sdispls); those a rank has no part of are NULL (count is
   * then its own block's). NULL for the even calls. */
  const size_t *counts, *displs, *scounts, *sdispls;
  struct rlx__shm_group *shm; /* the communicator's shared segment (algo->run) */
  /* the algorithm's state */
  union rlx__algo_state st; /* the algorithm's precomputed values (its setup's) */
  int nlanes, lanes_left;
  atomic_uint progress;
  void (*on_done)(struct rlx__op *op);
  void *ctx;
  int settle_err;
  /* A call that ended with sends by reference still unacknowledged (a
   * revoked or failed call): their receivers may still read the
   * caller's buffer, so the call is done only once they said they have
   * (exec.c's drain), or at RLX__DRAIN_MS, when the peer is dropped */
  int draining;
  uv_timer_t *drain;
  uint64_t t_done; /* rlx__now_ns() when finished */
  /* t_start and t_done are rlx__tick_ceil_ns() (coarse, never early) when
   * nobody times the call (coarse_clock: no RLX_TRACE, no RLX_STATS): the
   * flight recorder and the deadline need no finer clock, and two precise
   * reads were a tenth of a small shared-memory call */
  /* A wait in the segment did not find what it waited for at once
   * (shm_wait.c). A coarse call in the segment that never waited and
   * took one step ends within about the coarse clock's tick of its start
   * (it copied at most a slot's worth from each rank): its end is its
   * start, one clock read a call instead of two (a 2-rank 8-byte
   * scatterv: ~45 of its ~1300 instructions a call). */
  int waited;
  /* Last, and not cleared with the rest by a call (fill()): the message
   * (set when the call fails; exec clears its first byte) and the lanes
   * (9 KiB: only round-based operations use them, and exec_start clears
   * them). */
  char msg[640];
  struct rlx__lane lane[RLX__LANES_MAX];
};

/* Start an operation whose fields above are filled (tmp sized by the
 * caller from algo->setup). Runs under the engine's loop lock; on_done is
 * called once, from there too. */
void rlx__exec_start(struct rlx__op *op);
/* Is any operation started with rlx__exec_start still in flight? Under
 * the loop lock. */
int rlx__exec_in_flight(void);
/* An operation that runs on the caller's thread (algo->run), without the
 * loop lock on its way (a small call is a few hundred nanoseconds): begin
 * readies it, and fails it at once (1, op->status and op->msg say why)
 * for an ABORT that came before it; while it waits, claim_abort says
 * whether an ABORT for it has come since (1, the same); end finishes it.
 * ABORTs for it wait with the ones that came early (exec_on_abort). */
struct rlx__engine;
int rlx__exec_begin(struct rlx__op *op, struct rlx__engine *e);
int rlx__exec_claim_abort(struct rlx__op *op, struct rlx__engine *e);
void rlx__exec_end(struct rlx__op *op, int status, const char *msg);
/* Tell every other member that op failed (an ABORT with op->status and
 * op->msg). Under the loop lock. */
void rlx__exec_tell(struct rlx__op *op);
/* An ABORT for call (comm_id, seq) to every member of a communicator
 * (world: comm rank -> world rank) but me and skip_world_rank. Under the
 * loop lock. */
void rlx__exec_abort_members(struct rlx__p2p *p, const int *world, int size, int me,
                             uint32_t comm_id, uint64_t seq, const uint8_t sig[RLX__SIG_SIZE],
                             int err, const char *why, int skip_world_rank);
/* "rank R", or "rank R (world rank W)" where the two differ: the transport's
 * reasons name world ranks, a call's messages its communicator's. */
const char *rlx__rank_name(const int *world, int r, char *buf, size_t len);
/* why, a transport's reason, whose ranks are the world's ("connection to
 * rank 3 closed"): as it is on a communicator ranked as the world, else
 * with each "rank N" written "world rank N" into buf. */
const char *rlx__reason_in_world(const int *world, int size, const char *why, char *buf,
                                 size_t len);
/* Fail an unfinished operation (deadline passed, or interrupted): withdraws
 * its transfers and sends the other members an ABORT (as for failures seen
 * in a transfer). An operation that had lost a peer and was
 * waiting for a better reason fails with that loss instead. */
void rlx__exec_abort(struct rlx__op *op, int err, const char *msg);
/* p2p's on_abort: a member failed (comm_id, seq); fail ours with its error
 * and reason, or remember it for when we start that operation. */
void rlx__exec_on_abort(void *ctx, int from, const struct rlx__frame_hdr *h, int err,
                        const char *reason);
/* Communicator comm_id is revoked (rlx_comm_revoke here, or its ABORT from
 * a member): every operation of it in flight here fails now with
 * RLX_ERR_REVOKED and reason, and so does every later one. Under the loop
 * lock. rlx__exec_revoked: whether comm_id is, its reason into buf (any
 * thread). */
void rlx__exec_revoke(uint32_t comm_id, const char *reason);
int rlx__exec_revoked(uint32_t comm_id, char *buf, size_t len);
/* Whether any communicator is revoked here (a look before
 * rlx__exec_revoked's, inline: every call makes it, hardly any finds one). */
extern atomic_int rlx__exec_nrevoked_any;
static inline int rlx__exec_any_revoked(void) {
  return atomic_load_explicit(&rlx__exec_nrevoked_any, memory_order_acquire) != 0;
}
/* This rank refused call (comm_id, seq) by its arguments and told the
 * others: their ABORTs for it (the same refusal) are ignored. Under the
 * loop lock. */
void rlx__exec_refused(uint32_t comm_id, uint64_t seq);
/* p2p's on_early: a DATA frame no receive wanted; if it is for an
 * operation in flight with another signature, that fails as a mismatch. */
void rlx__exec_on_early(void *ctx, int from, const struct rlx__frame_hdr *h);
/* Fill op->sig from the call's fields (every start does it too). */
void rlx__exec_sign(struct rlx__op *op);
/* Describe the operation's call: "rlx_allreduce(count=8, float32, sum)". */
void rlx__exec_describe(const struct rlx__op *op, char *buf, size_t len);
/* Ranks (communicator ranks) the current round still waits on. */
void rlx__exec_waiting_on(const struct rlx__op *op, char *buf, size_t len);
/* The same for the operation (comm_id, seq) if it is in flight, else "".
 * Under the loop lock. */
void rlx__exec_waiting_for(uint32_t comm_id, uint64_t seq, char *buf, size_t len);

/* ---- algorithms, one file each ------------------------------------------- */
/* How many lanes a ring of nseg segments per chunk runs: two, whose
 * rounds interleave on each socket, once a chunk has RLX__RING_LANES_FROM
 * segments, over sockets (by reference one lane beats two), and only
 * while ranks fit the cores: ranks outnumbering them (4 on 2 cores, TCP,
 * bench/ab_builds.sh, 2026-12-01) took 58 against 36 ms at 32 MiB and 120
 * against 70 at 64 MiB with two; 2 ranks: the same either way. */
/* The time for op's stamps (start, end, deadline): its clock's. */
uint64_t rlx__op_now(const struct rlx__op *op);

static inline int rlx__ring_lanes(const struct rlx__op *op, long nseg) {
  return op->size > 1 && nseg >= RLX__RING_LANES_FROM && !rlx__p2p_by_ref(op->p2p) &&
                 !op->p2p->oversubscribed
             ? RLX__RING_LANES
             : 1;
}

extern const struct rlx__algo rlx__allreduce_rd;
extern const struct rlx__algo rlx__allreduce_ring;
extern const struct rlx__algo rlx__allreduce_rabenseifner;
extern const struct rlx__algo rlx__bcast_binomial;
extern const struct rlx__algo rlx__bcast_scatter_allgather;
extern const struct rlx__algo rlx__reduce_binomial;
extern const struct rlx__algo rlx__allgather_ring;
extern const struct rlx__algo rlx__allgather_rd;
extern const struct rlx__algo rlx__allgather_bruck;
extern const struct rlx__algo rlx__reduce_scatter_ring;
extern const struct rlx__algo rlx__barrier_dissemination;
/* in the communicator's shared segment (shm_group.h) */
extern const struct rlx__algo rlx__allreduce_shm;
extern const struct rlx__algo rlx__bcast_shm;
extern const struct rlx__algo rlx__reduce_shm;
extern const struct rlx__algo rlx__allgather_shm;
extern const struct rlx__algo rlx__allgatherv_shm;
extern const struct rlx__algo rlx__gatherv_shm;
extern const struct rlx__algo rlx__scatterv_shm;
extern const struct rlx__algo rlx__reduce_scatter_shm;
extern const struct rlx__algo rlx__barrier_shm;
extern const struct rlx__algo rlx__gather_linear;
extern const struct rlx__algo rlx__scatter_linear;
extern const struct rlx__algo rlx__alltoall_pairwise;
extern const struct rlx__algo rlx__gatherv_linear;
extern const struct rlx__algo rlx__scatterv_linear;
extern const struct rlx__algo rlx__alltoallv_pairwise;
extern const struct rlx__algo rlx__allgatherv_ring;
extern const struct rlx__algo rlx__reduce_scatterv_ring;
extern const struct rlx__algo rlx__gather_shm, rlx__scatter_shm, rlx__alltoall_shm;
extern const struct rlx__algo rlx__alltoallv_shm, rlx__alltoall_shm_big, rlx__scatter_shm_big;
/* allreduce_shm.c's steps, for rlx_reduce too (all = 0: the root alone
 * copies the result out) */
int rlx__shm_reduce_run(struct rlx__op *op, int all);
/* out = every rank's data of step combined in rank order over count
 * elements at byte offset off (bytes: the size that says whether the data
 * are inline or in the slots); half precision combined in float32 and
 * rounded once. */
void rlx__shm_reduce_slots(struct rlx__op *op, struct rlx__shm_group *g, uint64_t step,
                           size_t bytes, size_t off, size_t count, void *out);

/* Selection (select.c): the one table of crossovers. kind is an
 * enum rlx__coll_kind, bytes the whole vector, forced an algorithm's name
 * or alias ("" or "auto" = automatic; "shm" without a shared segment is
 * automatic too). Returns NULL when forced names no algorithm of kind.
 * select_shm.c: for a communicator with a shared segment, its algorithm,
 * or NULL where select.c's table decides. */
const struct rlx__algo *rlx__select(int kind, size_t bytes, int nranks, const char *forced);
const struct rlx__algo *rlx__select_shm(int kind, size_t bytes, int nranks, const char *forced);
/* The algorithm names of a collective, for messages: "rd, ring, ...". */
/* name is one RLX_<COLL>_ALGO takes for kind: "auto", "shm", or an
 * algorithm's name or alias in select.c's tables. */
int rlx__algo_known(int kind, const char *name);
/* Those names, for messages ("auto, recursive-doubling (or rd), ..."), in buf. */
const char *rlx__algo_names(int kind, char *buf, size_t len);

#endif
