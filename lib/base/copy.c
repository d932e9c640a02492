/* The copy loop of base/copy.h: 64 bytes a turn in unaligned 16-byte
 * moves (SSE2, every x86-64 has it), the last 0-63 bytes by memcpy
 * (below its `rep movsb` threshold). Written with intrinsics so that
 * the compiler cannot turn it back into a call to memcpy. */
#include "copy.h"
#if defined(__x86_64__)
#include <emmintrin.h>
#endif

void rlx__copy_loop(void *dst, const void *src, size_t n) {
#if defined(__x86_64__)
  unsigned char *d = dst;
  const unsigned char *s = src;
  size_t i = 0;
  for (; i + 64 <= n; i += 64) {
    __m128i a = _mm_loadu_si128((const __m128i *)(const void *)(s + i));
    __m128i b = _mm_loadu_si128((const __m128i *)(const void *)(s + i + 16));
    __m128i c = _mm_loadu_si128((const __m128i *)(const void *)(s + i + 32));
    __m128i e = _mm_loadu_si128((const __m128i *)(const void *)(s + i + 48));
    _mm_storeu_si128((__m128i *)(void *)(d + i), a);
    _mm_storeu_si128((__m128i *)(void *)(d + i + 16), b);
    _mm_storeu_si128((__m128i *)(void *)(d + i + 32), c);
    _mm_storeu_si128((__m128i *)(void *)(d + i + 48), e);
  }
  memcpy(d + i, s + i, n - i);
#else
  memcpy(dst, src, n);
#endif
}
