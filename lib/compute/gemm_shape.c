/* RLX_GEMM_SHAPE and the per-device default of gemm_tiles' shape. */
#include "compute/gemm_shape.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const struct rlx__gemm_shape plain = {4, 4, 16, 16, 256};

/* Measured fastest per device and model (bench/gemm_shapes.sh; README
 * says where), for models whose widest layer is at least min_width.
 * NVIDIA H200: 8 x 4 outputs a work-item, the k split while under 128
 * tiles, for 784-1024-1024-10: its products 490.6 -> 443.5 us at batch
 * 1024, 175.2 -> 166.2 at 256; the whole run 1.72M -> 1.88M samples/s at
 * 1024, the same within noise at 64 and 256; not for 784-256-10, where
 * runs at batch 64 were slower, at 256 either way, at 1024 faster
 * (bench/results/gemm-shape-h200-2026-12-05.txt). NVIDIA H100 80GB HBM3:
 * the same shape, the same model: its products 502.8 -> 442.3 us at
 * 1024 (cuBLAS 329.0), 174.8 -> 168.8 at 256; the whole run, 3 rounds of
 * 5 epochs, 1.69-1.73M -> 1.80-1.87M samples/s at 1024, 1.07-1.08M ->
 * 1.09-1.11M at 256 (bench/results/gemm-shape-h100-2026-12-05.txt). With
 * session 49's kernel (its addressing) still the fastest shape that keeps
 * the bits there: 363.8 us at 1024, cuBLAS 313.2
 * (bench/results/gemm-addressing-h100-2026-12-06.txt). */
static const struct {
  const char *name;
  int min_width;
  struct rlx__gemm_shape s;
} known[] = {{"NVIDIA H200", 1024, {8, 4, 16, 16, 128}},
             {"NVIDIA H100 80GB HBM3", 1024, {8, 4, 16, 16, 128}}};

/* What kernels.cl's gemm_tiles accepts (its #error says the same). */
static int valid(const struct rlx__gemm_shape *s) {
  int nwi = 16 * s->wy;
  return (s->rm == 4 || s->rm == 8) && (s->rn == 4 || s->rn == 8) && (s->wy == 8 || s->wy == 16) &&
         (s->chunk == 8 || s->chunk == 16 || s->chunk == 32) && s->chunk * s->wy * s->rm % nwi == 0 &&
         s->chunk * 16 * s->rn % nwi == 0 && s->fill >= 1 && s->fill <= 65536;
}

int rlx__gemm_shape_wanted(const char *device_name, int widest, struct rlx__gemm_shape *s,
                           char *why, size_t whylen) {
  *s = plain;
  for (size_t i = 0; i < sizeof known / sizeof known[0]; i++)
    if (device_name && strcmp(device_name, known[i].name) == 0 && widest >= known[i].min_width)
      *s = known[i].s;
  const char *v = getenv("RLX_GEMM_SHAPE");
  if (v == NULL || *v == '\0')
    return 0;
  struct rlx__gemm_shape t = {0, 0, 0, 0, plain.fill};
  int used = 0, more = 0, ok = sscanf(v, "%dx%dx%dx%d%n", &t.rm, &t.rn, &t.wy, &t.chunk, &used) == 4;
  if (ok && v[used] == '/')
    ok = sscanf(v + used, "/%d%n", &t.fill, &more) == 1;
  if (!ok || v[used + more] != '\0' || !valid(&t)) {
    snprintf(why, whylen,
             "RLX_GEMM_SHAPE=\"%.40s\": expected RMxRNxWYxCHUNK[/FILL] with RM and RN 4 or 8, "
             "WY 8 or 16, CHUNK 8, 16 or 32 (CHUNK x WY x RM and CHUNK x 16 x RN multiples of "
             "16 x WY), FILL 1-65536",
             v);
    return -1;
  }
  *s = t;
  return 0;
}

void rlx__gemm_shape_options(const struct rlx__gemm_shape *s, char *buf, size_t len) {
  snprintf(buf, len, "-DRM=%d -DRN=%d -DWY=%d -DCHUNK=%d", s->rm, s->rn, s->wy, s->chunk);
}

void rlx__gemm_shape_split(const struct rlx__gemm_shape *s, unsigned m, unsigned n, unsigned k,
                           unsigned *tm, unsigned *tn, unsigned *splits, unsigned *per) {
  *tm = (unsigned)(s->wy * s->rm);
  *tn = (unsigned)(16 * s->rn);
  size_t ntiles = (size_t)((n + *tn - 1) / *tn) * ((m + *tm - 1) / *tm);
  *splits = 1;
  while (ntiles * *splits < (size_t)s->fill && *splits < 8 && k / (2 * *splits) >= 64)
    *splits *= 2;
  unsigned c = (unsigned)s->chunk;
  *per = ((k + *splits - 1) / *splits + c - 1) / c * c;
}
