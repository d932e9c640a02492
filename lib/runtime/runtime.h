/* lib/runtime, the top floor: it uses every floor below (base, engine,
 * observe, bootstrap, transport, coll) and nothing uses it but the public
 * entry points. The process-wide runtime: configuration, the progress
 * engine, the point-to-point layer, the cards of every rank and the world
 * communicator. */
#ifndef RLX_RUNTIME_H
#define RLX_RUNTIME_H

#include <pthread.h>
#include "bootstrap/bootstrap.h"
#include "coll/coll.h"
#include "engine/engine.h"
#include "base/internal.h"
#include "transport/p2p.h"

struct rlx_comm {
  uint32_t id;
  int rank, size;
  int *world; /* comm rank -> world rank */
  int leader; /* comm rank of the member with the lowest election id */
  uint64_t seq;
  uint64_t internal_seq; /* the library's own calls on it (RLX__SEQ_INTERNAL | n) */
  int revoked; /* the error that revoked it, 0 while usable */
  char revoked_why[640];
  void *scratch; /* blocking calls' scratch, grown as needed */
  size_t scratch_len;
  void *wire; /* RLX_WIRE's half-width copy, for blocking calls */
  size_t wire_len;
  uint32_t children; /* communicators made from this one (split, dup) */
  /* rlx_comm_create_group's: how many groups of each (list, tag) key this
   * rank made from this one (comm_group.c) */
  struct {
    uint32_t key, count;
  } *groups;
  int ngroups;
  /* rlx_comm_split's call that made it: (parent id, that call's sequence
   * number + 1); 0: none (the world, dup, shrink, grow) */
  uint32_t parent_id;
  uint64_t parent_seq;
  /* rlx_comm_set_timeout's limit for a call, when timeout_set; else
   * RLX_TIMEOUT's (rlx__comm_deadline) */
  double timeout_s;
  int timeout_set;
  /* Its shared segment, when every member runs on this host (made at its
   * first collective; lib/coll/shm_group.h); shm_state 0 not
   * tried yet, 1 made, -1 none. */
  struct rlx__shm_group *shm;
  int shm_state;
  atomic_int in_flight; /* nonblocking requests not yet waited for */
  /* the thread whose blocking call runs on it (pthread_self), 0: none;
   * another thread's call meanwhile is refused (rlx__comm_take) */
  _Atomic uintptr_t owner;
  /* serialises calls on this communicator: a lock whose release is a
   * plain store (loop_lock.h), as a blocking call in shared memory
   * releases it right after its last stores to the segment */
  struct rlx__loop_lock mtx;
  struct rlx__list live; /* in comm.c's list (rlx__comm_busy); not the world */
};

/* A message in flight (messages.c): its transfer, and what the call asked
 * for, for its status and its errors. An rlx_request_t of rlx_isend or
 * rlx_irecv is one of these (is_msg first in both: requests.c tells them
 * apart), a tenth of a collective's. */
struct rlx__msg_req {
  int is_msg; /* 1 */
  int recv;   /* a receive */
  atomic_int done;
  atomic_uint progress;
  rlx_comm_t *comm;
  uint64_t deadline;
  const char *call;
  rlx_dtype_t dt;
  size_t count;
  int peer, tag; /* as called: comm rank (or RLX_ANY_SOURCE), tag (or RLX_ANY_TAG) */
  struct rlx__xfer x;
};

/* An operation in flight: a blocking call's lives on its stack, a
 * nonblocking one's on the heap until rlx_wait/rlx_test frees it. */
struct rlx_request {
  int is_msg; /* 0: a collective's (1: a struct rlx__msg_req) */
  struct rlx__op op;
  rlx_comm_t *comm;
  int nonblocking;
  void *scratch; /* owned (nonblocking) */
  uint64_t deadline;
  /* RLX_WIRE: op runs on half-width data in `half`; the float32 result is
   * widened into `out` at the end */
  void *half;
  float *out;
};

/* Wait for a started collective's request and apply its outcome; the
 * request stays the caller's to free (collectives.c). */
int rlx__coll_finish(struct rlx_request *rq);
/* Wait for a message's request, apply its outcome and status (st may be
 * NULL) and free it (messages.c). */
