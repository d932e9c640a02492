/* Asymmetric fences between processes, for a Dekker handshake whose two
 * sides run at very different rates (liburcu's and Folly's heavy/light
 * barrier pair). Each side stores its flag, then loads the other's; on
 * x86 that needs a full fence (a locked instruction) between the two, and
 * on the fast side, which runs on every message, that fence waits for
 * every store before it to leave the core: for a shared-memory ring, the
 * ownership of the lines the consumer last read. Instead the fast side
 * keeps only the compiler's order, and the slow side (before it sleeps)
 * has the kernel run a full barrier on every CPU that runs a thread of a
 * process registered for it (membarrier(2), MEMBARRIER_CMD_GLOBAL_EXPEDITED):
 * either the fast side's store was visible before that barrier, or its
 * load comes after it and sees the slow side's flag.
 *
 * Both processes must be registered, and the slow side must use the heavy
 * fence whenever the fast side may use the light one: callers publish
 * whether they registered, and fall back to full fences otherwise (an old
 * kernel, a seccomp policy without membarrier). */
#ifndef RLX_BASE_FENCE_H
#define RLX_BASE_FENCE_H

#include <linux/membarrier.h>
#include <stdatomic.h>
#include <sys/syscall.h>
#include <unistd.h>

/* Register this process (idempotent; a forked child registers again):
 * 1 when it may use both sides of the pair from now on, else 0. */
static inline int rlx__fence_register(void) {
  return syscall(__NR_membarrier, MEMBARRIER_CMD_REGISTER_GLOBAL_EXPEDITED, 0, 0) == 0;
}

/* The slow side's fence: 0 when every registered process's running
 * threads have executed a full barrier, -1 when the kernel refused (a
 * plain full fence was done instead, which covers only full-fenced
 * partners). */
static inline int rlx__fence_heavy(void) {
  if (syscall(__NR_membarrier, MEMBARRIER_CMD_GLOBAL_EXPEDITED, 0, 0) == 0)
    return 0;
  /* a locked read-modify-write is a full fence on the hardware (and
   * ThreadSanitizer, which has no fences, accepts it) */
  static _Atomic unsigned dummy;
  atomic_fetch_add(&dummy, 0);
  return -1;
}

/* The same pair between the threads of this process only
 * (MEMBARRIER_CMD_PRIVATE_EXPEDITED: the kernel interrupts only the CPUs
 * that run this process's threads). Register once: 1 when the heavy side
 * may be used from now on, else 0 (then both sides fence fully). */
static inline int rlx__fence_private_register(void) {
  return syscall(__NR_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, 0, 0) == 0;
}

static inline void rlx__fence_private_heavy(void) {
  if (syscall(__NR_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0) != 0) {
    static _Atomic unsigned dummy; /* (registered, so not expected: a full fence at least) */
    atomic_fetch_add(&dummy, 0);
  }
}

#endif
