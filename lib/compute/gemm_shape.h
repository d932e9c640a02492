/* gemm_tiles' work-group shape (kernels.cl): RM x RN outputs a work-item,
 * 16 x WY work-items, k CHUNK at a time, k split while a product has
 * fewer work-groups than FILL. Every shape sums each output in k's order,
 * so shapes with the same k split give the same bits. */
#ifndef RLX_COMPUTE_GEMM_SHAPE_H
#define RLX_COMPUTE_GEMM_SHAPE_H

#include <stddef.h>

struct rlx__gemm_shape {
  int rm, rn, wy, chunk, fill;
};

/* The shape for a device and a model whose widest layer is widest:
 * RLX_GEMM_SHAPE ("RMxRNxWYxCHUNK[/FILL]") when set, else the one
 * measured fastest on that device for such models, else 4x4x16x16/256.
 * -1 with the reason in why for a value the kernel cannot take. */
int rlx__gemm_shape_wanted(const char *device_name, int widest, struct rlx__gemm_shape *s,
                           char *why, size_t whylen);
/* A product's launch (m x n outputs, k deep): its tiles' rows and
 * columns, and k split in 2, 4 or 8 while it has fewer work-groups than
 * the shape's FILL (each split at least 64 deep), per (a multiple of
 * CHUNK) deep each. */
void rlx__gemm_shape_split(const struct rlx__gemm_shape *s, unsigned m, unsigned n, unsigned k,
                           unsigned *tm, unsigned *tn, unsigned *splits, unsigned *per);
/* The kernel's build options for the shape (-DRM=... -DCHUNK=...). */
void rlx__gemm_shape_options(const struct rlx__gemm_shape *s, char *buf, size_t len);

#endif
