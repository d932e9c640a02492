/* memcpy against rlx__copy (lib/base/copy.h) by the distance of the
 * destination past the source modulo 4 KiB, one process: where glibc's
 * `rep movsb` is slow at short distances (AMD Zen 3: 2 GB/s at 1-63
 * bytes), memcpy's column drops there and rlx__copy's does not.
 *   cc -O2 -Iinclude -Ilib -o /tmp/copy_distance bench/copy_distance.c lib/.libs/libbase.a -lm -pthread
 *   (after make; RLX_LOG=debug: the probe's timings)
 *   /tmp/copy_distance [bytes]      (default 65536; GB/s per distance) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "base/copy.h"

static double now_us(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec * 1e6 + (double)t.tv_nsec / 1e3;
}

static void by_memcpy(void *d, const void *s, size_t n) { memcpy(d, s, n); }
static void by_rlx(void *d, const void *s, size_t n) { rlx__copy(d, s, n); }

static double rate(void (*f)(void *, const void *, size_t), unsigned char *d, const unsigned char *s,
                   size_t n) {
  long it = (long)(512e6 / (double)n);
  double best = 0;
  for (int rep = 0; rep < 3; rep++) {
    double t0 = now_us();
    for (long i = 0; i < it; i++) {
      f(d, s, n);
      __asm__ volatile("" : : "r"(d) : "memory");
    }
    double gbs = (double)n * (double)it / (now_us() - t0) / 1e3;
    best = gbs > best ? gbs : best;
  }
  return best;
}

int main(int argc, char **argv) {
  size_t n = argc > 1 ? strtoul(argv[1], NULL, 10) : 65536;
  unsigned char *src = aligned_alloc(4096, n + 8192), *dst = aligned_alloc(4096, n + 8192);
  if (n == 0 || src == NULL || dst == NULL)
    return 2;
  memset(src, 1, n + 8192);
  memset(dst, 2, n + 8192);
  printf("# rlx__copy_movsb_slow: %d (1: copies at distances 1-63 take the loop)\n",
         rlx__copy_movsb_slow());
  printf("bytes distance memcpy_GBs rlx_copy_GBs\n");
  for (int dist = -64; dist <= 128; dist += 8) {
    size_t so = dist < 0 ? (size_t)-dist : 0, dof = dist < 0 ? 0 : (size_t)dist;
    printf("%zu %d %.2f %.2f\n", n, dist, rate(by_memcpy, dst + dof, src + so, n),
           rate(by_rlx, dst + dof, src + so, n));
  }
  return 0;
}
