/* Algorithm selection: the whole decision table in one place.
 * Crossover measured with bench/crossover.sh on the 2-core development
 * machine (Unix sockets, float32 sum): recursive doubling wins below about
 * 64 KiB, the ring above; see README's benchmark section. */
#include "../internal.h"
#include "coll.h"

#define RD_MAX_BYTES (64u * 1024u)

const struct rlx__algo *rlx__select_allreduce(size_t bytes, int nranks, int forced) {
  if (forced == RLX__AR_RD)
    return &rlx__allreduce_rd;
  if (forced == RLX__AR_RING)
    return &rlx__allreduce_ring;
  if (nranks == 1 || bytes > RD_MAX_BYTES)
    return &rlx__allreduce_ring;
  return &rlx__allreduce_rd;
}
