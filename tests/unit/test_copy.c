/* base/copy.h: rlx__copy and its loop copy exactly what memcpy does, at
 * every distance modulo 4 KiB that picks the loop and around it, sizes
 * across the threshold and odd tails, and touch no byte outside (and
 * rlx__copy_small, every size to 40 bytes); which
 * distances count as short; the probe of rep movsb answers once. */
#include <check.h>
#include "suite.h"
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <sys/uio.h>
#include <unistd.h>
#include "base/copy.h"
#include "transport/p2p_internal.h"

#define GUARD 64

static void fill(unsigned char *p, size_t n, unsigned seed) {
  for (size_t i = 0; i < n; i++)
    p[i] = (unsigned char)((i * 131u + seed * 7u) >> 3);
}

/* Copy n bytes from src + so to dst + dof with f; compare with memcpy's
 * result, guards included. */
static int copies_right(void (*f)(void *, const void *, size_t), size_t n, size_t so, size_t dof) {
  size_t len = n + 2 * 4096 + 2 * GUARD;
  unsigned char *src = aligned_alloc(4096, len), *dst = aligned_alloc(4096, len),
                *want = aligned_alloc(4096, len);
  fill(src, len, 1);
  fill(dst, len, 2);
  memcpy(want, dst, len);
  memcpy(want + GUARD + dof, src + GUARD + so, n);
  f(dst + GUARD + dof, src + GUARD + so, n);
  int ok = memcmp(dst, want, len) == 0;
  free(src);
  free(dst);
  free(want);
  return ok;
}

static void copy_fn(void *d, const void *s, size_t n) { rlx__copy(d, s, n); }

START_TEST(every_distance) {
  static const size_t sizes[] = {0, 1, 63, 64, 65, 2047, 2048, 2049, 4096, 4159, 65536 + 13, 1u << 20};
  for (size_t k = 0; k < sizeof sizes / sizeof *sizes; k++)
    for (size_t d = 0; d <= 80; d++) {
      ck_assert_msg(copies_right(copy_fn, sizes[k], 0, d), "rlx__copy n=%zu dist %zu", sizes[k], d);
      ck_assert_msg(copies_right(copy_fn, sizes[k], d, 0), "rlx__copy n=%zu dist -%zu", sizes[k], d);
      ck_assert_msg(copies_right(rlx__copy_loop, sizes[k], 3, d + 3), "loop n=%zu dist %zu",
                    sizes[k], d);
    }
  /* a page and more apart: only the distance modulo 4 KiB counts */
  ck_assert(copies_right(copy_fn, 9000, 0, 4096 + 16));
}
END_TEST

START_TEST(short_distances) {
  unsigned char *b = aligned_alloc(4096, 4 * 4096);
  const size_t dist[] = {0, 1, 16, 63, 64, 4095, 4096, 4097};
  const int want[] = {0, 1, 1, 1, 0, 0, 0, 1};
  /* the destination that far before the source: 4096 - 1 is 4095 past it */
  const int want_before[] = {0, 0, 0, 0, 0, 1, 0, 0};
  for (int i = 0; i < 8; i++) {
#if defined(__x86_64__)
    ck_assert_int_eq(rlx__copy_short_distance(b + 8192 - dist[i], b + 8192, 4096), want_before[i]);
    ck_assert_int_eq(rlx__copy_short_distance(b + 8192 + dist[i], b, 4096), want[i]);
    ck_assert_int_eq(rlx__copy_short_distance(b + 8192 + dist[i], b, RLX__COPY_LOOP_FROM - 1), 0);
#else
    ck_assert_int_eq(rlx__copy_short_distance(b + 8192 + dist[i], b, 4096), 0);
#endif
  }
  free(b);
}
END_TEST

START_TEST(probe_answers_once) {
  int a = rlx__copy_movsb_slow();
  ck_assert(a == 0 || a == 1);
  ck_assert_int_eq(atomic_load(&rlx__copy_movsb_slow_known), a);
  ck_assert_int_eq(rlx__copy_movsb_slow(), a);
  printf("test_copy: rep movsb at short distances is %s on this machine\n",
         a ? "slow (the loop copies there)" : "fast (memcpy copies there)");
}
END_TEST

