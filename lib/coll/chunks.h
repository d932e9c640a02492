/* Splitting a vector of count elements into parts: part c of n starts at
 * c*(count/n) + min(c, count%n), so sizes differ by at most one. */
#ifndef RLX_CHUNKS_H
#define RLX_CHUNKS_H

#include <stddef.h>

static inline size_t rlx__part_start(size_t count, size_t n, size_t c) {
  size_t base = count / n, extra = count % n;
  return c * base + (c < extra ? c : extra);
}

static inline size_t rlx__part_len(size_t count, size_t n, size_t c) {
  return rlx__part_start(count, n, c + 1) - rlx__part_start(count, n, c);
}

#endif
