/* The loop lock: whoever holds it may run the loop and touch the
 * point-to-point layer. A mutex whose release is a plain store (a
 * communicator's lock is one too: runtime.h's rlx__comm_lock).
 *
 * Why not a pthread mutex: its release is a locked instruction, and on
 * x86 a locked instruction waits until every store before it has reached
 * the other cores. A small message's send ends with stores to the
 * shared-memory ring whose lines the receiver, polling, holds: the
 * mutex's release waited for them every message (56% of a sender's time
 * in a window of 8-byte isends on 2 cores). Released with a plain store,
 * those stores drain while the caller goes on; Open MPI's vader, which
 * takes no lock there, pays the same transfers but never waits for them.
 *
 * A thread that finds it taken spins a little, then counts itself among
 * the sleepers and sleeps on the word (futex). The releaser stores 0,
 * then looks at the sleepers: a Dekker pair, whose fast side (every
 * release) keeps the compiler's order only and whose slow side (before a
 * sleep) has the kernel fence every thread of the process
 * (lib/base/fence.h). Where membarrier is refused, the release fences
 * fully (light 0). */
#ifndef RLX_LOOP_LOCK_H
#define RLX_LOOP_LOCK_H

#include <stdatomic.h>

struct rlx__loop_lock {
  _Atomic int held;     /* 1 while held */
  _Atomic int sleepers; /* threads asleep (or about to be) on held */
  int light;            /* releases may skip the full fence (set once, at init) */
  _Atomic int fence;    /* a full fence is a locked add to it (ThreadSanitizer has no fences) */
};

void rlx__loop_lock_init(struct rlx__loop_lock *l);

/* A spinning wait's hint to the core (its sibling thread runs meanwhile). */
static inline void rlx__cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

static inline int rlx__loop_trylock(struct rlx__loop_lock *l) {
  return atomic_load_explicit(&l->held, memory_order_relaxed) == 0 &&
         atomic_exchange_explicit(&l->held, 1, memory_order_acquire) == 0;
}

void rlx__loop_lock_wait(struct rlx__loop_lock *l, int yield); /* loop_lock.c */
void rlx__loop_lock_wake(struct rlx__loop_lock *l);

/* yield: the holder may share this thread's core (spinning would take
 * the core it needs to let go) */
static inline void rlx__loop_lock(struct rlx__loop_lock *l, int yield) {
  if (!rlx__loop_trylock(l))
    rlx__loop_lock_wait(l, yield);
}

/* The fast side of a Dekker pair after a release store: the order the
 * slow side's rlx__loop_lock_fence gives, or a full fence without it. */
static inline void rlx__loop_lock_after_release(struct rlx__loop_lock *l) {
  if (l->light)
    atomic_signal_fence(memory_order_seq_cst); /* the compiler keeps the load after the store */
  else
    atomic_fetch_add(&l->fence, 0);
}

/* The slow side: after storing its flag, before looking at the other's. */
void rlx__loop_lock_fence(struct rlx__loop_lock *l);

static inline void rlx__loop_unlock(struct rlx__loop_lock *l) {
  atomic_store_explicit(&l->held, 0, memory_order_release);
  rlx__loop_lock_after_release(l);
  if (atomic_load_explicit(&l->sleepers, memory_order_relaxed) > 0)
    rlx__loop_lock_wake(l);
}

/* Just after a release: while a thread sleeps on the lock, give it the
 * core until it has the lock (at most 2 ms). A holder that takes the lock
 * back at once, every turn, otherwise starves it: the sleeper, woken by
 * the release and bound to the holder's core as a rank's threads are,
 * did not even run before the lock was taken again (rlx_comm_revoke from
 * another thread waited for the very call it revoked to end, 0.36-1.03 s
 * in faults.sh's revokeref; 16-28 ms with this). 1 if a thread slept on
 * it, 0 (at once) if none did. */
int rlx__loop_lock_hand_over(struct rlx__loop_lock *l);

#endif
