/* The plain C backend: matrix products through CBLAS (OpenBLAS, one thread
 * per rank: ranks are the parallelism), the rest in loops shared with the
 * validation reference. Row-major; activations are batch x width. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "compute/backend.h"
#include "compute/blas.h"
#include "compute/cpu_ops.h"
#include "base/internal.h"

struct cpu {
  struct rlx__backend base;
  const struct rlx__blas *blas;
  float *params, *velocity;
  float *act[RLX__MAX_LAYERS + 1]; /* act[0] points at the caller's x */
  float *dz, *dz2;                 /* gradients w.r.t. pre-activations */
  float *ones;                     /* batch of 1s: bias gradient = dZ^T 1 */
};

static struct cpu *cpu_of(struct rlx__backend *b) { return (struct cpu *)b; }

static void cpu_destroy(struct rlx__backend *b) {
  struct cpu *c = cpu_of(b);
  free(c->params);
  free(c->velocity);
  for (int l = 1; l <= RLX__MAX_LAYERS; l++)
    free(c->act[l]);
  free(c->dz);
  free(c->dz2);
  free(c->ones);
  free(c);
}

static int cpu_set_params(struct rlx__backend *b, const float *p) {
  memcpy(cpu_of(b)->params, p, sizeof(float) * b->lo->nparams);
  memset(cpu_of(b)->velocity, 0, sizeof(float) * b->lo->nparams);
  return RLX_OK;
}

static int cpu_get_params(struct rlx__backend *b, float *p) {
  memcpy(p, cpu_of(b)->params, sizeof(float) * b->lo->nparams);
  return RLX_OK;
}

static int cpu_velocity(struct rlx__backend *b, float *v, int set) {
  size_t bytes = sizeof(float) * b->lo->nparams;
  if (set)
    memcpy(cpu_of(b)->velocity, v, bytes);
  else
    memcpy(v, cpu_of(b)->velocity, bytes);
  return RLX_OK;
}

static float *cpu_host_state(struct rlx__backend *b, int which) {
  return which ? cpu_of(b)->velocity : cpu_of(b)->params;
}

/* Forward through every layer; returns the logits (batch x classes). */
static float *cpu_forward(struct cpu *c, const float *x, int batch) {
  const struct rlx__layout *lo = c->base.lo;
  const struct rlx__blas *b = c->blas;
  c->act[0] = (float *)x;
  for (int l = 0; l < lo->nlayers; l++) {
    int in = lo->sizes[l], out = lo->sizes[l + 1];
    b->sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, batch, out, in, 1.0f, c->act[l], in,
                c->params + lo->w_off[l], in, 0.0f, c->act[l + 1], out);
    rlx__cpu_bias_act(c->act[l + 1], c->params + lo->b_off[l], batch, out,
                      l + 1 < lo->nlayers);
  }
  return c->act[lo->nlayers];
}

static int cpu_grad_layers(struct rlx__backend *b, const float *x, const int32_t *y, int batch,
                           float *g, int (*done)(int l, void *arg), void *arg, float *loss,
                           int *correct) {
  struct cpu *c = cpu_of(b);
  const struct rlx__layout *lo = b->lo;
  const struct rlx__blas *B = c->blas;
  int classes = lo->sizes[lo->nlayers];
  float *logits = cpu_forward(c, x, batch);
  double lsum = 0;
  long ok = 0;
  rlx__cpu_softmax_xent(logits, y, batch, classes, c->dz, &lsum, &ok);
  float *dz = c->dz, *dprev = c->dz2;
  for (int l = lo->nlayers - 1; l >= 0; l--) {
    int in = lo->sizes[l], out = lo->sizes[l + 1];
    /* dW = dZ^T A, db = dZ^T 1 */
    B->sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, out, in, batch, 1.0f, dz, out, c->act[l],
                in, 0.0f, g + lo->w_off[l], in);
    B->sgemv(CblasRowMajor, CblasTrans, batch, out, 1.0f, dz, out, c->ones, 1, 0.0f,
                g + lo->b_off[l], 1);
    int rc = done ? done(l, arg) : 0;
    if (rc != 0)
      return rc;
    if (l == 0)
      break;
    /* dA = dZ W, then through the ReLU of layer l */
    B->sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, batch, in, out, 1.0f, dz, out,
                c->params + lo->w_off[l], in, 0.0f, dprev, in);
    rlx__cpu_relu_back(dprev, c->act[l], (size_t)batch * in);
    float *t = dz;
    dz = dprev;
    dprev = t;
  }
  if (loss)
    *loss = (float)(lsum / batch);
  if (correct)
    *correct = (int)ok;
  return RLX_OK;
}

