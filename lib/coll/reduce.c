/* Element-wise reduction kernels for every dtype and op. Written as plain
 * loops the compiler vectorises; target_clones builds AVX-512, AVX2 and
 * generic versions and picks one at load time, so the library needs no
 * -march=native. Half types are reduced in float32. */
#pragma GCC optimize("O3")
#include <math.h>
#include <string.h>
#include "coll.h"

/* Not under the sanitizers: target_clones' ifunc resolvers run during
 * relocation, before the sanitizer runtime is up (TSan crashes there). */
#if defined(__x86_64__) && !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
#define RLX_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define RLX_CLONES
#endif

#define MINF(a, b) (((a) != (a) || (b) != (b)) ? (a) + (b) : ((a) < (b) ? (a) : (b)))
#define MAXF(a, b) (((a) != (a) || (b) != (b)) ? (a) + (b) : ((a) > (b) ? (a) : (b)))
#define MINI(a, b) ((a) < (b) ? (a) : (b))
#define MAXI(a, b) ((a) > (b) ? (a) : (b))

/* Integer kernels: sums and products wrap (done in the unsigned type so
 * signed overflow is defined). */
#define INT_KERNELS(name, T, U)                                                \
  RLX_CLONES static void name(T *restrict o, const T *a, const T *b, size_t n, \
                              rlx_op_t op) {                                   \
    size_t i;                                                                  \
    switch (op) {                                                              \
    case RLX_SUM:                                                              \
    case RLX_AVG:                                                              \
      for (i = 0; i < n; i++)                                                  \
        o[i] = (T)((U)a[i] + (U)b[i]);                                         \
      break;                                                                   \
    case RLX_PROD:                                                             \
      for (i = 0; i < n; i++)                                                  \
        o[i] = (T)((U)a[i] * (U)b[i]);                                         \
      break;                                                                   \
    case RLX_MIN:                                                              \
      for (i = 0; i < n; i++)                                                  \
        o[i] = MINI(a[i], b[i]);                                               \
      break;                                                                   \
    case RLX_MAX:                                                              \
      for (i = 0; i < n; i++)                                                  \
        o[i] = MAXI(a[i], b[i]);                                               \
      break;                                                                   \
    case RLX_BAND:                                                             \
      for (i = 0; i < n; i++)                                                  \
        o[i] = a[i] & b[i];                                                    \
      break;                                                                   \
    case RLX_BOR:                                                              \
      for (i = 0; i < n; i++)                                                  \
        o[i] = a[i] | b[i];                                                    \
      break;                                                                   \
    case RLX_BXOR:                                                             \
      for (i = 0; i < n; i++)                                                  \
        o[i] = a[i] ^ b[i];                                                    \
      break;                                                                   \
    default:                                                                   \
      break;                                                                   \
    }                                                                          \
  }

#define FLOAT_KERNELS(name, T)                                                 \
  RLX_CLONES static void name(T *o, const T *a, const T *b, size_t n,          \
                              rlx_op_t op) {                                   \
    size_t i;                                                                  \
    switch (op) {                                                              \
    case RLX_SUM:                                                              \
    case RLX_AVG:                                                              \
      for (i = 0; i < n; i++)                                                  \
        o[i] = a[i] + b[i];                                                    \
      break;                                                                   \
    case RLX_PROD:                                                             \
      for (i = 0; i < n; i++)                                                  \
        o[i] = a[i] * b[i];                                                    \
      break;                                                                   \
    case RLX_MIN:                                                              \
      for (i = 0; i < n; i++)                                                  \
        o[i] = MINF(a[i], b[i]);                                               \
      break;                                                                   \
    case RLX_MAX:                                                              \
      for (i = 0; i < n; i++)                                                  \
        o[i] = MAXF(a[i], b[i]);                                               \
      break;                                                                   \
    default:                                                                   \
      break;                                                                   \
    }                                                                          \
  }

