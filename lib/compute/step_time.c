/* How long a backend takes for one training step (gradient and update) at
 * the model's batch: what `auto` compares to keep the faster of a device
 * that passed validation and the C backend. */
#include <stdlib.h>
#include "compute/backend.h"
#include "base/internal.h"

#define TIMED_STEPS 3
#define TIMING_SEED 0x74696d65ULL /* "time" */

int rlx__step_time(struct rlx__backend *b, double *ms) {
  const struct rlx__layout *lo = b->lo;
  int rows = lo->max_batch;
  float *x = malloc(sizeof(float) * (size_t)rows * lo->sizes[0]), *p = malloc(sizeof(float) * lo->nparams);
  float *g = malloc(sizeof(float) * lo->nparams);
  int32_t *y = malloc(sizeof(int32_t) * (size_t)rows);
  int rc = RLX_ERR_NOMEM;
  if (!x || !p || !g || !y)
    goto out;
  rlx__probe_batch(lo, rows, TIMING_SEED, x, y);
  rlx__layout_init_params(lo, TIMING_SEED, p);
  if ((rc = b->ops->set_params(b, p)) != RLX_OK)
    goto out;
  /* One step to warm up (first launches, page faults), then the best of a
   * few: the least disturbed by whatever else runs on the host. */
  double best = 0;
  for (int k = 0; k <= TIMED_STEPS; k++) {
    float loss;
    int ok;
    uint64_t t0 = rlx__now_ns();
    if ((rc = b->ops->grad(b, x, y, rows, g, &loss, &ok)) != RLX_OK ||
        (rc = b->ops->apply(b, g, 0.01f)) != RLX_OK)
      goto out;
    double t = (double)(rlx__now_ns() - t0) / 1e6;
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
