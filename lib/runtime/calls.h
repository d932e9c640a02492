/* lib/runtime's collective calls, shared by the files that define them
 * (collectives.c: the reductions, bcast, allgather, barrier; exchanges.c:
 * gather, scatter, all-to-all and the uneven forms): each checks its
 * arguments, fills a request, picks the algorithm and runs it now
 * (req NULL) or hands it back (rlx__call_launch). */
#ifndef RLX_RUNTIME_CALLS_H
#define RLX_RUNTIME_CALLS_H

#include "base/fastdiv.h"
#include "runtime/runtime.h"

/* The checks every call makes first, inline (three calls of their own
 * were ~60 instructions of a 2-rank 8-byte call's ~1,200); what they say
 * when one fails, out of line (collectives.c's *_refused, which may also
 * find a look of check_comm's was a false alarm: RLX_OK). */
int rlx__call_comm_refused(const char *call, rlx_comm_t *c);
int rlx__call_type_refused(const char *call, rlx_dtype_t dt, size_t count);
int rlx__call_root_refused(const char *call, int root, rlx_comm_t *c);
static inline int rlx__call_check_comm(const char *call, rlx_comm_t *c) {
  /* (any communicator revoked here: this one, perhaps) */
  if (!rlx__rt.initialized || c == NULL || c->revoked || rlx__exec_any_revoked())
    return rlx__call_comm_refused(call, c);
  return RLX_OK;
}
static inline int rlx__call_check_type(const char *call, rlx_dtype_t dt, size_t count,
                                       size_t *esize) {
  if ((unsigned)dt >= RLX_DTYPE_COUNT) {
    *esize = 0; /* (set on every path: the refusal's return is opaque to the compiler) */
    return rlx__call_type_refused(call, dt, count);
  }
  *esize = rlx__dtype_size(dt);
  if (count > rlx__per_elem((SIZE_MAX / 2) / 4096, *esize))
    return rlx__call_type_refused(call, dt, count);
  return RLX_OK;
}
static inline int rlx__call_check_root(const char *call, int root, rlx_comm_t *c) {
  return root < 0 || root >= c->size ? rlx__call_root_refused(call, root, c) : RLX_OK;
}
int rlx__call_not_in_place(const char *call, const char *name, const void *buf);
/* The total of p counts and their hash (FNV-1a, 32 bits): what the
 * signature of a call every rank passes all counts to carries (count and
 * root: call.h), so that ranks whose counts differ fail at once. */
uint32_t rlx__call_counts_hash(const size_t *counts, int p, size_t *total);
void rlx__call_fill(struct rlx_request *rq, int kind, const char *call, rlx_dtype_t dt,
                    rlx_op_t op, size_t count, size_t es, int root, const void *src, void *dst);
/* blocking: the call may run in the communicator's shared segment. */
int rlx__call_pick(struct rlx__op *op, rlx_comm_t *c, size_t bytes, const char *forced,
                   int blocking);
int rlx__call_launch(rlx_comm_t *c, struct rlx_request *rq, rlx_request_t **req);
/* A request already complete (a call with nothing to move), or RLX_OK
 * when req is NULL. */
int rlx__call_done(rlx_request_t **req);
/* A call on a communicator of one rank, its arguments checked: its own
 * bytes from src to dst (none where they are the same), its place in the
 * sequence and the flight recorder (RLX_TRACE and RLX_STATS too, as
 * algorithm "alone"), then done at once (as rlx__call_done); none of the
 * machinery that waits for others (~0.2-0.35 us a call before, against
 * vader's 0.02-0.06). */
int rlx__call_alone(rlx_comm_t *c, int kind, const char *call, rlx_dtype_t dt, rlx_op_t rop,
                    size_t count, int root, const void *src, void *dst, size_t bytes,
                    rlx_request_t **req);

/* A nonblocking form's first step: req is there (else RLX_ERR_ARG, told to
 * the others), *req NULL until the call starts. In a function with c and
 * req. */
#define RLX__NEED_REQ(call)                                                                        \
  do {                                                                                             \
    if (req == NULL)                                                                               \
      return rlx__refused(c, rlx__err(RLX_ERR_ARG, call ": req is NULL"));                         \
    *req = NULL;                                                                                   \
  } while (0)

#endif
