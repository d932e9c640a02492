/* Between the executor's two files: exec.c (rounds, start, end) and
 * exec_fail.c (failures, mismatches, ABORTs, revocations). Everything
 * under the engine's loop lock. */
#ifndef RLX_EXEC_INTERNAL_H
#define RLX_EXEC_INTERNAL_H

#include "coll.h"

/* One more step of an operation's progress, for its waiter
 * (rlx__engine_wait). A load and a store, not a locked add: its one
 * writer at a time (the loop's holder, or a shared-memory call's own
 * thread) needs none, and a locked instruction waited here for the
 * segment's lines the call had just written to reach the other ranks. */
static inline void rlx__exec_bump(atomic_uint *progress) {
  atomic_store_explicit(progress, atomic_load_explicit(progress, memory_order_relaxed) + 1,
                        memory_order_relaxed);
}

/* Operations in flight (rlx__exec_start's). */
extern struct rlx__list rlx__exec_active;
/* exec.c: op is over with status: off the list, its transfers withdrawn,
 * its caller told. Once only. */
void rlx__exec_finish(struct rlx__op *op, int status);
/* exec_fail.c: what this rank called at op's seq, for frames of another
 * call that come after op is over. */
void rlx__exec_remember_done(const struct rlx__op *op);
/* exec_fail.c: a transfer of op failed: op fails naming the call and the
 * peer (a lost peer first gives the ABORT that may explain it 200 ms). */
void rlx__exec_fail_xfer(struct rlx__op *op, struct rlx__xfer *x);
/* exec_fail.c: a partner (world rank) called another call (signature
 * sig): op fails as a mismatch, and the members are told. */
void rlx__exec_fail_mismatch(struct rlx__op *op, int from_world, const uint8_t sig[RLX__SIG_SIZE]);
/* exec_fail.c: an ABORT that came for op before it started (or a
 * revocation, or a failure of the call that made its communicator):
 * op fails with it (1), else 0. */
int rlx__exec_take_early(struct rlx__op *op);

#endif