/* Copies by reference (rlx__cma_move, cma_copy.c) at every kind of
 * distance, both ways, whole and over the 256 KiB a bounce takes at a
 * time, with `rep movsb` taken as slow (through the bounce buffer) and as
 * fast (straight): the same bytes as memcpy, nothing written around
 * them. This process reads and writes its own memory (process_vm_readv
 * allows it; where the kernel refuses, the test says so and checks
 * nothing). */
START_TEST(by_reference_at_every_distance) {
  static const size_t sizes[] = {2048, 65536 + 13, 600000};
  static const size_t dist[] = {0, 8, 16, 63, 64, 4095};
  size_t cap = 600000 + 3 * 4096;
  unsigned char *src = aligned_alloc(4096, cap), *dst = aligned_alloc(4096, cap);
  ck_assert(src && dst);
  char probe = 0;
  struct iovec l = {&probe, 1}, r = {src, 1};
  if (process_vm_readv(getpid(), &l, 1, &r, 1, 0) != 1) {
    printf("test_copy: process_vm_readv refused here (%s): nothing checked\n", strerror(errno));
    free(src);
    free(dst);
    return;
  }
  int measured = rlx__copy_movsb_slow();
  for (int slow = 0; slow < 2; slow++) {
    atomic_store(&rlx__copy_movsb_slow_known, slow);
    for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++)
      for (size_t j = 0; j < sizeof dist / sizeof *dist; j++)
        for (int write = 0; write < 2; write++) {
          size_t n = sizes[i], s_off = 64, d_off = 64 + dist[j];
          for (size_t k = 0; k < cap; k++) {
            src[k] = (unsigned char)(k * 131 + 7);
            dst[k] = 0xee;
          }
          /* a read: ours (dst) from theirs (src); a write: ours (src) into theirs (dst) */
          int rc = write ? rlx__cma_move(getpid(), (uint64_t)(uintptr_t)(dst + d_off), src + s_off,
                                         n, 1)
                         : rlx__cma_move(getpid(), (uint64_t)(uintptr_t)(src + s_off), dst + d_off,
                                         n, 0);
          ck_assert_int_eq(rc, 0);
          ck_assert_msg(memcmp(dst + d_off, src + s_off, n) == 0,
                        "%zu bytes at distance %zu, %s, movsb %s: wrong bytes", n, dist[j],
                        write ? "write" : "read", slow ? "slow" : "fast");
          ck_assert(dst[d_off - 1] == 0xee && dst[d_off + n] == 0xee);
        }
  }
  atomic_store(&rlx__copy_movsb_slow_known, measured);
  /* a bad address is an error, not a crash (the bounce path too) */
  atomic_store(&rlx__copy_movsb_slow_known, 1);
  ck_assert_int_lt(rlx__cma_move(getpid(), 24, dst + 80, 65536, 0), 0); /* (distance 56) */
  atomic_store(&rlx__copy_movsb_slow_known, measured);
  free(src);
  free(dst);
}
END_TEST

static void small_fn(void *d, const void *s, size_t n) { rlx__copy_small(d, s, n); }

/* The few bytes copied inline (two overlapping moves, 1-3 bytes one at a
 * time): every size from 0 to 40 at several offsets, guards untouched. */
START_TEST(every_small_size) {
  for (size_t n = 0; n <= 40; n++)
    for (size_t so = 0; so < 9; so += 4)
      for (size_t dof = 0; dof < 9; dof += 3) {
        ck_assert_msg(copies_right(copy_fn, n, so, dof), "rlx__copy n=%zu at %zu -> %zu", n, so,
                      dof);
        ck_assert_msg(copies_right(small_fn, n, so, dof), "rlx__copy_small n=%zu at %zu -> %zu",
                      n, so, dof);
      }
}
END_TEST

int main(void) {
  Suite *s = suite_create("copy");
  TCase *tc = tcase_create("copy");
  tcase_set_timeout(tc, 120); /* Check's default is 4 s: too short under the sanitizers */
  tcase_add_test(tc, every_distance);
  tcase_add_test(tc, every_small_size);
  tcase_add_test(tc, short_distances);
  tcase_add_test(tc, probe_answers_once);
  tcase_add_test(tc, by_reference_at_every_distance);
  suite_add_tcase(s, tc);
  return rlx_run_suite(s);
}
