/* Every reduction kernel against a scalar reference, over lengths that are
 * not multiples of any vector width, including out aliasing an input. */
#include <check.h>
#include "suite.h"
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "base/fastdiv.h"
#include "coll/coll.h"

static double get(const void *b, size_t i, rlx_dtype_t dt) {
  switch (dt) {
  case RLX_INT8: return ((const int8_t *)b)[i];
  case RLX_UINT8: return ((const uint8_t *)b)[i];
  case RLX_INT32: return ((const int32_t *)b)[i];
  case RLX_UINT32: return ((const uint32_t *)b)[i];
  case RLX_INT64: return (double)((const int64_t *)b)[i];
  case RLX_UINT64: return (double)((const uint64_t *)b)[i];
  case RLX_FLOAT16: return rlx__f16_to_f32(((const uint16_t *)b)[i]);
  case RLX_BFLOAT16: return rlx__bf16_to_f32(((const uint16_t *)b)[i]);
  case RLX_FLOAT32: return ((const float *)b)[i];
  case RLX_FLOAT64: return ((const double *)b)[i];
  default: return 0;
  }
}

/* Sums and products of float-or-narrower values are rounded in float32. */
static float f32_op(double x, double y, double r, rlx_op_t op) {
  if (op == RLX_SUM || op == RLX_AVG)
    return (float)x + (float)y;
  if (op == RLX_PROD)
    return (float)x * (float)y;
  return (float)r;
}

/* The scalar reference, written independently of the kernels. */
static void ref_one(void *o, const void *a, const void *b, size_t i, rlx_dtype_t dt, rlx_op_t op) {
#define INT_CASE(T, U)                                                                             \
  {                                                                                                \
    T x = ((const T *)a)[i], y = ((const T *)b)[i], r;                                             \
    if (op == RLX_SUM) r = (T)((U)x + (U)y);                                                       \
    else if (op == RLX_PROD) r = (T)((U)x * (U)y);                                                 \
    else if (op == RLX_MIN) r = x < y ? x : y;                                                     \
    else if (op == RLX_BAND) r = x & y;                                                            \
    else if (op == RLX_BOR) r = x | y;                                                             \
    else if (op == RLX_BXOR) r = x ^ y;                                                            \
    else r = x > y ? x : y;                                                                        \
    ((T *)o)[i] = r;                                                                               \
    return;                                                                                        \
  }
  switch (dt) {
  case RLX_INT8: INT_CASE(int8_t, uint8_t)
  case RLX_UINT8: INT_CASE(uint8_t, uint8_t)
  case RLX_INT32: INT_CASE(int32_t, uint32_t)
  case RLX_UINT32: INT_CASE(uint32_t, uint32_t)
  case RLX_INT64: INT_CASE(int64_t, uint64_t)
  case RLX_UINT64: INT_CASE(uint64_t, uint64_t)
  default: break;
  }
  double x = get(a, i, dt), y = get(b, i, dt), r;
  if (op == RLX_SUM || op == RLX_AVG) r = x + y;
  else if (op == RLX_PROD) r = x * y;
  else if (op == RLX_MIN) r = (isnan(x) || isnan(y)) ? NAN : fmin(x, y);
  else r = (isnan(x) || isnan(y)) ? NAN : fmax(x, y);
  switch (dt) {
  case RLX_FLOAT16: ((uint16_t *)o)[i] = rlx__f32_to_f16(f32_op(x, y, r, op)); break;
  case RLX_BFLOAT16: ((uint16_t *)o)[i] = rlx__f32_to_bf16(f32_op(x, y, r, op)); break;
  case RLX_FLOAT32: ((float *)o)[i] = f32_op(x, y, r, op); break;
  case RLX_FLOAT64: ((double *)o)[i] = r; break;
  default: break;
  }
}

static void fill(void *b, size_t n, rlx_dtype_t dt) {
  unsigned char *p = b;
  size_t es = rlx_dtype_size(dt);
  for (size_t i = 0; i < n * es; i++)
    p[i] = (unsigned char)rand();
  for (size_t i = 0; i < n; i++) {
    float v = (float)(rand() % 2001 - 1000) / 37.0f;
    if (i % 97 == 5)
      v = NAN;
    switch (dt) {
    case RLX_FLOAT16: ((uint16_t *)b)[i] = rlx__f32_to_f16(v); break;
    case RLX_BFLOAT16: ((uint16_t *)b)[i] = rlx__f32_to_bf16(v); break;
    case RLX_FLOAT32: ((float *)b)[i] = v; break;
    case RLX_FLOAT64: ((double *)b)[i] = v; break;
    default: break;
    }
  }
}

