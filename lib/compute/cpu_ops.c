/* Loops of the C backend; also the reference the OpenCL kernels are
 * validated against, so they favour clarity over tricks. */
#include <math.h>
#include "compute/cpu_ops.h"

void rlx__cpu_bias_act(float *z, const float *bias, int rows, int cols, int relu) {
  for (int r = 0; r < rows; r++) {
    float *zr = z + (size_t)r * cols;
    if (relu)
      for (int j = 0; j < cols; j++) {
        float v = zr[j] + bias[j];
        zr[j] = v > 0.0f ? v : 0.0f;
      }
    else
      for (int j = 0; j < cols; j++)
        zr[j] += bias[j];
  }
}

void rlx__cpu_softmax_xent(const float *logits, const int32_t *y, int rows, int classes,
                           float *dz, double *loss_sum, long *correct) {
  double lsum = 0;
  long ok = 0;
  for (int r = 0; r < rows; r++) {
    const float *z = logits + (size_t)r * classes;
    int best = 0;
    for (int j = 1; j < classes; j++)
      if (z[j] > z[best])
        best = j;
    float m = z[best], s = 0.0f;
    for (int j = 0; j < classes; j++)
      s += expf(z[j] - m);
    int t = y[r];
    lsum += (double)(logf(s) + m - z[t]);
    ok += best == t;
    if (dz) {
      float *d = dz + (size_t)r * classes, inv = 1.0f / (s * (float)rows);
      for (int j = 0; j < classes; j++)
        d[j] = expf(z[j] - m) * inv - (j == t ? 1.0f / (float)rows : 0.0f);
    }
  }
  *loss_sum += lsum;
  *correct += ok;
}

void rlx__cpu_relu_back(float *d, const float *a, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (!(a[i] > 0.0f))
      d[i] = 0.0f;
}

void rlx__cpu_sgd(float *p, float *v, const float *g, size_t n, float lr, float momentum) {
  if (momentum == 0.0f) {
    for (size_t i = 0; i < n; i++)
      p[i] -= lr * g[i];
    return;
  }
  for (size_t i = 0; i < n; i++) {
    v[i] = momentum * v[i] + g[i];
    p[i] -= lr * v[i];
  }
}
