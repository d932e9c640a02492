/* Division off a call's path. A 64-bit DIV costs 20-90 cycles, and on
 * the lent 16-core Intel host each measured ~18 ns: five dependent ones
 * added 0.09 us to a 2-rank 8-byte scatter of 0.23 us (vader's: 0.15).
 * A small call divided four to six times (bytes by the element size,
 * the flight recorder's ring, its argument checks), independent
 * divisions the core overlapped with other work: taken to shifts they
 * measured the same there, and stay the cheaper form. */
#ifndef RLX_FASTDIV_H
#define RLX_FASTDIV_H

#include <stddef.h>
#include <stdint.h>

/* bytes / es for es a dtype's size: 1, 2, 4 or 8 (dtype.c; test_reduce
 * checks each is a power of two). */
static inline size_t rlx__per_elem(size_t bytes, size_t es) {
  return bytes >> __builtin_ctzll((unsigned long long)es);
}

#endif
