/* Algorithm selection: the whole decision table in one place. The
 * crossovers are in lib/tuning.h, with the runs of bench/crossover.sh that
 * measured them. */
#include <stdio.h>
#include <string.h>
#include "base/tuning.h"
#include "coll.h"

static const struct rlx__algo *const allreduce_algos[] = {
    &rlx__allreduce_rd, &rlx__allreduce_rabenseifner, &rlx__allreduce_ring, NULL};
static const struct rlx__algo *const bcast_algos[] = {&rlx__bcast_binomial,
                                                      &rlx__bcast_scatter_allgather, NULL};
static const struct rlx__algo *const allgather_algos[] = {
    &rlx__allgather_rd, &rlx__allgather_bruck, &rlx__allgather_ring, NULL};
static const struct rlx__algo *const reduce_algos[] = {&rlx__reduce_binomial, NULL};
static const struct rlx__algo *const reduce_scatter_algos[] = {&rlx__reduce_scatter_ring, NULL};
static const struct rlx__algo *const reduce_scatterv_algos[] = {&rlx__reduce_scatterv_ring, NULL};
static const struct rlx__algo *const barrier_algos[] = {&rlx__barrier_dissemination, NULL};
static const struct rlx__algo *const gather_algos[] = {&rlx__gather_linear, NULL};
static const struct rlx__algo *const scatter_algos[] = {&rlx__scatter_linear, NULL};
static const struct rlx__algo *const alltoall_algos[] = {&rlx__alltoall_pairwise, NULL};
static const struct rlx__algo *const gatherv_algos[] = {&rlx__gatherv_linear, NULL};
static const struct rlx__algo *const scatterv_algos[] = {&rlx__scatterv_linear, NULL};
static const struct rlx__algo *const allgatherv_algos[] = {&rlx__allgatherv_ring, NULL};
static const struct rlx__algo *const alltoallv_algos[] = {&rlx__alltoallv_pairwise, NULL};

/* The algorithms of a kind, NULL-terminated. */
static const struct rlx__algo *const *table(int kind) {
  switch (kind) {
  case RLX__CK_ALLREDUCE: return allreduce_algos;
  case RLX__CK_BCAST: return bcast_algos;
  case RLX__CK_ALLGATHER: return allgather_algos;
  case RLX__CK_REDUCE: return reduce_algos;
  case RLX__CK_REDUCE_SCATTER: return reduce_scatter_algos;
  case RLX__CK_REDUCE_SCATTERV: return reduce_scatterv_algos;
  case RLX__CK_GATHER: return gather_algos;
  case RLX__CK_SCATTER: return scatter_algos;
  case RLX__CK_ALLTOALL: return alltoall_algos;
  case RLX__CK_GATHERV: return gatherv_algos;
  case RLX__CK_SCATTERV: return scatterv_algos;
  case RLX__CK_ALLGATHERV: return allgatherv_algos;
  case RLX__CK_ALLTOALLV: return alltoallv_algos;
  default: return barrier_algos;
  }
}

/* The names RLX_<COLL>_ALGO takes come from the tables above (and the
 * segment's "shm", select_shm.c): nowhere else. */
static int named(const struct rlx__algo *a, const char *name) {
  return strcmp(name, a->name) == 0 || (a->alias != NULL && strcmp(name, a->alias) == 0);
}

int rlx__algo_known(int kind, const char *name) {
  if (strcmp(name, "auto") == 0 || strcmp(name, "shm") == 0)
    return 1;
  for (const struct rlx__algo *const *t = table(kind); *t != NULL; t++)
    if (named(*t, name))
      return 1;
  return 0;
}

const char *rlx__algo_names(int kind, char *buf, size_t len) {
  size_t used = (size_t)snprintf(buf, len, "auto");
  for (const struct rlx__algo *const *t = table(kind); *t != NULL && used < len; t++)
    used += (size_t)snprintf(buf + used, len - used, ", %s%s%s%s", (*t)->name,
                             (*t)->alias ? " (or " : "", (*t)->alias ? (*t)->alias : "",
                             (*t)->alias ? ")" : "");
  if (used < len)
    snprintf(buf + used, len - used, ", shm");
  return buf;
}

static size_t rabenseifner_max(int nranks) {
  if (nranks == 2)
    return RLX__AR_RABENSEIFNER_MAX_2;
  size_t m = (size_t)nranks * RLX__AR_RABENSEIFNER_PER_RANK;
  return m < RLX__AR_RABENSEIFNER_MIN_MAX ? RLX__AR_RABENSEIFNER_MIN_MAX : m;
}

static int pow2(int n) { return n > 0 && (n & (n - 1)) == 0; }

static const struct rlx__algo *by_name(int kind, const char *forced, int nranks) {
  for (const struct rlx__algo *const *t = table(kind); *t != NULL; t++) {
    if (!named(*t, forced))
      continue;
    /* recursive-doubling allgather needs a power-of-two rank count:
     * Bruck's takes as few rounds at any */
    if (*t == &rlx__allgather_rd && !pow2(nranks))
      return &rlx__allgather_bruck;
    return *t;
  }
  return NULL;
}

const struct rlx__algo *rlx__select(int kind, size_t bytes, int nranks, const char *forced) {
  /* "shm" without a shared segment (select_shm.c): the automatic choice */
  if (forced != NULL && forced[0] != '\0' && strcmp(forced, "auto") != 0 &&
      strcmp(forced, "shm") != 0)
    return by_name(kind, forced, nranks);
  switch (kind) {
  case RLX__CK_ALLREDUCE:
    if (nranks == 1 || bytes > rabenseifner_max(nranks))
      return &rlx__allreduce_ring;
    return bytes <= RLX__AR_RD_MAX ? &rlx__allreduce_rd : &rlx__allreduce_rabenseifner;
  case RLX__CK_BCAST:
    return bytes <= RLX__BCAST_BINOMIAL_MAX || nranks <= 2 ? &rlx__bcast_binomial
                                                           : &rlx__bcast_scatter_allgather;
  case RLX__CK_ALLGATHER:
    /* (Bruck's takes ceil(lg p) rounds where the ring takes p-1: the same
     * at 3 ranks, where the ring, without the final rotation, is faster) */
    if (pow2(nranks))
      return bytes <= RLX__AG_RD_MAX ? &rlx__allgather_rd : &rlx__allgather_ring;
    return nranks >= RLX__AG_BRUCK_FROM && bytes <= RLX__AG_BRUCK_MAX ? &rlx__allgather_bruck
                                                                      : &rlx__allgather_ring;
  default:
    return table(kind)[0];
  }
}
