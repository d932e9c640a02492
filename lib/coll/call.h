/* What a rank called: the collective kinds (one table of kinds and their
 * public names, used by logs, traces, the flight recorder and stats), and
 * the call signature every frame carries. The transport sees the signature
 * as RLX__SIG_SIZE opaque bytes that it compares byte for byte; only this
 * file knows what is inside. */
#ifndef RLX_COLL_CALL_H
#define RLX_COLL_CALL_H

#include <stddef.h>
#include <stdint.h>
#include "transport/frame.h"

/* kind, value, the public call, which arguments name the call. */
#define RLX__COLL_KIND_MAP(XX)                                                 \
  XX(ALLREDUCE, 1, "rlx_allreduce", ARG_COUNT | ARG_DTYPE | ARG_OP)            \
  XX(BCAST, 2, "rlx_bcast", ARG_COUNT | ARG_DTYPE | ARG_ROOT)                  \
  XX(BARRIER, 3, "rlx_barrier", 0)                                             \
  XX(FINALIZE, 4, "rlx_finalize", 0)                                           \
  XX(REDUCE, 5, "rlx_reduce", ARG_COUNT | ARG_DTYPE | ARG_OP | ARG_ROOT)       \
  XX(ALLGATHER, 6, "rlx_allgather", ARG_COUNT | ARG_DTYPE)                     \
  XX(REDUCE_SCATTER, 7, "rlx_reduce_scatter", ARG_RECVCOUNT | ARG_DTYPE | ARG_OP) \
  XX(COMM, 8, "rlx_comm_split", 0) /* communicator management (split's exchange) */ \
  XX(GATHER, 9, "rlx_gather", ARG_COUNT | ARG_DTYPE | ARG_ROOT)                \
  XX(SCATTER, 10, "rlx_scatter", ARG_COUNT | ARG_DTYPE | ARG_ROOT)             \
  XX(ALLTOALL, 11, "rlx_alltoall", ARG_COUNT | ARG_DTYPE)                      \
  XX(GATHERV, 12, "rlx_gatherv", ARG_DTYPE | ARG_ROOT)                         \
  XX(SCATTERV, 13, "rlx_scatterv", ARG_DTYPE | ARG_ROOT)                       \
  /* (allgatherv as reduce_scatterv below: every rank passes every count) */  \
  XX(ALLGATHERV, 14, "rlx_allgatherv", ARG_COUNT | ARG_COUNTS | ARG_DTYPE)    \
  XX(ALLTOALLV, 15, "rlx_alltoallv", ARG_DTYPE)                               \
  /* (count: the total of recvcounts; root: a hash of recvcounts, which every \
   * rank must pass alike, so that any difference fails the call at once) */  \
  XX(REDUCE_SCATTERV, 16, "rlx_reduce_scatterv", ARG_COUNT | ARG_COUNTS | ARG_DTYPE | ARG_OP)

enum rlx__coll_kind {
#define XX(name, value, call, args) RLX__CK_##name = value,
  RLX__COLL_KIND_MAP(XX)
#undef XX
  RLX__CK_MAX = 16
};

/* Sequence numbers of calls the library makes on a communicator for
 * itself (the shared segment's agreement): apart from the program's, so
 * the program's calls keep their numbers, and out of traces and stats. */
#define RLX__SEQ_INTERNAL (1ull << 63)
/* An ABORT with this sequence number revokes its whole communicator
 * (rlx_comm_revoke): no call ever has it. */
#define RLX__SEQ_REVOKE UINT64_MAX

/* The arguments that must agree on every rank of a call. */
struct rlx__call {
  int kind; /* enum rlx__coll_kind */
  int dtype, op, root;
  uint64_t count;
};

/* Into and out of the opaque signature (little-endian: kind u8, dtype u8,
 * op u8, 0, root i32, count u64). Decoding a signature a peer sent trusts
 * nothing: an unknown kind is described as such, never indexed. */
void rlx__call_encode(const struct rlx__call *c, uint8_t sig[RLX__SIG_SIZE]);
void rlx__call_decode(const uint8_t sig[RLX__SIG_SIZE], struct rlx__call *c);

/* Does a kind's signature carry its count? Not the uneven calls', whose
 * ranks each pass their own (a block that differs between its sender and
 * receiver is caught by its length). */
int rlx__call_counted(int kind);
/* The public call of a kind: "rlx_allreduce"; "?" if unknown. */
const char *rlx__call_name(int kind);
/* Describe a call: "rlx_allreduce(count=8, float32, sum)"; name overrides
 * the kind's own (rlx_iallreduce), NULL keeps it. */
void rlx__call_describe(char *buf, size_t len, const char *name, const struct rlx__call *c);

#endif