static int same(const void *x, const void *y, size_t i, rlx_dtype_t dt) {
  if (rlx__dtype_is_float(dt)) {
    double a = get(x, i, dt), b = get(y, i, dt);
    if (isnan(a) || isnan(b))
      return isnan(a) && isnan(b);
    return a == b;
  }
  size_t es = rlx_dtype_size(dt);
  return memcmp((const char *)x + i * es, (const char *)y + i * es, es) == 0;
}

START_TEST(kernels_match_reference) {
  srand(99);
  static const size_t lens[] = {0, 1, 3, 7, 15, 16, 17, 31, 33, 63, 64, 65, 255, 257, 1000, 4099};
  for (int dt = 0; dt < RLX_DTYPE_COUNT; dt++) {
    for (int op = 0; op < RLX_OP_COUNT; op++) {
      if (op == RLX_AVG && !rlx__dtype_is_float((rlx_dtype_t)dt))
        continue;
      if (op >= RLX_BAND && rlx__dtype_is_float((rlx_dtype_t)dt))
        continue;
      for (size_t li = 0; li < sizeof(lens) / sizeof(lens[0]); li++) {
        size_t n = lens[li], es = rlx_dtype_size((rlx_dtype_t)dt);
        char *a = malloc(n * es + 8), *b = malloc(n * es + 8), *o = malloc(n * es + 8),
             *r = malloc(n * es + 8);
        fill(a, n, (rlx_dtype_t)dt);
        fill(b, n, (rlx_dtype_t)dt);
        for (size_t i = 0; i < n; i++)
          ref_one(r, a, b, i, (rlx_dtype_t)dt, (rlx_op_t)op);
        rlx__reduce(o, a, b, n, (rlx_dtype_t)dt, (rlx_op_t)op);
        for (size_t i = 0; i < n; i++)
          ck_assert_msg(same(o, r, i, (rlx_dtype_t)dt), "%s %s n=%zu i=%zu",
                        rlx_dtype_name((rlx_dtype_t)dt), rlx_op_name((rlx_op_t)op), n, i);
        /* symmetric: a op b == b op a, bit for bit (NaN aside) */
        rlx__reduce(r, b, a, n, (rlx_dtype_t)dt, (rlx_op_t)op);
        for (size_t i = 0; i < n; i++)
          ck_assert(same(o, r, i, (rlx_dtype_t)dt));
        /* in place: out aliases a */
        rlx__reduce(a, a, b, n, (rlx_dtype_t)dt, (rlx_op_t)op);
        for (size_t i = 0; i < n; i++)
          ck_assert(same(o, a, i, (rlx_dtype_t)dt));
        free(a);
        free(b);
        free(o);
        free(r);
      }
    }
  }
}
END_TEST

START_TEST(avg_divides_by_ranks) {
  float f[5] = {3, 6, 9, -3, 0.75f};
  rlx__avg_finish(f, 5, RLX_FLOAT32, 3);
  ck_assert(f[0] == 1 && f[1] == 2 && f[2] == 3 && f[3] == -1 && f[4] == 0.25f);
  uint16_t h[2] = {rlx__f32_to_f16(8), rlx__f32_to_bf16(8)};
  rlx__avg_finish(h, 1, RLX_FLOAT16, 4);
  rlx__avg_finish(h + 1, 1, RLX_BFLOAT16, 4);
  ck_assert(rlx__f16_to_f32(h[0]) == 2 && rlx__bf16_to_f32(h[1]) == 2);
}
END_TEST

/* base/fastdiv.h divides by an element's size with a shift: every
 * dtype's size is a power of two, at most 8 (a slot's whole elements). */
START_TEST(dtype_sizes_divide_by_shift) {
  for (int dt = 0; dt < RLX_DTYPE_COUNT; dt++) {
    size_t es = rlx_dtype_size((rlx_dtype_t)dt);
    ck_assert_msg(es >= 1 && es <= 8 && (es & (es - 1)) == 0, "dtype %d: size %zu", dt, es);
    for (size_t bytes = 0; bytes < 100; bytes += 7)
      ck_assert_uint_eq(rlx__per_elem(bytes, es), bytes / es);
  }
}
END_TEST

int main(void) {
  Suite *s = suite_create("reduce");
  TCase *tc = tcase_create("kernels");
  tcase_add_test(tc, kernels_match_reference);
  tcase_add_test(tc, avg_divides_by_ranks);
  tcase_add_test(tc, dtype_sizes_divide_by_shift);
  tcase_set_timeout(tc, 60);
  suite_add_tcase(s, tc);
  return rlx_run_suite(s);
}
