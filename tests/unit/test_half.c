/* float16 / bfloat16 conversion: round to nearest even, NaN, Inf,
 * subnormals, and exact round trips over every 16-bit pattern. */
#include <check.h>
#include "suite.h"
#include <math.h>
#include <stdint.h>
#include <string.h>
#include "coll/coll.h"

static float f_of(uint32_t u) {
  float f;
  memcpy(&f, &u, 4);
  return f;
}

START_TEST(f16_known_values) {
  ck_assert_uint_eq(rlx__f32_to_f16(1.0f), 0x3C00);
  ck_assert_uint_eq(rlx__f32_to_f16(-2.0f), 0xC000);
  ck_assert_uint_eq(rlx__f32_to_f16(65504.0f), 0x7BFF);
  ck_assert_uint_eq(rlx__f32_to_f16(0.0f), 0x0000);
  ck_assert_uint_eq(rlx__f32_to_f16(-0.0f), 0x8000);
  ck_assert_uint_eq(rlx__f32_to_f16(INFINITY), 0x7C00);
  ck_assert_uint_eq(rlx__f32_to_f16(-INFINITY), 0xFC00);
  ck_assert_uint_eq(rlx__f32_to_f16(1e6f), 0x7C00); /* overflow */
}
END_TEST

START_TEST(f16_round_to_nearest_even) {
  /* 1 + 2^-11 is halfway between 1 and the next half: ties to even (1). */
  ck_assert_uint_eq(rlx__f32_to_f16(1.0f + ldexpf(1, -11)), 0x3C00);
  /* 1 + 3*2^-11 is halfway between 1+2^-10 and 1+2^-9: ties to even. */
  ck_assert_uint_eq(rlx__f32_to_f16(1.0f + 3 * ldexpf(1, -11)), 0x3C02);
  /* just above halfway rounds up */
  ck_assert_uint_eq(rlx__f32_to_f16(1.0f + ldexpf(1, -11) + ldexpf(1, -20)), 0x3C01);
  /* 65520 is halfway between 65504 and 65536: ties to even, which is Inf */
  ck_assert_uint_eq(rlx__f32_to_f16(65520.0f), 0x7C00);
  ck_assert_uint_eq(rlx__f32_to_f16(65519.0f), 0x7BFF);
}
END_TEST

START_TEST(f16_subnormals) {
  ck_assert_uint_eq(rlx__f32_to_f16(ldexpf(1, -24)), 0x0001); /* smallest */
  ck_assert_uint_eq(rlx__f32_to_f16(ldexpf(1, -25)), 0x0000); /* tie to even: 0 */
  ck_assert_uint_eq(rlx__f32_to_f16(3 * ldexpf(1, -25)), 0x0002); /* 1.5 ulp: to 2 */
  ck_assert_uint_eq(rlx__f32_to_f16(ldexpf(1, -14) - ldexpf(1, -24)), 0x03FF); /* largest */
  ck_assert_uint_eq(rlx__f32_to_f16(ldexpf(1, -14)), 0x0400); /* smallest normal */
  ck_assert_uint_eq(rlx__f32_to_f16(ldexpf(1, -30)), 0x0000); /* underflow */
  ck_assert(rlx__f16_to_f32(0x0001) == ldexpf(1, -24));
  ck_assert(rlx__f16_to_f32(0x8001) == -ldexpf(1, -24));
}
END_TEST

START_TEST(f16_nan) {
  uint16_t h = rlx__f32_to_f16(NAN);
  ck_assert_uint_eq(h & 0x7C00, 0x7C00);
  ck_assert_uint_ne(h & 0x03FF, 0);
  /* a signalling NaN with only low payload bits still comes out a NaN */
  h = rlx__f32_to_f16(f_of(0x7F800001u));
  ck_assert_uint_ne(h & 0x03FF, 0);
  ck_assert(isnan(rlx__f16_to_f32(0x7E00)));
  ck_assert(isinf(rlx__f16_to_f32(0x7C00)));
}
END_TEST

START_TEST(f16_every_value_round_trips) {
  for (uint32_t h = 0; h < 65536; h++) {
    float f = rlx__f16_to_f32((uint16_t)h);
    if (isnan(f))
      continue;
    ck_assert_msg(rlx__f32_to_f16(f) == h, "0x%04x", h);
  }
}
END_TEST

