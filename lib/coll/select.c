/* Algorithm selection: the whole decision table in one place. The
 * crossovers come from bench/crossover.sh (each algorithm forced, swept
 * over sizes, n = 2..8) on the 2-core development machine, Unix sockets,
 * float32 sum; see README's benchmark section for the numbers. */
#include <string.h>
#include "../transport/frame.h"
#include "coll.h"

struct choice {
  const char *name; /* what RLX_<COLL>_ALGO calls it */
  const struct rlx__algo *algo;
};

static const struct choice allreduce_algos[] = {
    {"rd", &rlx__allreduce_rd},
    {"rabenseifner", &rlx__allreduce_rabenseifner},
    {"ring", &rlx__allreduce_ring},
};
static const struct choice bcast_algos[] = {
    {"binomial", &rlx__bcast_binomial},
    {"scatter-allgather", &rlx__bcast_scatter_allgather},
};
static const struct choice allgather_algos[] = {
    {"rd", &rlx__allgather_rd},
    {"ring", &rlx__allgather_ring},
};

/* Measured crossovers (bytes of the whole vector). On 2 ranks halving-
 * doubling and the ring exchange the same halves, and the ring's segments
 * win from 256 KiB. With more ranks the ring's 2(p-1) rounds cost more
 * against halving-doubling's 2 lg p, so the crossover grows with p: on a
 * 16-core machine (bench/crossover.sh, 2026-11-30, bench/results/crossover-
 * h200-2026-11-30.txt) halving-doubling won up to 256 KiB on 4 ranks (ring
 * from 512 KiB: 215 against 220 us), up to 512 KiB on 8 (369 against 541;
 * ring at 1 MiB 654 against 686) and up to 1 MiB on 16 (988 against 1477;
 * ring at 2 MiB 1729 against 2029): 64 KiB per rank, 256 KiB at least. */
#define AR_RD_MAX (32u * 1024u) /* recursive doubling up to here */
#define AR_RABENSEIFNER_MAX_2 (128u * 1024u)
#define AR_RABENSEIFNER_PER_RANK (64u * 1024u)
#define AR_RABENSEIFNER_MIN_MAX (256u * 1024u)
#define BCAST_BINOMIAL_MAX (512u * 1024u)
#define AG_RD_MAX (64u * 1024u)           /* recursive doubling (power-of-two p) */

static const struct choice *table(int kind, size_t *n) {
  switch (kind) {
  case RLX__CK_ALLREDUCE: *n = 3; return allreduce_algos;
  case RLX__CK_BCAST: *n = 2; return bcast_algos;
  case RLX__CK_ALLGATHER: *n = 2; return allgather_algos;
  default: *n = 0; return NULL;
  }
}

const char *rlx__algo_names(int kind) {
  switch (kind) {
  case RLX__CK_ALLREDUCE: return "auto, rd, rabenseifner, ring";
  case RLX__CK_BCAST: return "auto, binomial, scatter-allgather";
  case RLX__CK_ALLGATHER: return "auto, rd, ring";
  default: return "auto";
  }
}

static size_t rabenseifner_max(int nranks) {
  if (nranks == 2)
    return AR_RABENSEIFNER_MAX_2;
  size_t m = (size_t)nranks * AR_RABENSEIFNER_PER_RANK;
  return m < AR_RABENSEIFNER_MIN_MAX ? AR_RABENSEIFNER_MIN_MAX : m;
}

static int pow2(int n) { return n > 0 && (n & (n - 1)) == 0; }

const struct rlx__algo *rlx__select(int kind, size_t bytes, int nranks, const char *forced) {
  size_t n;
  const struct choice *t = table(kind, &n);
  if (forced != NULL && forced[0] != '\0' && strcmp(forced, "auto") != 0) {
    for (size_t i = 0; i < n; i++)
      if (strcmp(forced, t[i].name) == 0) {
        /* recursive-doubling allgather needs a power-of-two rank count */
        if (t[i].algo == &rlx__allgather_rd && !pow2(nranks))
          return &rlx__allgather_ring;
        return t[i].algo;
      }
    return NULL;
  }
  switch (kind) {
  case RLX__CK_ALLREDUCE:
    if (nranks == 1 || bytes > rabenseifner_max(nranks))
      return &rlx__allreduce_ring;
    return bytes <= AR_RD_MAX ? &rlx__allreduce_rd : &rlx__allreduce_rabenseifner;
  case RLX__CK_BCAST:
    return bytes <= BCAST_BINOMIAL_MAX || nranks <= 2 ? &rlx__bcast_binomial
                                                      : &rlx__bcast_scatter_allgather;
  case RLX__CK_ALLGATHER:
    return bytes <= AG_RD_MAX && pow2(nranks) ? &rlx__allgather_rd : &rlx__allgather_ring;
  case RLX__CK_REDUCE:
    return &rlx__reduce_binomial;
  case RLX__CK_REDUCE_SCATTER:
    return &rlx__reduce_scatter_ring;
  default:
    return &rlx__barrier_dissemination;
  }
}
