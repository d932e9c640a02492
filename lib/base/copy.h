/* Copies of a call's data into and out of shared memory (rings, slots,
 * streams) and between a message's buffers.
 *
 * glibc's memcpy copies from 2112 bytes up with `rep movsb` on most
 * x86-64 processors (its x86_rep_movsb_threshold). On AMD Zen 3 (an EPYC
 * under KVM here) that instruction runs at 2 GB/s instead of 40 when the
 * destination is 1-63 bytes past the source modulo 4 KiB, and that is
 * what a malloc'ed buffer (a page plus 16 bytes) against a page-aligned
 * slot gives: a 2-rank bcast of 1 MiB took 370 us against vader's 128.
 * On the Xeons we measured (models 143, 207) `rep movsb` is fast at those
 * distances and faster than a vector loop for big blocks (a 16-rank
 * gather of 4 MiB blocks 0.36x vader with it, 0.51 with the loop). So the
 * first copy at such a distance times both, once per process
 * (rlx__copy_movsb_slow), and copies at short distances take the loop
 * only where `rep movsb` is at least 3 times slower there; every other
 * copy goes to memcpy (bench/copy_distance.c measures both). */
#ifndef RLX_COPY_H
#define RLX_COPY_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* below it glibc copies with vector moves whatever the distance */
#define RLX__COPY_LOOP_FROM 2048

/* The vector loop, whatever the distance (x86-64; memcpy elsewhere). */
void rlx__copy_loop(void *dst, const void *src, size_t n);

/* Whether a copy of n bytes from src to dst is at a distance where
 * `rep movsb` may be slow: on x86-64, from RLX__COPY_LOOP_FROM bytes,
 * when (dst - src) mod 4096 is 1..63. */
static inline int rlx__copy_short_distance(const void *dst, const void *src, size_t n) {
#if defined(__x86_64__)
  /* (0 - 1 wraps to SIZE_MAX: the same page offset is no short distance) */
  return n >= RLX__COPY_LOOP_FROM && ((((uintptr_t)dst - (uintptr_t)src) & 4095) - 1) < 63;
#else
  (void)dst, (void)src, (void)n;
  return 0;
#endif
}

/* 1 when memcpy at a short distance is at least 3 times slower than the
 * loop on this machine, else 0; measured at the first call (about 0.1 ms
 * where it is slow, less where not), then remembered. */
int rlx__copy_movsb_slow_probe(void);
extern _Atomic int rlx__copy_movsb_slow_known; /* -1: not measured yet */
static inline int rlx__copy_movsb_slow(void) {
  int k = atomic_load_explicit(&rlx__copy_movsb_slow_known, memory_order_relaxed);
  return k >= 0 ? k : rlx__copy_movsb_slow_probe();
}

/* A copy of a few bytes whose count is known only at run time (a small
 * call's block into or out of a cell): two overlapping moves inline where
 * n <= 16, memcpy above. glibc's memcpy for 8 bytes was a call and ~24
 * instructions of a 2-rank 8-byte scatterv's root (callgrind). */
static inline void rlx__copy_small(void *dst, const void *src, size_t n) {
  unsigned char *d = dst;
  const unsigned char *s = src;
  if (n >= 8 && n <= 16) {
    uint64_t a, b;
    memcpy(&a, s, 8);
    memcpy(&b, s + n - 8, 8);
    memcpy(d, &a, 8);
    memcpy(d + n - 8, &b, 8);
  } else if (n >= 4 && n < 8) {
    uint32_t a, b;
    memcpy(&a, s, 4);
    memcpy(&b, s + n - 4, 4);
    memcpy(d, &a, 4);
    memcpy(d + n - 4, &b, 4);
  } else if (n > 16) {
    memcpy(d, s, n);
  } else if (n > 0) { /* (1-3 bytes; a loop here becomes a call of memcpy) */
    d[0] = s[0];
    d[n - 1] = s[n - 1];
    d[n / 2] = s[n / 2];
  }
}

/* memcpy (non-overlapping), minus the slow distances above; a few bytes
 * inline. */
static inline void rlx__copy(void *dst, const void *src, size_t n) {
  if (n <= 16) {
    rlx__copy_small(dst, src, n);
    return;
  }
  if (rlx__copy_short_distance(dst, src, n) && rlx__copy_movsb_slow())
    rlx__copy_loop(dst, src, n);
  else
    memcpy(dst, src, n);
}

#endif
