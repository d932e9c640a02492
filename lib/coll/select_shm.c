/* Selection for a communicator with a shared segment (shm_group.h): its
 * algorithm of each collective, unless a point-to-point one is named or
 * wins (lib/tuning.h says where). The rest of the table is select.c's. */
#include <string.h>
#include "base/tuning.h"
#include "coll.h"

/* A name forced (most calls force none, ""): 1 "shm", 0 "auto", -1 another.
 * Out of line and cold, so that selection without one saves no registers
 * for the string compares (it ran 32 instructions a call with them). */
__attribute__((noinline, cold)) static int forced_shm(const char *forced) {
  if (strcmp(forced, "shm") == 0)
    return 1;
  return strcmp(forced, "auto") == 0 ? 0 : -1;
}

const struct rlx__algo *rlx__select_shm(int kind, size_t bytes, int nranks, const char *forced) {
  int named = 0;
  if (forced != NULL && forced[0] != '\0' && (named = forced_shm(forced)) < 0)
    return NULL;
  switch (kind) {
  case RLX__CK_ALLREDUCE:
    return named || nranks != 2 || bytes < RLX__SHMG_P2P_FROM_2 ? &rlx__allreduce_shm : NULL;
  case RLX__CK_BCAST: return &rlx__bcast_shm;
  case RLX__CK_REDUCE: return &rlx__reduce_shm;
  case RLX__CK_ALLGATHER: return &rlx__allgather_shm;
  case RLX__CK_ALLGATHERV: return &rlx__allgatherv_shm;
  case RLX__CK_GATHERV: return &rlx__gatherv_shm;
  case RLX__CK_SCATTERV: return &rlx__scatterv_shm;
  case RLX__CK_REDUCE_SCATTER: return &rlx__reduce_scatter_shm;
  case RLX__CK_BARRIER: return &rlx__barrier_shm;
  case RLX__CK_GATHER: return &rlx__gather_shm;
  case RLX__CK_SCATTER:
    if (!named && bytes > RLX__SHMG_SCATTER_MAX)
      return NULL;
    if (!named && bytes / (size_t)nranks >= RLX__SHMG_SCATTER_REF_FROM)
      return &rlx__scatter_shm_big;
    return &rlx__scatter_shm;
  case RLX__CK_ALLTOALL:
    return named || bytes <= RLX__SHMG_ALLTOALL_MAX ? &rlx__alltoall_shm : &rlx__alltoall_shm_big;
  /* (sizes differ by rank: whatever they are, the stream carries them) */
  case RLX__CK_ALLTOALLV: return &rlx__alltoallv_shm;
  default: return NULL;
  }
}