int rlx__msg_complete(rlx_request_t *r, rlx_status_t *st);
/* Withdraw a message's request that will not be waited for, and free it. */
void rlx__msg_abandon(rlx_request_t *r);

/* The host's cores as rlx__host_cores finds them (n = 0: unknown). */
struct rlx__cores {
  int n;
  cpu_set_t *set;      /* each core's CPUs, in hwloc's logical order */
  unsigned char *near; /* in the NUMA node(s) of the calling thread's binding */
  int own;             /* the core that binding is, -1: not exactly one */
};

struct rlx__runtime {
  int initialized;
  /* The thread whose rlx_finalize is under way (0: none): finalize refuses
   * while another thread is in a blocking call (a communicator's owner,
   * rlx__comm_busy), and a call refuses to start while another thread
   * finalizes, instead of running on a torn-down library. */
  _Atomic uintptr_t finalizing;
  void *reserve; /* rlx__comm_make_reserve's scratch, until a communicator takes it */
  size_t reserve_len;
  struct rlx__config cfg;
  struct rlx__engine engine;
  int engine_up, p2p_up;
  int p2p_alone; /* a job of one: rlx__p2p_init_alone, for messages to itself */
  struct rlx__p2p p2p;
  struct rlx__card *cards;
  struct rlx_comm world;
  int local_rank, local_size, ncores;
  /* Where the progress thread runs (RLX_PROGRESS_BIND, rlx__tune_waiting
   * decides): the rank's own CPUs, or the cores no local rank takes. */
  struct rlx__cores cores;
  cpu_set_t own_cpus;
  char rundir[128], unix_path[160];
  struct rlx__rdv_server *rdv;
  int pmix;                 /* launched by a PMIx server */
  int64_t clock_offset_ns;  /* our realtime clock minus the rendezvous host's */
  uv_signal_t usr1;         /* SIGUSR1: write the flight recorder */
  int usr1_on;
  int ncards;               /* slots in cards[]: every rank the job has had (cfg.size) */
  /* A job that may grow (cfg.max_np > 0): this rank's standing
   * connection to the rendezvous (fd -1: none), under member_mtx. */
  struct rlx__rdv_member member;
  pthread_mutex_t member_mtx;
  int joined;               /* this process joined a running job (RLX_JOIN=1) */
  /* The communicator rlx_finalize's barrier runs on once the job grew or
   * shrank: a private copy (an id of its own) of the newest one, made
   * from the communicator whose id is last_src (NULL: the world). */
  struct rlx_comm *last;
  uint32_t last_src;
};

extern struct rlx__runtime rlx__rt;

/* host.c */
int rlx__host_identity(char *buf, size_t len);
/* Cores on this host (hwloc); binding gets "bound to cpus 3" or
 * "not bound: cpus 0-1"; cores the list of them (rlx__cores_free). */
int rlx__host_cores(char *binding, size_t len, struct rlx__cores *cores);
void rlx__cores_free(struct rlx__cores *c);
/* The CPUs of the near cores no local rank takes when the launcher bound
 * local rank r to core r (as rlxrun and srun's block binding do); how
 * many cores (0: none, or a binding of another shape, whose neighbours
 * cannot be told). */
int rlx__cores_spare(const struct rlx__cores *c, int local_rank, int local_size, cpu_set_t *out);
/* "0-3,8" (shortened when len runs out). */
void rlx__cpu_list(const cpu_set_t *set, char *out, size_t len);

/* pmix.c: launch by a PMIx server. */
int rlx__pmix_present(void);
/* Rank, size, local placement and the job key from PMIx into cfg. */
int rlx__pmix_init(struct rlx__config *cfg);
/* Publish our card, fence, read everyone's. */
int rlx__pmix_exchange(const struct rlx__card *mine, struct rlx__card *cards, int size,
                       double timeout_s);
void rlx__pmix_finalize(void);

/* launcher.c: a rank rlxrun started exits when rlxrun is gone
 * (RLX_LAUNCHER_FD); unwatch at teardown, under the loop lock. */
void rlx__watch_launcher(uv_loop_t *loop);
void rlx__unwatch_launcher(void);

/* shrink.c: rlx_comm_shrink's agreement on who of c is alive, named call
 * in messages; probe_first: probe the members with no connection before
 * the first round too (rlx_comm_grow's agreement skips it: every member
 * is expected alive, and one that is not fails the round). flags (or
 * NULL): this rank's in, the AND of every agreed rank's out. */
