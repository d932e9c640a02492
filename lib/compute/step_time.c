/* How long a backend takes for one training step (gradient and update) at
 * the model's batch: what `auto` compares to keep the faster of a device
 * that passed validation and the C backend. */
#include <stdlib.h>
#include <time.h>
#include "compute/backend.h"
#include "internal.h"

#define TIMED_STEPS 3

static double now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

int rlx__step_time(struct rlx__backend *b, double *ms) {
  const struct rlx__layout *lo = b->lo;
  int rows = lo->max_batch, in = lo->sizes[0], classes = lo->sizes[lo->nlayers];
  float *x = malloc(sizeof(float) * (size_t)rows * in), *p = malloc(sizeof(float) * lo->nparams);
  float *g = malloc(sizeof(float) * lo->nparams);
  int32_t *y = malloc(sizeof(int32_t) * (size_t)rows);
  int rc = RLX_ERR_NOMEM;
  if (!x || !p || !g || !y)
    goto out;
  uint64_t s = 0x74696d65ULL; /* "time" */
  for (size_t i = 0; i < (size_t)rows * in; i++)
    x[i] = (float)(2.0 * rlx__uniform(&s) - 1.0);
  for (int r = 0; r < rows; r++)
    y[r] = r % classes;
  rlx__layout_init_params(lo, s, p);
  if ((rc = b->ops->set_params(b, p)) != RLX_OK)
    goto out;
  /* One step to warm up (first launches, page faults), then the best of a
   * few: the least disturbed by whatever else runs on the host. */
  double best = 0;
  for (int k = 0; k <= TIMED_STEPS; k++) {
    float loss;
    int ok;
    double t0 = now_ms();
    if ((rc = b->ops->grad(b, x, y, rows, g, &loss, &ok)) != RLX_OK ||
        (rc = b->ops->apply(b, g, 0.01f)) != RLX_OK)
      goto out;
    double t = now_ms() - t0;
    if (k == 1 || (k > 1 && t < best))
      best = t;
  }
  *ms = best;
out:
  free(x);
  free(p);
  free(g);
  free(y);
  return rc;
}
