/* FNV-1a, 32 bits, over integers taken byte by byte from the least
 * significant: the same value on every host, whatever its byte order, for
 * keys every rank computes alone and must agree on (a group's id, an
 * uneven call's counts in its signature). */
#ifndef RLX_HASH_H
#define RLX_HASH_H

#include <stdint.h>

#define RLX__FNV_START 2166136261u

/* h with the low nbytes of v folded in. */
static inline uint32_t rlx__fnv1a(uint32_t h, uint64_t v, int nbytes) {
  for (int b = 0; b < nbytes; b++)
    h = (h ^ (uint8_t)(v >> (8 * b))) * 16777619u;
  return h;
}

#endif
