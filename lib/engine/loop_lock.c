/* The loop lock's slow side (loop_lock.h says why it is not a pthread
 * mutex): spin a while, then sleep on the word in the kernel. */
#include <linux/futex.h>
#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "base/fence.h"
#include "base/internal.h"
#include "engine/loop_lock.h"

/* Polls of the word before sleeping (some microseconds): the holder is
 * usually in a turn of the loop or a message's start, far shorter. */
#define SPINS 2000
/* Yields before sleeping, where ranks outnumber cores. */
#define YIELDS 16

void rlx__loop_lock_init(struct rlx__loop_lock *l) {
  atomic_init(&l->held, 0);
  atomic_init(&l->sleepers, 0);
  atomic_init(&l->fence, 0);
  l->light = rlx__fence_private_register();
}

void rlx__loop_lock_fence(struct rlx__loop_lock *l) {
  if (l->light)
    rlx__fence_private_heavy();
  else
    atomic_fetch_add(&l->fence, 0);
}

void rlx__loop_lock_wait(struct rlx__loop_lock *l, int yield) {
  for (int i = 0; i < (yield ? YIELDS : SPINS); i++) {
    if (yield)
      sched_yield(); /* the holder may be waiting for this core */
    else
      rlx__cpu_relax();
    if (rlx__loop_trylock(l))
      return;
  }
  atomic_fetch_add(&l->sleepers, 1);
  rlx__loop_lock_fence(l); /* a releaser either sees us or its store is seen below */
  while (atomic_exchange_explicit(&l->held, 1, memory_order_acquire) != 0)
    (void)syscall(SYS_futex, &l->held, FUTEX_WAIT_PRIVATE, 1, NULL, NULL, 0);
  atomic_fetch_sub(&l->sleepers, 1);
}

void rlx__loop_lock_wake(struct rlx__loop_lock *l) {
  (void)syscall(SYS_futex, &l->held, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
}

#define HAND_OVER_NS 2000000

int rlx__loop_lock_hand_over(struct rlx__loop_lock *l) {
  if (atomic_load_explicit(&l->sleepers, memory_order_relaxed) == 0)
    return 0;
  uint64_t t0 = rlx__now_ns();
  while (atomic_load_explicit(&l->held, memory_order_relaxed) == 0 &&
         atomic_load_explicit(&l->sleepers, memory_order_relaxed) > 0) {
    sched_yield(); /* (the sleeper may need this very core) */
    if (rlx__now_ns() - t0 >= HAND_OVER_NS)
      break;
  }
  return 1;
}