int rlx__comm_agree(rlx_comm_t *c, const char *call, int probe_first, uint32_t *flags,
                    rlx_comm_t **out);
/* runtime.c: spin or yield by how many ranks share this host's cores
 * (rt->local_size); returns the spin budget in us. */
long rlx__tune_waiting(struct rlx__runtime *rt);
/* collectives.c: one of the library's own collectives (splits, shrink's
 * and grow's agreements, the shared segment's, finalize's barrier), the
 * call as made: kind (RLX__CK_COMM, RLX__CK_FINALIZE), the name its
 * messages use, count elements of dt from src into dst, by algo; the rest
 * (root, op, an internal sequence) the caller sets after. Then run it to
 * completion on c with rlx__run_op. */
void rlx__internal_op(struct rlx__op *op, int kind, const char *call, rlx_dtype_t dt,
                      size_t count, const void *src, void *dst, const struct rlx__algo *algo);
int rlx__run_op(rlx_comm_t *c, struct rlx__op *op);
/* comm.c: index in world[] of the member that leads (the lowest
 * generation, then the lowest election id); the mixing of ids of new
 * communicators. */
int rlx__elect(const int *world, int n);
uint32_t rlx__id_mix(uint32_t h, uint32_t v);
/* grow.c: a joiner's admission (rlx__rdv_join's block) into the runtime:
 * its rank, the cards, and the grown communicator as its world; the
 * agreement that ends its rlx_init. */
int rlx__join_admitted(struct rlx__runtime *rt, uint32_t index, const uint8_t *blk, size_t len,
                       int rdv_fd);
int rlx__join_confirm(void);
/* comm.c: the communicator rlx_finalize's barrier uses (c grew or shrank
 * into next: next is the newest). */
void rlx__set_last(const rlx_comm_t *from, const rlx_comm_t *next);
/* An admission still between its halves at rlx_finalize: dropped. */
void rlx__grow_fini(void);
/* comm_shm.c: does c run its blocking collectives in a shared segment?
 * Makes it at the first call: 1 yes, 0 no, or the error of the members'
 * agreement (rlx_errmsg says). Free: at the communicator's release. */
int rlx__comm_shm(rlx_comm_t *c);
/* Do c's calls run in the segment it has? (A one-rank communicator's
 * segment, rlx__comm_shm_solo, only waits for its joiners.) */
int rlx__comm_in_shm(const rlx_comm_t *c);
/* The world of a job of one rank that may grow (RLX_MAX_NP above 1)
 * gets a segment too, at rlx_init, with its own slots faulted in, so that
 * its joiner takes it over as a larger communicator's does: else the
 * grown communicator's first call made one (~0.15 ms on 2 cores) and its
 * first large call faulted the slots in (~0.4 ms), both in the step every
 * rank waits for. (Not at the first rlx_comm_grow: the welcome's step
 * then paid more than the admission's saved.) Its own calls never run in
 * it. 1 it has one, 0 not. */
int rlx__comm_shm_solo(rlx_comm_t *c);
/* The algorithm of one of the library's own calls (kind, bytes) on c: the
 * shared segment's when c has one and selection picks it there (point to
 * point, every call waits on the loop's wake-ups: ~1 ms a call on an
 * oversubscribed host), else the point-to-point one given. */
const struct rlx__algo *rlx__comm_internal_algo(const rlx_comm_t *c, int kind, size_t bytes,
                                                const struct rlx__algo *p2p);
/* The least of every member's value: a small allreduce on c (in its
 * segment when it has one), named call; internal: one of the library's
 * own calls, numbered apart from the program's. */
int rlx__comm_least(rlx_comm_t *c, const char *call, int32_t mine, int32_t *least,
                    int internal);
/* Calls on one communicator do not overlap across threads: a blocking
 * call takes c for its thread (*took 1), a nonblocking one only checks;
 * RLX_ERR_STATE when another thread's blocking call holds it. The
 * library's own calls inside a call of the same thread pass (*took 0).
 * rlx__comm_give releases what a call took. */
