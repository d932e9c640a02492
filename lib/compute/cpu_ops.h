/* The C backend's own loops: what BLAS lacks (bias + activation, softmax
 * cross-entropy, the ReLU's backward, the SGD update). */
#ifndef RLX_COMPUTE_CPU_OPS_H
#define RLX_COMPUTE_CPU_OPS_H

#include <stddef.h>
#include <stdint.h>

/* z[r][j] += bias[j], then ReLU when relu is set (in place). */
void rlx__cpu_bias_act(float *z, const float *bias, int rows, int cols, int relu);
/* Per row: softmax of the logits, cross-entropy against y. Adds the summed
 * loss to *loss_sum and right predictions to *correct; when dz is not NULL
 * writes (softmax - onehot) / rows, the mean loss's gradient. */
void rlx__cpu_softmax_xent(const float *logits, const int32_t *y, int rows, int classes,
                           float *dz, double *loss_sum, long *correct);
/* d[i] = 0 where the layer's output a[i] was clipped by the ReLU. */
void rlx__cpu_relu_back(float *d, const float *a, size_t n);
/* v = momentum v + g; p -= lr v (plain p -= lr g when momentum is 0). */
void rlx__cpu_sgd(float *p, float *v, const float *g, size_t n, float lr, float momentum);

#endif
