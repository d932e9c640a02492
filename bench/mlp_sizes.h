/* The MLP the bench programs time: 784 inputs, the hidden widths given as
 * "256" or "1024,1024" (at most 15), 10 classes. Fills sizes (room for
 * 18) and returns how many. */
#ifndef BENCH_MLP_SIZES_H
#define BENCH_MLP_SIZES_H
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static inline int mlp_sizes(const char *hidden, int sizes[18]) {
  int ns = 1;
  char buf[256];
  sizes[0] = 784;
  snprintf(buf, sizeof buf, "%s", hidden);
  for (char *s, *t = strtok_r(buf, ",", &s); t && ns < 16; t = strtok_r(NULL, ",", &s))
    sizes[ns++] = atoi(t);
  sizes[ns++] = 10;
  return ns;
}

#endif
