/* rlx__clear (internal.h). In a file of its own so that the compiler,
 * not seeing the size, calls libc's memset (vector stores, chosen for the
 * CPU at load time) instead of expanding a clear of a known few hundred
 * bytes into `rep stos`, whose start-up cost on AMD's cores is most of
 * the clear: rlx__call_fill's 408 bytes were 5-13% of a 2-rank 8-byte
 * gather's time (perf, 2 cores here). */
#include <string.h>
#include "internal.h"

void rlx__clear(void *p, size_t n) {
  memset(p, 0, n);
}
