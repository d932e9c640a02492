/* float16 and bfloat16 conversions (half.c), shared by librlxcoll and
 * librlxcompute through the base library. */
#ifndef RLX_HALF_H
#define RLX_HALF_H

#include <stddef.h>
#include <stdint.h>

uint16_t rlx__f32_to_f16(float f); /* round to nearest even */
float rlx__f16_to_f32(uint16_t h);
uint16_t rlx__f32_to_bf16(float f); /* round to nearest even */
float rlx__bf16_to_f32(uint16_t h);
/* The same over n elements (F16C when the CPU has it; bit-identical). */
void rlx__f32_to_f16_n(uint16_t *dst, const float *src, size_t n);
void rlx__f16_to_f32_n(float *dst, const uint16_t *src, size_t n);
void rlx__f32_to_bf16_n(uint16_t *dst, const float *src, size_t n);
void rlx__bf16_to_f32_n(float *dst, const uint16_t *src, size_t n);

#endif
