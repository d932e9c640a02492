/* Validation before trust: a backend must, on a fixed probe batch, give a
 * finite loss near ln(classes) and the same gradients, update and
 * evaluation as the C backend. A driver that compiles, reports success
 * and returns zeros (or garbage) stops here. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include "compute/backend.h"
#include "base/internal.h"

#define PROBE_SEED 0x70726f6265ULL /* "probe" */
#define PROBE_ROWS 64
#define REL_TOL 1e-3

/* The norm of a - r (infinite when a holds NaN or Inf) and of r. */
static void diff_norms(const float *a, const float *r, size_t n, double *dn, double *rn) {
  double d = 0, s = 0;
  for (size_t i = 0; i < n; i++) {
    double e = (double)a[i] - (double)r[i];
    d += e * e;
    s += (double)r[i] * r[i];
  }
  *dn = isfinite(d) ? sqrt(d) : INFINITY;
  *rn = sqrt(s);
}

/* Compare each layer's weights, then its biases; name the first that
 * differs. Bias gradients can be far smaller than the weights', so their
 * yardstick is their own norm or a thousandth of the weights', the larger. */
static int compare_flat(const struct rlx__layout *lo, const float *a, const float *r,
                        const char *what, char *why, size_t whylen) {
  for (int l = 0; l < lo->nlayers; l++) {
    size_t nw = lo->b_off[l] - lo->w_off[l], nb = (size_t)lo->sizes[l + 1];
    double dw, wn, db, bn;
    diff_norms(a + lo->w_off[l], r + lo->w_off[l], nw, &dw, &wn);
    diff_norms(a + lo->b_off[l], r + lo->b_off[l], nb, &db, &bn);
    if (wn == 0) {
      snprintf(why, whylen, "reference %s of layer %d is zero: the probe is degenerate", what,
               l + 1);
      return -1;
    }
    if (!(dw <= REL_TOL * wn)) {
      snprintf(why, whylen,
               "%s of layer %d weights differ from the C backend's by %.3g (relative, limit %g)",
               what, l + 1, dw / wn, REL_TOL);
      return -1;
    }
    double yard = bn > 1e-3 * wn ? bn : 1e-3 * wn;
    if (!(db <= REL_TOL * yard)) {
      snprintf(why, whylen,
               "%s of layer %d biases differ from the C backend's by %.3g (relative, limit %g)",
               what, l + 1, db / yard, REL_TOL);
      return -1;
    }
  }
  return 0;
}

int rlx__validate(struct rlx__backend *b, char *why, size_t whylen) {
  const struct rlx__layout *lo = b->lo;
  int rows = lo->max_batch < PROBE_ROWS ? lo->max_batch : PROBE_ROWS;
  int in = lo->sizes[0], classes = lo->sizes[lo->nlayers];
  size_t n = lo->nparams;
  struct rlx__backend *ref = NULL;
  float *x = malloc(sizeof(float) * (size_t)rows * in);
  int32_t *y = malloc(sizeof(int32_t) * rows);
  float *p = malloc(sizeof(float) * n), *g = malloc(sizeof(float) * n);
  float *gr = malloc(sizeof(float) * n), *pr = malloc(sizeof(float) * n);
  int rc = RLX_ERR_NOMEM;
  snprintf(why, whylen, "out of memory for validation");
  if (!x || !y || !p || !g || !gr || !pr)
    goto out;
  if ((rc = rlx__cpu_create(lo, b->momentum, &ref)) != RLX_OK)
    goto out;
  rlx__probe_batch(lo, rows, PROBE_SEED, x, y);
  rlx__layout_init_params(lo, PROBE_SEED, p);

  rc = RLX_ERR_DEVICE;
  float loss = NAN, lref = 0;
  int ok = 0, okref = 0;
  if (b->ops->set_params(b, p) != RLX_OK || b->ops->grad(b, x, y, rows, g, &loss, &ok) != RLX_OK) {
    snprintf(why, whylen, "probe step failed: %s", rlx_errmsg());
    goto out;
  }
  ref->ops->set_params(ref, p);
  ref->ops->grad(ref, x, y, rows, gr, &lref, &okref);
  double lnc = log((double)classes);
  if (!isfinite(loss) || loss == 0.0f || fabs(loss - lnc) > 0.5 * lnc) {
    snprintf(why, whylen, "probe loss %g is not finite and near ln(%d) = %.3f", (double)loss,
             classes, lnc);
    goto out;
  }
  if (fabs((double)loss - lref) > REL_TOL * fabs((double)lref)) {
    snprintf(why, whylen, "probe loss %.6f differs from the C backend's %.6f", (double)loss,
             (double)lref);
    goto out;
  }
  if (compare_flat(lo, g, gr, "gradient", why, whylen))
    goto out;
  /* One update and one evaluation must agree too. */
  double es = 0, esr = 0;
  long ec = 0, ecr = 0;
  if (b->ops->apply(b, gr, 0.5f) != RLX_OK || b->ops->get_params(b, p) != RLX_OK ||
      b->ops->eval(b, x, y, rows, &es, &ec) != RLX_OK) {
    snprintf(why, whylen, "probe update failed: %s", rlx_errmsg());
    goto out;
  }
  ref->ops->apply(ref, gr, 0.5f);
  ref->ops->get_params(ref, pr);
  ref->ops->eval(ref, x, y, rows, &esr, &ecr);
  if (compare_flat(lo, p, pr, "updated parameters", why, whylen))
    goto out;
  if (!isfinite(es) || fabs(es - esr) > REL_TOL * fabs(esr) + 1e-6) {
    snprintf(why, whylen, "probe evaluation loss %g differs from the C backend's %g", es, esr);
    goto out;
  }
  rc = RLX_OK;
  why[0] = '\0';
out:
  if (ref)
    ref->ops->destroy(ref);
  free(x);
  free(y);
  free(p);
  free(g);
  free(gr);
  free(pr);
  return rc;
}