START_TEST(bf16_values) {
  ck_assert_uint_eq(rlx__f32_to_bf16(1.0f), 0x3F80);
  ck_assert_uint_eq(rlx__f32_to_bf16(f_of(0x3F808000u)), 0x3F80); /* tie to even */
  ck_assert_uint_eq(rlx__f32_to_bf16(f_of(0x3F818000u)), 0x3F82); /* tie to even (up) */
  ck_assert_uint_eq(rlx__f32_to_bf16(f_of(0x3F808001u)), 0x3F81); /* above half */
  ck_assert_uint_eq(rlx__f32_to_bf16(INFINITY), 0x7F80);
  ck_assert_uint_eq(rlx__f32_to_bf16(f_of(0x7F7FFFFFu)), 0x7F80); /* FLT_MAX rounds to Inf */
  uint16_t n = rlx__f32_to_bf16(f_of(0x7F800001u));
  ck_assert(isnan(rlx__bf16_to_f32(n)));
  ck_assert_uint_eq(rlx__f32_to_bf16(f_of(0x00000001u)), 0x0000); /* subnormal rounds */
  ck_assert_uint_eq(rlx__f32_to_bf16(f_of(0x00018000u)), 0x0002);
  for (uint32_t h = 0; h < 65536; h++) {
    float f = rlx__bf16_to_f32((uint16_t)h);
    if (isnan(f))
      continue;
    ck_assert_msg(rlx__f32_to_bf16(f) == h, "0x%04x", h);
  }
}
END_TEST

/* The bulk converters (F16C where available) agree bit for bit with the
 * scalar ones, on every half and on float patterns of every kind. */
START_TEST(bulk_matches_scalar) {
  static uint16_t h[65536], back[65536];
  static float f[65536], g[65536];
  for (uint32_t i = 0; i < 65536; i++)
    h[i] = (uint16_t)i;
  rlx__f16_to_f32_n(f, h, 65536);
  for (uint32_t i = 0; i < 65536; i++) {
    float s = rlx__f16_to_f32((uint16_t)i);
    ck_assert_msg(memcmp(&s, &f[i], 4) == 0, "f16 0x%04x widens differently", i);
  }
  rlx__bf16_to_f32_n(f, h, 65536);
  for (uint32_t i = 0; i < 65536; i++) {
    float s = rlx__bf16_to_f32((uint16_t)i);
    ck_assert(memcmp(&s, &f[i], 4) == 0);
  }
  /* floats: every exponent, mantissas with round-half bits set, NaNs, subnormals */
  uint32_t x = 12345;
  for (uint32_t i = 0; i < 65536; i++) {
    x = x * 1664525u + 1013904223u;
    uint32_t u = (i < 512)    ? (i << 23) | (i & 1 ? 0x1000u : 0x2fffu)
                 : (i < 1024) ? (x & 0xffff0000u) | 0x8000u /* bfloat16 ties, to even */
                              : x;
    memcpy(&g[i], &u, 4);
  }
  rlx__f32_to_f16_n(back, g, 65536);
  for (uint32_t i = 0; i < 65536; i++)
    ck_assert_msg(back[i] == rlx__f32_to_f16(g[i]), "float %u narrows differently", i);
  rlx__f32_to_bf16_n(back, g, 65536);
  for (uint32_t i = 0; i < 65536; i++)
    ck_assert(back[i] == rlx__f32_to_bf16(g[i]));
}
END_TEST

int main(void) {
  Suite *s = suite_create("half");
  TCase *tc = tcase_create("convert");
  tcase_set_timeout(tc, 120); /* Check's default is 4 s: too short under the sanitizers */
  tcase_add_test(tc, f16_known_values);
  tcase_add_test(tc, f16_round_to_nearest_even);
  tcase_add_test(tc, f16_subnormals);
  tcase_add_test(tc, f16_nan);
  tcase_add_test(tc, f16_every_value_round_trips);
  tcase_add_test(tc, bf16_values);
  tcase_add_test(tc, bulk_matches_scalar);
  suite_add_tcase(s, tc);
  return rlx_run_suite(s);
}
