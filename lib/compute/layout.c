/* The MLP's shape: where each layer lives in the flat buffers, and the
 * seeded initialisation every backend starts from. */
#include <math.h>
#include <string.h>
#include "compute/backend.h"
#include "base/internal.h"

int rlx__layout_init(struct rlx__layout *lo, const rlx_model_desc_t *d) {
  if (!d || !d->sizes)
    return rlx__err(RLX_ERR_ARG, "model description or its sizes is NULL");
  if (d->nsizes < 2 || d->nsizes > RLX__MAX_LAYERS + 1)
    return rlx__err(RLX_ERR_ARG, "model has %d sizes; it takes 2 to %d (input, hidden..., classes)",
                    d->nsizes, RLX__MAX_LAYERS + 1);
  if (d->max_batch < 1 || d->max_batch > (1 << 20))
    return rlx__err(RLX_ERR_ARG, "max_batch %d out of range 1..1048576", d->max_batch);
  if (!(d->momentum >= 0.0f && d->momentum < 1.0f))
    return rlx__err(RLX_ERR_ARG, "momentum %g out of range [0, 1)", (double)d->momentum);
  memset(lo, 0, sizeof *lo);
  lo->nlayers = d->nsizes - 1;
  lo->max_batch = d->max_batch;
  for (int i = 0; i < d->nsizes; i++) {
    if (d->sizes[i] < 1 || d->sizes[i] > 65536)
      return rlx__err(RLX_ERR_ARG, "layer size %d (position %d) out of range 1..65536",
                      d->sizes[i], i);
    lo->sizes[i] = d->sizes[i];
    if (d->sizes[i] > lo->max_width)
      lo->max_width = d->sizes[i];
  }
  if (lo->sizes[lo->nlayers] < 2)
    return rlx__err(RLX_ERR_ARG, "a classifier needs at least 2 classes, not %d",
                    lo->sizes[lo->nlayers]);
  size_t off = 0;
  for (int l = 0; l < lo->nlayers; l++) {
    lo->w_off[l] = off;
    off += (size_t)lo->sizes[l] * (size_t)lo->sizes[l + 1];
    lo->b_off[l] = off;
    off += (size_t)lo->sizes[l + 1];
  }
  if (off > ((size_t)1 << 31))
    return rlx__err(RLX_ERR_ARG, "model has %zu parameters; at most 2^31", off);
  lo->nparams = off;
  return RLX_OK;
}

void rlx__layout_init_params(const struct rlx__layout *lo, uint64_t seed, float *p) {
  uint64_t s = seed ^ 0x6d6c7020696e6974ULL; /* "mlp init" */
  for (int l = 0; l < lo->nlayers; l++) {
    int in = lo->sizes[l], out = lo->sizes[l + 1];
    /* He-uniform keeps ReLU activations' variance; the output layer gets a
     * tenth of Glorot's bound so the first logits are small and the loss
     * starts near ln(classes), which validation relies on. */
    double bound = l + 1 < lo->nlayers ? sqrt(6.0 / in) : 0.1 * sqrt(6.0 / (in + out));
    float *w = p + lo->w_off[l];
    for (size_t i = 0; i < (size_t)in * out; i++)
      w[i] = (float)((2.0 * rlx__uniform(&s) - 1.0) * bound);
    memset(p + lo->b_off[l], 0, sizeof(float) * (size_t)out);
  }
}

void rlx__probe_batch(const struct rlx__layout *lo, int rows, uint64_t seed, float *x, int32_t *y) {
  int in = lo->sizes[0], classes = lo->sizes[lo->nlayers];
  for (size_t i = 0; i < (size_t)rows * in; i++)
    x[i] = (float)(2.0 * rlx__uniform(&seed) - 1.0);
  for (int r = 0; r < rows; r++)
    y[r] = r % classes;
}