static int cpu_grad(struct rlx__backend *b, const float *x, const int32_t *y, int batch, float *g,
                    float *loss, int *correct) {
  return cpu_grad_layers(b, x, y, batch, g, NULL, NULL, loss, correct);
}

static int cpu_apply_range(struct rlx__backend *b, const float *g, size_t off, size_t n, float lr) {
  struct cpu *c = cpu_of(b);
  rlx__cpu_sgd(c->params + off, c->velocity + off, g + off, n, lr, b->momentum);
  return RLX_OK;
}

static int cpu_apply(struct rlx__backend *b, const float *g, float lr) {
  struct cpu *c = cpu_of(b);
  rlx__cpu_sgd(c->params, c->velocity, g, b->lo->nparams, lr, b->momentum);
  return RLX_OK;
}

static int cpu_eval(struct rlx__backend *b, const float *x, const int32_t *y, int batch,
                    double *loss_sum, long *correct) {
  struct cpu *c = cpu_of(b);
  const struct rlx__layout *lo = b->lo;
  float *logits = cpu_forward(c, x, batch);
  rlx__cpu_softmax_xent(logits, y, batch, lo->sizes[lo->nlayers], NULL, loss_sum, correct);
  return RLX_OK;
}

static const struct rlx__backend_ops cpu_ops = {
    .destroy = cpu_destroy,
    .set_params = cpu_set_params,
    .get_params = cpu_get_params,
    .host_state = cpu_host_state,
    .velocity = cpu_velocity,
    .grad_layers = cpu_grad_layers,
    .apply_range = cpu_apply_range,
    .grad = cpu_grad,
    .apply = cpu_apply,
    .eval = cpu_eval,
    .host_alloc = NULL, /* plain malloc is all C needs */
    .host_free = NULL,
};

int rlx__cpu_create(const struct rlx__layout *lo, float momentum, struct rlx__backend **out) {
  const struct rlx__blas *blas = rlx__blas_get();
  if (!blas)
    return RLX_ERR_DEVICE;
  struct cpu *c = calloc(1, sizeof *c);
  if (!c)
    return rlx__err(RLX_ERR_NOMEM, "out of memory for the cpu backend");
  c->base.ops = &cpu_ops;
  c->blas = blas;
  c->base.lo = lo;
  c->base.momentum = momentum;
  snprintf(c->base.name, sizeof c->base.name, "cpu");
  size_t B = (size_t)lo->max_batch;
  int fail = !(c->params = calloc(lo->nparams, sizeof(float))) ||
             !(c->velocity = calloc(lo->nparams, sizeof(float))) ||
             !(c->dz = malloc(sizeof(float) * B * lo->max_width)) ||
             !(c->dz2 = malloc(sizeof(float) * B * lo->max_width)) ||
             !(c->ones = malloc(sizeof(float) * B));
  for (int l = 1; !fail && l <= lo->nlayers; l++)
    fail = !(c->act[l] = malloc(sizeof(float) * B * lo->sizes[l]));
  if (fail) {
    cpu_destroy(&c->base);
    return rlx__err(RLX_ERR_NOMEM, "out of memory for the cpu backend (%zu parameters, batch %zu)",
                    lo->nparams, B);
  }
  for (size_t i = 0; i < B; i++)
    c->ones[i] = 1.0f;
  *out = &c->base;
  return RLX_OK;
}
