/* float16 and bfloat16 to and from float32, bit-exact: round to nearest
 * even, NaN stays NaN (quiet), infinities and subnormals kept. In the base
 * library: the collectives (RLX_WIRE, half dtypes) and the compute layer
 * (half-width gradients) both use it. */
#include <string.h>
#include "base/half.h"

static uint32_t bits_of(float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  return u;
}
static float float_of(uint32_t u) {
  float f;
  memcpy(&f, &u, 4);
  return f;
}

uint16_t rlx__f32_to_f16(float f) {
  uint32_t x = bits_of(f);
  uint16_t sign = (uint16_t)((x >> 16) & 0x8000u);
  uint32_t exp = (x >> 23) & 0xffu;
  uint32_t man = x & 0x7fffffu;

  if (exp == 0xff) /* Inf or NaN; NaN keeps its top payload bits and stays quiet */
    return (uint16_t)(sign | 0x7c00u | (man ? (0x200u | (man >> 13)) : 0));
  int e = (int)exp - 127 + 15;
  if (e >= 0x1f) /* overflow to infinity */
    return (uint16_t)(sign | 0x7c00u);
  if (e <= 0) {
    /* Subnormal half (or zero): shift the full significand into place and
     * round to nearest even on the bits shifted out. */
    if (e < -10)
      return sign;
    uint32_t m = man | 0x800000u;
    int shift = 14 - e;
    uint32_t half_m = m >> shift;
    uint32_t rem = m & ((1u << shift) - 1);
    uint32_t halfway = 1u << (shift - 1);
    if (rem > halfway || (rem == halfway && (half_m & 1)))
      half_m++;
    return (uint16_t)(sign | half_m);
  }
  uint32_t h = ((uint32_t)e << 10) | (man >> 13);
  uint32_t rem = man & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (h & 1)))
    h++; /* may carry into the exponent, up to infinity: still correct */
  return (uint16_t)(sign | h);
}

float rlx__f16_to_f32(uint16_t h) {
  uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1fu;
  uint32_t man = h & 0x3ffu;
  if (exp == 0x1f) /* Inf, or NaN made quiet (as F16C's vcvtph2ps does) */
    return float_of(sign | 0x7f800000u | (man ? 0x400000u : 0) | (man << 13));
  if (exp == 0) {
    if (man == 0)
      return float_of(sign);
    /* subnormal: value = man * 2^-24 */
    float v = (float)man * float_of(0x33800000u);
    return sign ? -v : v;
  }
  return float_of(sign | ((exp - 15 + 127) << 23) | (man << 13));
}

uint16_t rlx__f32_to_bf16(float f) {
  uint32_t x = bits_of(f);
  if ((x & 0x7f800000u) == 0x7f800000u && (x & 0x7fffffu))
    return (uint16_t)((x >> 16) | 0x40u); /* NaN: keep it a quiet NaN */
  uint32_t lsb = (x >> 16) & 1u;
  x += 0x7fffu + lsb;
  return (uint16_t)(x >> 16);
}

float rlx__bf16_to_f32(uint16_t h) { return float_of((uint32_t)h << 16); }

/* ---- bulk conversion ------------------------------------------------------ */
#if defined(__x86_64__)
#include <immintrin.h>
__attribute__((target("f16c,avx"))) static void f32_to_f16_f16c(uint16_t *d, const float *s,
                                                                size_t n) {
  size_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm_storeu_si128((__m128i *)(d + i),
                     _mm256_cvtps_ph(_mm256_loadu_ps(s + i), _MM_FROUND_TO_NEAREST_INT));
  for (; i < n; i++)
    d[i] = rlx__f32_to_f16(s[i]);
}
__attribute__((target("f16c,avx"))) static void f16_to_f32_f16c(float *d, const uint16_t *s,
                                                                size_t n) {
  size_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm256_storeu_ps(d + i, _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(s + i))));
  for (; i < n; i++)
    d[i] = rlx__f16_to_f32(s[i]);
}
/* bfloat16 is float32's top half: round to nearest even (a quiet NaN
 * stays one), or a shift back; 8 at a time. */
__attribute__((target("avx2"))) static void f32_to_bf16_avx2(uint16_t *d, const float *s,
                                                             size_t n) {
  const __m256i exp = _mm256_set1_epi32(0x7f800000), man = _mm256_set1_epi32(0x7fffff),
                one = _mm256_set1_epi32(1), bias = _mm256_set1_epi32(0x7fff),
                quiet = _mm256_set1_epi32(0x40), zero = _mm256_setzero_si256();
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    __m256i x = _mm256_loadu_si256((const __m256i *)(s + i));
    __m256i rounded = _mm256_srli_epi32(
        _mm256_add_epi32(x, _mm256_add_epi32(bias, _mm256_and_si256(_mm256_srli_epi32(x, 16), one))),
        16);
    __m256i nan = _mm256_andnot_si256(_mm256_cmpeq_epi32(_mm256_and_si256(x, man), zero),
                                      _mm256_cmpeq_epi32(_mm256_and_si256(x, exp), exp));
    __m256i q = _mm256_or_si256(_mm256_srli_epi32(x, 16), quiet);
    __m256i r = _mm256_blendv_epi8(rounded, q, nan);
    /* the low 16 bits of each 32: pack (values fit in 16 bits unsigned) */
    __m256i packed = _mm256_packus_epi32(r, r);
    packed = _mm256_permute4x64_epi64(packed, 0x08);
    _mm_storeu_si128((__m128i *)(d + i), _mm256_castsi256_si128(packed));
  }
  for (; i < n; i++)
    d[i] = rlx__f32_to_bf16(s[i]);
}
__attribute__((target("avx2"))) static void bf16_to_f32_avx2(float *d, const uint16_t *s,
                                                             size_t n) {
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    __m256i x = _mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *)(s + i)));
    _mm256_storeu_si256((__m256i *)(d + i), _mm256_slli_epi32(x, 16));
  }
  for (; i < n; i++)
    d[i] = rlx__bf16_to_f32(s[i]);
}
static int have_avx2(void) {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx2");
}
static int have_f16c(void) {
  __builtin_cpu_init();
  return __builtin_cpu_supports("f16c") && __builtin_cpu_supports("avx");
}
#endif

void rlx__f32_to_f16_n(uint16_t *dst, const float *src, size_t n) {
#if defined(__x86_64__)
  if (have_f16c()) {
    f32_to_f16_f16c(dst, src, n);
    return;
  }
#endif
  for (size_t i = 0; i < n; i++)
    dst[i] = rlx__f32_to_f16(src[i]);
}

void rlx__f16_to_f32_n(float *dst, const uint16_t *src, size_t n) {
#if defined(__x86_64__)
  if (have_f16c()) {
    f16_to_f32_f16c(dst, src, n);
    return;
  }
#endif
  for (size_t i = 0; i < n; i++)
    dst[i] = rlx__f16_to_f32(src[i]);
}

void rlx__f32_to_bf16_n(uint16_t *dst, const float *src, size_t n) {
#if defined(__x86_64__)
  if (have_avx2()) {
    f32_to_bf16_avx2(dst, src, n);
    return;
  }
#endif
  for (size_t i = 0; i < n; i++)
    dst[i] = rlx__f32_to_bf16(src[i]);
}

void rlx__bf16_to_f32_n(float *dst, const uint16_t *src, size_t n) {
#if defined(__x86_64__)
  if (have_avx2()) {
    bf16_to_f32_avx2(dst, src, n);
    return;
  }
#endif
  for (size_t i = 0; i < n; i++)
    dst[i] = rlx__bf16_to_f32(src[i]);
}