INT_KERNELS(red_i8, int8_t, uint8_t)
INT_KERNELS(red_u8, uint8_t, uint8_t)
INT_KERNELS(red_i32, int32_t, uint32_t)
INT_KERNELS(red_u32, uint32_t, uint32_t)
INT_KERNELS(red_i64, int64_t, uint64_t)
INT_KERNELS(red_u64, uint64_t, uint64_t)
FLOAT_KERNELS(red_f32, float)
FLOAT_KERNELS(red_f64, double)

/* Half types: widen a block to float32 (F16C where the CPU has it),
 * reduce, round back. */
static void red_half(uint16_t *o, const uint16_t *a, const uint16_t *b, size_t n, rlx_op_t op,
                     int bf16) {
  float fa[256], fb[256];
  for (size_t base = 0; base < n; base += 256) {
    size_t m = n - base < 256 ? n - base : 256;
    if (bf16) {
      rlx__bf16_to_f32_n(fa, a + base, m);
      rlx__bf16_to_f32_n(fb, b + base, m);
    } else {
      rlx__f16_to_f32_n(fa, a + base, m);
      rlx__f16_to_f32_n(fb, b + base, m);
    }
    red_f32(fa, fa, fb, m, op);
    if (bf16)
      rlx__f32_to_bf16_n(o + base, fa, m);
    else
      rlx__f32_to_f16_n(o + base, fa, m);
  }
}

int rlx__dtype_is_float(rlx_dtype_t dt) {
  return dt == RLX_FLOAT16 || dt == RLX_BFLOAT16 || dt == RLX_FLOAT32 || dt == RLX_FLOAT64;
}

void rlx__reduce(void *out, const void *a, const void *b, size_t n, rlx_dtype_t dt,
                 rlx_op_t op) {
  switch (dt) {
  case RLX_INT8: red_i8(out, a, b, n, op); break;
  case RLX_UINT8: red_u8(out, a, b, n, op); break;
  case RLX_INT32: red_i32(out, a, b, n, op); break;
  case RLX_UINT32: red_u32(out, a, b, n, op); break;
  case RLX_INT64: red_i64(out, a, b, n, op); break;
  case RLX_UINT64: red_u64(out, a, b, n, op); break;
  case RLX_FLOAT32: red_f32(out, a, b, n, op); break;
  case RLX_FLOAT64: red_f64(out, a, b, n, op); break;
  case RLX_FLOAT16: red_half(out, a, b, n, op, 0); break;
  case RLX_BFLOAT16: red_half(out, a, b, n, op, 1); break;
  default: break;
  }
}

void rlx__avg_finish(void *buf, size_t n, rlx_dtype_t dt, int nranks) {
  size_t i;
  switch (dt) {
  case RLX_FLOAT32: {
    float *p = buf, d = (float)nranks;
    for (i = 0; i < n; i++)
      p[i] /= d;
    break;
  }
  case RLX_FLOAT64: {
    double *p = buf, d = (double)nranks;
    for (i = 0; i < n; i++)
      p[i] /= d;
    break;
  }
  case RLX_FLOAT16:
  case RLX_BFLOAT16: { /* a block at a time, widened in bulk (F16C where there is one) */
    uint16_t *p = buf;
    float f[256], inv = (float)nranks;
    int bf16 = dt == RLX_BFLOAT16;
    for (size_t base = 0; base < n; base += 256) {
      size_t m = n - base < 256 ? n - base : 256;
      (bf16 ? rlx__bf16_to_f32_n : rlx__f16_to_f32_n)(f, p + base, m);
      for (size_t k = 0; k < m; k++)
        f[k] /= inv; /* (a division, as the scalar form did: the same bits) */
      (bf16 ? rlx__f32_to_bf16_n : rlx__f32_to_f16_n)(p + base, f, m);
    }
    break;
  }
  default:
    break;
  }
}