int rlx__comm_take(rlx_comm_t *c, const char *call, int blocking, int *took);
void rlx__comm_give(rlx_comm_t *c);
/* rc of a call on c: when the call failed its argument check
 * (RLX_ERR_ARG), it still takes its place in c's sequence of calls and
 * the other members hear why (an ABORT), so a call they made meanwhile
 * fails at once, naming it; a refusal every member made alike leaves c
 * usable. Returns rc, rlx_errmsg kept. */
int rlx__refused(rlx_comm_t *c, int rc);
void rlx__comm_shm_free(rlx_comm_t *c);
/* c's segment (and numbering of calls) to `to`, a communicator of c's
 * members in c's order; c's calls go point to point from then on. */
void rlx__comm_shm_hand_over(rlx_comm_t *c, rlx_comm_t *to);
/* Growing c to grown, can c's segment serve it (c has one with room, and
 * every rank of grown is on this host, as a joiner sees too)? Its serial
 * (a number of this process's for it), else 0: the welcome offers it to
 * the joiners, and the admission checks c still has that one. */
uint64_t rlx__comm_shm_offer(const rlx_comm_t *c, const rlx_comm_t *grown);
/* A joiner (c: the communicator it was welcomed into) maps the segment
 * the members' rank 0, world rank from, sends it; NULL: none (logged at
 * debug), or c cannot use one. */
struct rlx__shm_group *rlx__comm_shm_receive(const rlx_comm_t *c, int from);
/* s, just agreed on by rlx_comm_grow with every rank able to, takes over
 * the segment: members pass from (the communicator it grew from, its
 * first members in order: it goes point to point from then on), joiners
 * the group rlx__shmg_receive mapped; world: room for s's ranks, taken
 * (allocated before the agreement: nothing fails on one rank alone). */
void rlx__comm_shm_take_over(rlx_comm_t *s, rlx_comm_t *from, struct rlx__shm_group *joined,
                             int *world);
/* A new communicator (id 0, the world's, becomes 1) owning world, its
 * leader elected; NULL when out of memory (world then still the caller's). */
rlx_comm_t *rlx__comm_new(uint32_t id, int *world, int n, int rank);
/* A communicator of c's members in c's order, its id c's next child's
 * mixed with mix (every member makes it at the same call: no exchange). */
int rlx__comm_copy(rlx_comm_t *c, uint32_t mix, rlx_comm_t **out);
/* A call on c that starts at `from` fails at the returned time (0: never):
 * rlx_comm_set_timeout's limit, else RLX_TIMEOUT's. rlx__comm_timeout: that
 * limit in seconds. Both put in *why (unless NULL) the name of its source,
 * for messages. */
uint64_t rlx__comm_deadline(const rlx_comm_t *c, uint64_t from, const char **why);
double rlx__comm_timeout(const rlx_comm_t *c, const char **why);
/* The list of communicators in use: joined at creation (rlx__comm_new; the
 * world, which a growth rewrites in place, is not in it), left at
 * rlx__comm_release. rlx__comm_busy: how many, the world too, have a
 * blocking call of a thread other than self in progress. */
void rlx__comm_live(rlx_comm_t *c);
int rlx__comm_busy(uintptr_t self);
/* Free a communicator's storage (not the world's struct itself). */
void rlx__comm_release(rlx_comm_t *c);
/* rlx_init, a job of one rank that may grow or a joiner: the scratch its
 * 2-rank communicator's first large call will want, made and touched now
 * (rt->reserve); rlx__comm_take_reserve hands it to the communicator that
 * becomes the world. comm.c says why. */
void rlx__comm_make_reserve(struct rlx__runtime *rt);
/* c takes the scratch *buf of *len bytes when it has none (1), leaving
 * *buf NULL: a growth hands a communicator's on, and rlx_init its reserve. */
int rlx__comm_adopt_scratch(rlx_comm_t *c, void **buf, size_t *len);
void rlx__comm_take_reserve(struct rlx__runtime *rt, rlx_comm_t *c);

/* c->mtx (yielding where ranks outnumber cores, as the engine does) */
static inline void rlx__comm_lock(rlx_comm_t *c) {
  rlx__loop_lock(&c->mtx, atomic_load_explicit(&rlx__rt.engine.yield, memory_order_relaxed));
}
static inline void rlx__comm_unlock(rlx_comm_t *c) { rlx__loop_unlock(&c->mtx); }

#endif
