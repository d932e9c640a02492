/* The flight recorder: the last RLX_FLIGHT calls of this rank, kept in a
 * ring whatever else is configured, so that after a hang or a failure the
 * question "which rank is behind, in which call" has an answer. Entering
 * a call costs a spinlock and a few stores (no formatting: a pthread mutex
 * was 5% of an 8-byte allreduce in shared memory), leaving one three
 * stores and no lock: a locked instruction there waited for the call's
 * last stores to the shared segment to reach the ranks polling it (34%
 * of a 2-rank 8-byte scatter's root). The text is made only when the
 * record is written out, the one long hold. */
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "base/internal.h"
#include "observe/observe.h"

/* What rlx__flight_enter writes, under the lock */
struct entered {
  uint64_t ticket; /* 1 + the call's index since rlx_init; 0 = empty */
  uint32_t comm_id;
  uint64_t seq;
  int kind, dt, op, root;
  unsigned long long count;
  const char *call, *algo;
  uint64_t t0;
};

struct entry {
  struct entered in;
  /* Written by rlx__flight_leave without the lock: the ticket of the call
   * that left (its end and status valid when it is this entry's ticket),
   * stored last. A call that left after RLX_FLIGHT later ones entered
   * writes an entry no longer its own, whose ticket it does not match. */
  _Atomic uint64_t left, t1;
  _Atomic int status; /* 0 done, < 0 the error */
};

static struct {
  atomic_flag lock;
  struct entry *ring;
  /* n: the calls a dump shows; the ring holds the power of two at or
   * above it, an entry found by a mask: a call's path has no division
   * (20-90 cycles each: base/fastdiv.h) */
  uint64_t mask;
  int n, rank, dump_on_error;
  uint64_t calls, t_init;
  rlx__flight_describe_fn describe;
} fr = {.lock = ATOMIC_FLAG_INIT};

static void fr_lock(void) {
  while (atomic_flag_test_and_set_explicit(&fr.lock, memory_order_acquire))
    sched_yield(); /* held long only while a record is written out */
}

static void fr_unlock(void) { atomic_flag_clear_explicit(&fr.lock, memory_order_release); }

int rlx__flight_init(int n, int dump_on_error, int rank, rlx__flight_describe_fn describe) {
  fr_lock();
  fr.describe = describe;
  free(fr.ring);
  size_t cap = 1;
  while (n > 0 && cap < (size_t)n)
    cap *= 2;
  fr.ring = n > 0 ? calloc(cap, sizeof(*fr.ring)) : NULL;
  fr.n = fr.ring ? n : 0;
  fr.mask = cap - 1;
  fr.rank = rank;
  fr.dump_on_error = dump_on_error;
  fr.calls = 0;
  fr.t_init = rlx__now_ns();
  fr_unlock();
  return n > 0 && fr.ring == NULL ? rlx__err(RLX_ERR_NOMEM, "no memory for RLX_FLIGHT=%d", n)
                                  : RLX_OK;
}

void rlx__flight_fini(void) {
  fr_lock();
  free(fr.ring);
  fr.ring = NULL;
  fr.n = 0;
  fr_unlock();
}

uint64_t rlx__flight_enter(uint32_t comm_id, uint64_t seq, int kind, const char *call, int dt,
                           int op, int root, unsigned long long count, const char *algo,
                           uint64_t now) {
  uint64_t ticket;
  fr_lock();
  ticket = ++fr.calls;
  if (fr.n > 0) {
    fr.ring[ticket & fr.mask].in =
        (struct entered){ticket, comm_id, seq, kind, dt, op, root, count, call, algo, now};
  }
  fr_unlock();
  return ticket;
}

/* (fr.ring and fr.n change only at rlx_init and rlx_finalize, when no
 * call is in flight) */
void rlx__flight_leave(uint64_t ticket, int status, uint64_t now) {
  if (fr.n <= 0)
    return;
  struct entry *e = &fr.ring[ticket & fr.mask];
  atomic_store_explicit(&e->t1, now, memory_order_relaxed);
  atomic_store_explicit(&e->status, status < 0 ? status : 0, memory_order_relaxed);
  atomic_store_explicit(&e->left, ticket, memory_order_release);
}

int rlx__flight_dump_on_error(void) {
  fr_lock();
  int v = fr.dump_on_error;
  fr_unlock();
  return v;
}

void rlx__flight_dump(const char *reason,
                      void (*waiting_for)(uint32_t comm, uint64_t seq, char *buf, size_t len)) {
  fr_lock();
  uint64_t now = rlx__now_ns(), first = fr.calls >= (uint64_t)fr.n ? fr.calls - (uint64_t)fr.n + 1 : 1;
  int kept = fr.n > 0 ? (int)(fr.calls - first + 1) : 0;
  /* Lines are assembled whole, each written with one fprintf, so another
   * thread's log line cannot split one. */
  fprintf(stderr, "rlxcoll[%d] flight-recorder\t%s\t%d\t%llu\n", fr.rank, reason, kept,
          (unsigned long long)fr.calls);
  for (uint64_t t = first; fr.n > 0 && t <= fr.calls; t++) {
    const struct entry *e = &fr.ring[t & fr.mask];
    const struct entered *in = &e->in;
    if (in->ticket != t)
      continue;
    char call[160], state[40], waiting[400] = "";
    if (fr.describe)
      fr.describe(call, sizeof(call), in->call, in->kind, in->dt, in->op, in->root, in->count);
    else
      snprintf(call, sizeof(call), "%s", in->call);
    int left = atomic_load_explicit(&e->left, memory_order_acquire) == t;
    int status = left ? atomic_load_explicit(&e->status, memory_order_relaxed) : 1;
    if (status == 1) {
      snprintf(state, sizeof(state), "in-flight");
      if (waiting_for)
        waiting_for(in->comm_id, in->seq, waiting, sizeof(waiting));
    } else if (status == 0) {
      snprintf(state, sizeof(state), "done");
    } else {
      snprintf(state, sizeof(state), "failed:%s", rlx__err_name(status));
    }
    uint64_t end = status == 1 ? now : atomic_load_explicit(&e->t1, memory_order_relaxed);
    fprintf(stderr, "rlxcoll[%d] flight\t%u\t%llu\t%s\t%.6f\t%.6f\t%s\t%s\t%s\n", fr.rank,
            in->comm_id, (unsigned long long)in->seq, state, (double)(in->t0 - fr.t_init) / 1e9,
            (double)(end > in->t0 ? end - in->t0 : 0) / 1e9, call, in->algo ? in->algo : "-",
            waiting);
  }
  fprintf(stderr, "rlxcoll[%d] flight-end\n", fr.rank);
  fflush(stderr);
  fr_unlock();
}
