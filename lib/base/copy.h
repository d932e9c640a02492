/* Copies of a call's data into and out of shared memory (rings, slots,
 * streams) and between a message's buffers.
 *
 * glibc's memcpy copies from 2112 bytes up with `rep movsb` on most
 * x86-64 processors (its x86_rep_movsb_threshold). On AMD Zen 3 (an EPYC
 * under KVM here) that instruction runs at 2 GB/s instead of 40 when the
 * destination is 1-63 bytes past the source modulo 4 KiB, and that is
 * what a malloc'ed buffer (a page plus 16 bytes) against a page-aligned
 * slot gives: a 2-rank bcast of 1 MiB took 370 us against vader's 128.
 * glibc steps around such distances on Intel processors with fast short
 * `rep movsb` (Avoid_Short_Distance_REP_MOVSB), not on AMD's. We do the
 * same everywhere: a copy of that distance runs a plain vector loop,
 * every other goes to memcpy, which keeps `rep movsb` where it is fast
 * (bench/copy_distance.c measures both). */
#ifndef RLX_COPY_H
#define RLX_COPY_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* below it glibc copies with vector moves whatever the distance */
#define RLX__COPY_LOOP_FROM 2048

/* The vector loop, whatever the distance (x86-64; memcpy elsewhere). */
void rlx__copy_loop(void *dst, const void *src, size_t n);

/* Whether rlx__copy takes the loop for these arguments: on x86-64, from
 * RLX__COPY_LOOP_FROM bytes, when (dst - src) mod 4096 is 1..63. */
static inline int rlx__copy_needs_loop(const void *dst, const void *src, size_t n) {
#if defined(__x86_64__)
  /* (0 - 1 wraps to SIZE_MAX: the same page offset is no short distance) */
  return n >= RLX__COPY_LOOP_FROM && ((((uintptr_t)dst - (uintptr_t)src) & 4095) - 1) < 63;
#else
  (void)dst, (void)src, (void)n;
  return 0;
#endif
}

/* memcpy (non-overlapping), minus the slow distances above. */
static inline void rlx__copy(void *dst, const void *src, size_t n) {
  if (rlx__copy_needs_loop(dst, src, n))
    rlx__copy_loop(dst, src, n);
  else
    memcpy(dst, src, n);
}

#endif
