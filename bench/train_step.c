/* train_step: time the compute layer's training step (gradient + update,
 * no communication) for one MLP, batch and backend, the way PyTorch's
 * loop is timed in bench/torch_mlp_step.py: warm-up, then the median of
 * many steps. Prints one line:
 *   backend=... model=784-256-10 batch=1024 step_us=... samples_per_s=...
 * usage: train_step [--backend B] [--hidden 256[,..]] [--batch N]
 *                   [--steps N] [--warmup N] [--fused 1] [--half f16|bf16]
 * --fused 1: rlx_model_step (one rank: the gradient stays on the device)
 * --prefetch 1: the next step's batch (in rlx_model_next_input_buffer)
 *   moves to the device with rlx_model_prefetch while this step runs
 * --half: rlx_model_grad_half + rlx_model_apply_half (16-bit gradients,
 *   rounded and widened on the device: half the bytes over the bus)
 * instead of rlx_model_grad + rlx_model_apply; apply_us is then 0. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <rlxcoll/compute.h>
#include "mlp_sizes.h"

static double now_us(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}

static int cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

/* Step s's batch: the data set's rows from s x batch on, wrapping. */
static void step_batch(rlx_dataset_t *ds, uint32_t *idx, int batch, int s, float *x, int32_t *y) {
  for (int j = 0; j < batch; j++)
    idx[j] = (uint32_t)((s * batch + j) % ds->count);
  rlx_dataset_batch(ds, idx, batch, x, y);
}

int main(int argc, char **argv) {
  const char *backend = "auto", *hidden = "256";
  int batch = 256, steps = 50, warmup = 5, fused = 0, half = 0, prefetch = 0;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!strcmp(argv[i], "--backend")) backend = argv[i + 1];
    else if (!strcmp(argv[i], "--hidden")) hidden = argv[i + 1];
    else if (!strcmp(argv[i], "--batch")) batch = atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "--steps")) steps = atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "--warmup")) warmup = atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "--fused")) fused = atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "--prefetch")) prefetch = atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "--half")) half = !strcmp(argv[i + 1], "bf16") ? 2 : 1;
    else { fprintf(stderr, "train_step: unknown flag %s\n", argv[i]); return 2; }
  }
  if (batch < 1 || steps < 1 || warmup < 0) { fprintf(stderr, "train_step: bad numbers\n"); return 2; }
  int sizes[18], ns = mlp_sizes(hidden, sizes);
  rlx_model_desc_t d = {.nsizes = ns, .sizes = sizes, .max_batch = batch, .seed = 1,
                        .momentum = 0.9f, .device = backend, .local_rank = -1};
  rlx_model_t *m;
  int rc = rlx_model_create(&d, &m);
  if (rc != RLX_OK) { fprintf(stderr, "train_step: %s\n", rlx_errmsg()); return 1; }
  if (rlx_model_fallback(m))
    fprintf(stderr, "train_step: %s\n", rlx_model_fallback(m));
  rlx_dataset_t *ds;
  if (rlx_dataset_synthetic((size_t)batch * 4, 784, 10, 3, "train", &ds) != RLX_OK) return 1;
  size_t np = rlx_model_nparams(m);
  float *x = rlx_model_input_buffer(m), *g = rlx_model_grad_buffer(m);
  int32_t *y = malloc(sizeof(int32_t) * batch), *y2 = malloc(sizeof(int32_t) * batch);
  float *x2 = prefetch ? rlx_model_next_input_buffer(m) : NULL, *xs[2] = {x, x2};
  int32_t *ys[2] = {y, y2};
  uint16_t *g16 = rlx_model_grad16_buffer(m);
  uint32_t *idx = malloc(sizeof(uint32_t) * batch);
  double *t = malloc(sizeof(double) * steps), *ta = malloc(sizeof(double) * steps);
  if (!x || !g || !y || !y2 || !idx || !t || !ta || (prefetch && !x2)) return 1;
  for (int s = 0; s < warmup + steps; s++) {
    if (!prefetch) {
      step_batch(ds, idx, batch, s, x, y);
    } else { /* step s computes on xs[s % 2]; s + 1's batch goes to the other now */
      if (s == 0)
        step_batch(ds, idx, batch, 0, xs[0], ys[0]);
      x = xs[s % 2];
      y = ys[s % 2];
      step_batch(ds, idx, batch, s + 1, xs[(s + 1) % 2], ys[(s + 1) % 2]);
    }
    double t0 = now_us(), t1;
    float loss;
    if (prefetch && (rc = rlx_model_prefetch(m, xs[(s + 1) % 2], ys[(s + 1) % 2], batch)) != RLX_OK) {
      fprintf(stderr, "train_step: %s\n", rlx_errmsg());
      return 1;
    }
    if (fused) {
      rc = rlx_model_step(m, x, y, batch, 0.01f, &loss, NULL);
      t1 = now_us();
    }
    if (fused ? rc != RLX_OK
        : half ? ((rc = rlx_model_grad_half(m, x, y, batch, g16, half == 2, &loss, NULL)) != RLX_OK ||
                  (t1 = now_us(), rc = rlx_model_apply_half(m, g16, half == 2, 0.01f)) != RLX_OK)
              : ((rc = rlx_model_grad(m, x, y, batch, g, &loss, NULL)) != RLX_OK ||
                 (t1 = now_us(), rc = rlx_model_apply(m, g, 0.01f)) != RLX_OK)) {
      fprintf(stderr, "train_step: %s\n", rlx_errmsg());
      return 1;
    }
    if (s >= warmup) {
      t[s - warmup] = now_us() - t0;
      ta[s - warmup] = now_us() - t1;
    }
  }
  qsort(t, steps, sizeof *t, cmp);
  qsort(ta, steps, sizeof *ta, cmp);
  char model[128];
  int k = 0;
  for (int i = 0; i < ns; i++)
    k += snprintf(model + k, sizeof model - k, "%s%d", i ? "-" : "", sizes[i]);
  rlx_model_prefetch(m, NULL, NULL, 0); /* (the step after the last) */
  printf("backend=\"%s%s%s\" model=%s params=%zu batch=%d step_us=%.1f apply_us=%.1f "
         "samples_per_s=%.0f\n", rlx_model_backend(m),
         fused ? " fused" : half == 2 ? " bf16 grads" : half ? " f16 grads" : "",
         prefetch ? " prefetch" : "", model, np, batch,
         t[steps / 2], ta[steps / 2], batch / (t[steps / 2] * 1e-6));
  rlx_model_free(&m);
  rlx_dataset_free(&ds);
  return 0;
}
