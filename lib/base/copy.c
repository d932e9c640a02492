/* The copy loop of base/copy.h and the probe that says where it runs.
 * The loop: 64 bytes a turn in unaligned 16-byte moves (SSE2, every
 * x86-64 has it), the last 0-63 bytes by memcpy (below its `rep movsb`
 * threshold); written with intrinsics so that the compiler cannot turn
 * it back into a call to memcpy. */
#include <stdlib.h>
#include <time.h>
#include "copy.h"
#include "internal.h"
#if defined(__x86_64__)
#include <emmintrin.h>
#endif

_Atomic int rlx__copy_movsb_slow_known = -1;

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

static uint64_t now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

/* The best of 3 timings of a 16 KiB copy 16 bytes past its source: a
 * preemption can only lengthen one, and the slow case is 15-20 times
 * slower, the margin 3. (volatile: the copies must happen.) */
static uint64_t best_of_3(void (*f)(void *, const void *, size_t), unsigned char *d,
                          const unsigned char *s) {
  uint64_t best = UINT64_MAX;
  for (int i = 0; i < 3; i++) {
    uint64_t t0 = now_ns();
    f(d + 16, s, 16384);
    __asm__ volatile("" : : "r"(d) : "memory");
    uint64_t t = now_ns() - t0;
    best = t < best ? t : best;
  }
  return best;
}

static void by_memcpy(void *d, const void *s, size_t n) {
  /* (through a volatile pointer: the compiler must not inline its own copy) */
  void *(*volatile f)(void *, const void *, size_t) = memcpy;
  f(d, s, n);
}

int rlx__copy_movsb_slow_probe(void) {
  int slow = 0;
#if defined(__x86_64__)
  enum { SPAN = 2 * 16384 + 8192 };
  unsigned char *s = aligned_alloc(4096, SPAN);
  if (s != NULL) {
    unsigned char *d = s + 16384 + 4096; /* page-aligned: d + 16 is 16 bytes past s modulo 4 KiB */
    memset(s, 1, SPAN);
    (void)best_of_3(by_memcpy, d, s); /* (both warm in the cache first) */
    uint64_t mc = best_of_3(by_memcpy, d, s), lp = best_of_3(rlx__copy_loop, d, s);
    slow = mc > 3 * lp;
    free(s);
    rlx__debug("copies at a short distance: memcpy %llu ns, the loop %llu ns for 16 KiB: %s",
               (unsigned long long)mc, (unsigned long long)lp,
               slow ? "rep movsb is slow here, the loop copies" : "memcpy copies");
  }
#endif
  atomic_store_explicit(&rlx__copy_movsb_slow_known, slow, memory_order_relaxed);
  return slow;
}
