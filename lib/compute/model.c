/* The public model API: choose a backend (RLX_DEVICE), prove it, fall back
 * to C with the reason kept, and pass calls through after checking them. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "compute/backend.h"
#include "base/half.h"
#include "base/internal.h"

struct rlx_model {
  struct rlx__layout lo;
  struct rlx__backend *be;
  float *in_buf, *grad_buf;   /* rlx_model_input_buffer / _grad_buffer */
  float *in_buf2;             /* rlx_model_next_input_buffer */
  float *grad16_buf;          /* rlx_model_grad16_buffer (np 16-bit values) */
  char fallback[1400];
  struct {                    /* rlx_model_data_attach */
    size_t count, norder;     /* examples kept; positions of the epoch's order given */
    int batch;                /* rows of the batch gathered last, 0: none */
  } data;
  double tot_loss;            /* rlx_model_totals, where the backend keeps none */
  long tot_correct;
};

/* Steps given loss and correct NULL add them to the run's totals
 * (rlx_model_totals): on the device where the backend keeps them, else
 * here, from the step's own. */
struct tally {
  float loss;
  int correct, here;
};
static void tally_begin(const rlx_model_t *m, float **loss, int **correct, struct tally *t) {
  t->here = *loss == NULL && *correct == NULL && m->be->ops->totals == NULL;
  if (t->here) {
    *loss = &t->loss;
    *correct = &t->correct;
  }
}
static int tally_end(rlx_model_t *m, int rc, int batch, const struct tally *t) {
  if (rc == RLX_OK && t->here) {
    m->tot_loss += (double)t->loss * batch;
    m->tot_correct += t->correct;
  }
  return rc;
}

static int local_rank_of(const rlx_model_desc_t *d) {
  if (d->local_rank >= 0)
    return d->local_rank;
  long v;
  const char *e = getenv("RLX_LOCAL_RANK");
  return e && rlx__parse_long(e, 0, 1 << 20, &v) == RLX_OK ? (int)v : 0;
}

/* Try OpenCL; on any failure leave b NULL and say why in m->fallback,
 * followed by then (what happens instead). */
static void try_opencl(rlx_model_t *m, const rlx_model_desc_t *d, int index, const char *then) {
  char why[400];
  struct rlx__backend *b = NULL;
  if (rlx__opencl_create(&m->lo, d->momentum, index, local_rank_of(d), &b, why, sizeof why) !=
      RLX_OK) {
    snprintf(m->fallback, sizeof m->fallback, "opencl: %s%s", why, then);
    return;
  }
  if (rlx__validate(b, why, sizeof why) != RLX_OK) {
    snprintf(m->fallback, sizeof m->fallback, "%s: validation failed: %s%s", b->name, why, then);
    b->ops->destroy(b);
    return;
  }
  m->be = b;
}

/* auto: a device that passed validation is kept only when its step is
 * faster than the C backend's, measured here on this host (an OpenCL CPU
 * device such as PoCL's, sharing the cores with OpenBLAS, usually is not).
 * Either way the reason is kept: in m->fallback when C wins, in the log
 * when the device does. */
static void keep_faster(rlx_model_t *m, const rlx_model_desc_t *d) {
  struct rlx__backend *c = NULL;
  double dev_ms, cpu_ms;
  if (rlx__step_time(m->be, &dev_ms) != RLX_OK) {
    snprintf(m->fallback, sizeof m->fallback, "%s: timed step failed: %s — using cpu",
             m->be->name, rlx_errmsg());
    m->be->ops->destroy(m->be);
    m->be = NULL;
    return;
  }
  if (rlx__cpu_create(&m->lo, d->momentum, &c) != RLX_OK)
    return; /* no C backend to compare with: keep the device */
  if (rlx__step_time(c, &cpu_ms) != RLX_OK) {
    c->ops->destroy(c);
    return;
  }
  int device_wins = dev_ms <= cpu_ms;
  struct rlx__backend *win = device_wins ? m->be : c, *lose = device_wins ? c : m->be;
  char why[400];
  snprintf(why, sizeof why, "%.3g ms per step on %s against %.3g ms on %s",
           device_wins ? dev_ms : cpu_ms, win->name, device_wins ? cpu_ms : dev_ms, lose->name);
  if (device_wins) {
    c->ops->destroy(c);
    rlx__info("compute: auto keeps the device: %s", why);
    return;
  }
  snprintf(m->fallback, sizeof m->fallback, "auto: %s — using cpu%s%s", why,
           m->be->note[0] ? "; " : "", m->be->note);
  m->be->ops->destroy(m->be);
  m->be = c;
}

int rlx_model_create(const rlx_model_desc_t *d, rlx_model_t **out) {
  if (!out)
    return rlx__err(RLX_ERR_ARG, "rlx_model_create: out is NULL");
  *out = NULL;
  if (rlx__log_level == RLX__LOG_OFF) /* usable without rlx_init */
    rlx__log_level_from_env();
  struct rlx__device_choice dc;
  const char *dev = d && d->device ? d->device : getenv("RLX_DEVICE");
  rlx_model_t *m = calloc(1, sizeof *m);
  if (!m)
    return rlx__err(RLX_ERR_NOMEM, "out of memory for the model");
  int rc = rlx__layout_init(&m->lo, d);
  if (rc == RLX_OK)
    rc = rlx__device_parse(dev, &dc);
  if (rc != RLX_OK) {
    free(m);
    return rc;
  }
  /* asked for a GPU: no quiet fallback */
  if (dc.kind != RLX__DEV_CPU)
    try_opencl(m, d, dc.index, dc.kind == RLX__DEV_GPU ? "" : " — using cpu");
  if (dc.kind == RLX__DEV_GPU && !m->be) {
    rc = rlx__err(RLX_ERR_DEVICE, "device gpu: %s", m->fallback);
    free(m);
    return rc;
  }
  if (m->be && dc.kind == RLX__DEV_AUTO)
    keep_faster(m, d);
  if (!m->be && (rc = rlx__cpu_create(&m->lo, d->momentum, &m->be)) != RLX_OK) {
    free(m);
    return rc;
  }
  if (!m->fallback[0] && m->be->note[0]) /* on a device, but not the GPU there may be */
    snprintf(m->fallback, sizeof m->fallback, "%s", m->be->note);
  if (m->fallback[0])
    rlx__info("compute: %s", m->fallback);
  size_t nparams = m->lo.nparams;
  float *p = rlx__fault_compute("nomem") ? NULL : malloc(sizeof(float) * nparams);
  if (!p) { /* (m is gone after rlx_model_free: the count is read before) */
    rlx_model_free(&m);
    return rlx__err(RLX_ERR_NOMEM, "out of memory for %zu parameters", nparams);
  }
  rlx__layout_init_params(&m->lo, d->seed, p);
  rc = m->be->ops->set_params(m->be, p);
  free(p);
  if (rc != RLX_OK) {
    rlx_model_free(&m);
    return rc;
  }
  rlx__info("compute: model of %zu parameters on %s", m->lo.nparams, m->be->name);
  *out = m;
  return RLX_OK;
}

static float *host_alloc(rlx_model_t *m, size_t n) {
  float *p = m->be->ops->host_alloc ? m->be->ops->host_alloc(m->be, n) : NULL;
  if (!p && posix_memalign((void **)&p, 64, n * sizeof(float)) != 0)
    p = NULL;
  return p;
}

static void host_free(rlx_model_t *m, float *p) {
  if (!(p && m->be->ops->host_free && m->be->ops->host_free(m->be, p)))
    free(p);
}

float *rlx_model_input_buffer(rlx_model_t *m) {
  if (m && !m->in_buf)
    m->in_buf = host_alloc(m, (size_t)m->lo.max_batch * m->lo.sizes[0]);
  return m ? m->in_buf : NULL;
}

float *rlx_model_next_input_buffer(rlx_model_t *m) {
  if (m && !m->in_buf2)
    m->in_buf2 = host_alloc(m, (size_t)m->lo.max_batch * m->lo.sizes[0]);
  return m ? m->in_buf2 : NULL;
}

float *rlx_model_grad_buffer(rlx_model_t *m) {
  if (m && !m->grad_buf && (m->grad_buf = host_alloc(m, m->lo.nparams + RLX_MODEL_GRAD_SPARE)))
    m->be->own_grad = m->grad_buf;
  return m ? m->grad_buf : NULL;
}

uint16_t *rlx_model_grad16_buffer(rlx_model_t *m) {
  if (m && !m->grad16_buf)
    m->grad16_buf = host_alloc(m, (m->lo.nparams + 1) / 2);
  return m ? (uint16_t *)m->grad16_buf : NULL;
}

int rlx_model_free(rlx_model_t **mp) {
  if (!mp)
    return rlx__err(RLX_ERR_ARG, "rlx_model_free: NULL");
  if (*mp) {
    host_free(*mp, (*mp)->in_buf);
    host_free(*mp, (*mp)->in_buf2);
    host_free(*mp, (*mp)->grad_buf);
    host_free(*mp, (*mp)->grad16_buf);
    if ((*mp)->be)
      (*mp)->be->ops->destroy((*mp)->be);
    free(*mp);
    *mp = NULL;
  }
  return RLX_OK;
}

size_t rlx_model_nparams(const rlx_model_t *m) { return m ? m->lo.nparams : 0; }
const char *rlx_model_backend(const rlx_model_t *m) { return m ? m->be->name : NULL; }
const char *rlx_model_fallback(const rlx_model_t *m) {
  return m && m->fallback[0] ? m->fallback : NULL;
}

int rlx_model_get_params(rlx_model_t *m, float *p) {
  if (!m || !p)
    return rlx__err(RLX_ERR_ARG, "rlx_model_get_params: NULL argument");
  return m->be->ops->get_params(m->be, p);
}

int rlx_model_set_params(rlx_model_t *m, const float *p) {
  if (!m || !p)
    return rlx__err(RLX_ERR_ARG, "rlx_model_set_params: NULL argument");
  return m->be->ops->set_params(m->be, p);
}

float *rlx_model_params_buffer(rlx_model_t *m) {
  return m && m->be->ops->host_state ? m->be->ops->host_state(m->be, 0) : NULL;
}

float *rlx_model_momentum_buffer(rlx_model_t *m) {
  return m && m->be->ops->host_state ? m->be->ops->host_state(m->be, 1) : NULL;
}

int rlx_model_get_momentum(rlx_model_t *m, float *v) {
  if (!m || !v)
    return rlx__err(RLX_ERR_ARG, "rlx_model_get_momentum: NULL argument");
  return m->be->ops->velocity(m->be, v, 0);
}

int rlx_model_set_momentum(rlx_model_t *m, const float *v) {
  if (!m || !v)
    return rlx__err(RLX_ERR_ARG, "rlx_model_set_momentum: NULL argument");
  return m->be->ops->velocity(m->be, (float *)v, 1);
}

/* Every label is checked before a kernel indexes with it. */
static int check_batch(const rlx_model_t *m, const char *fn, const float *x, const int32_t *y,
                       int batch) {
  if (m && !x && !y && batch > 0 && batch == m->data.batch)
    return RLX_OK; /* gathered by rlx_model_data_batch (its labels checked at attach) */
  if (m && !x && !y)
    return rlx__err(RLX_ERR_ARG, "%s: x and labels NULL, but no batch of %d rows was gathered "
                    "(rlx_model_data_batch)", fn, batch);
  if (!m || !x || !y)
    return rlx__err(RLX_ERR_ARG, "%s: NULL argument", fn);
  if (batch < 1 || batch > m->lo.max_batch)
    return rlx__err(RLX_ERR_ARG, "%s: batch %d out of range 1..%d (max_batch)", fn, batch,
                    m->lo.max_batch);
  int classes = m->lo.sizes[m->lo.nlayers];
  for (int r = 0; r < batch; r++)
    if (y[r] < 0 || y[r] >= classes)
      return rlx__err(RLX_ERR_ARG, "%s: label %d of row %d is not a class 0..%d", fn, (int)y[r],
                      r, classes - 1);
  return RLX_OK;
}

int rlx_model_grad(rlx_model_t *m, const float *x, const int32_t *y, int batch, float *g,
                   float *loss, int *correct) {
  int rc = check_batch(m, "rlx_model_grad", x, y, batch);
  if (rc != RLX_OK)
    return rc;
  if (!g)
    return rlx__err(RLX_ERR_ARG, "rlx_model_grad: grad is NULL");
  struct tally t;
  tally_begin(m, &loss, &correct, &t);
  return tally_end(m, m->be->ops->grad(m->be, x, y, batch, g, loss, correct), batch, &t);
}

int rlx_model_apply(rlx_model_t *m, const float *g, float lr) {
  if (!m || !g)
    return rlx__err(RLX_ERR_ARG, "rlx_model_apply: NULL argument");
  if (!(lr >= 0.0f && lr < 1e6f))
    return rlx__err(RLX_ERR_ARG, "rlx_model_apply: learning rate %g out of range [0, 1e6)",
                    (double)lr);
  return m->be->ops->apply(m->be, g, lr);
}

/* Buckets of whole layers, from the last: layer l holds g[w_off[l],
 * b_off[l] + width) and layers lie in order, so a bucket is one range. */
struct buckets {
  const struct rlx__layout *lo;
  size_t min, start;
  int top; /* the highest layer of the bucket being filled, -1: none */
  rlx_grad_ready_fn ready;
  void *arg;
};

static int layer_done(int l, void *arg) {
  struct buckets *k = arg;
  const struct rlx__layout *lo = k->lo;
  if (k->top < 0)
    k->top = l;
  size_t end = lo->b_off[k->top] + (size_t)lo->sizes[k->top + 1];
  if (end - lo->w_off[l] < k->min && l > 0)
    return 0; /* not full yet */
  k->top = -1;
  return k->ready(lo->w_off[l], end - lo->w_off[l], k->arg);
}

int rlx_model_grad_buckets(rlx_model_t *m, const float *x, const int32_t *y, int batch, float *g,
                           size_t bucket_floats, rlx_grad_ready_fn ready, void *arg,
                           float *loss, int *correct) {
  int rc = check_batch(m, "rlx_model_grad_buckets", x, y, batch);
  if (rc != RLX_OK)
    return rc;
  if (!g || !ready)
    return rlx__err(RLX_ERR_ARG, "rlx_model_grad_buckets: %s is NULL", g ? "ready" : "grad");
  struct buckets k = {&m->lo, bucket_floats, 0, -1, ready, arg};
  struct tally t;
  tally_begin(m, &loss, &correct, &t);
  if (m->be->ops->grad_layers)
    return tally_end(m, m->be->ops->grad_layers(m->be, x, y, batch, g, layer_done, &k, loss,
                                                correct), batch, &t);
  if ((rc = tally_end(m, m->be->ops->grad(m->be, x, y, batch, g, loss, correct), batch, &t)) !=
      RLX_OK)
    return rc;
  for (int l = m->lo.nlayers - 1; l >= 0; l--)
    if ((rc = layer_done(l, &k)) != 0)
      return rc;
  return RLX_OK;
}

int rlx_model_apply_range(rlx_model_t *m, const float *g, size_t off, size_t n, float lr) {
  if (!m || !g)
    return rlx__err(RLX_ERR_ARG, "rlx_model_apply_range: NULL argument");
  if (off > m->lo.nparams || n > m->lo.nparams - off)
    return rlx__err(RLX_ERR_ARG, "rlx_model_apply_range: [%zu, %zu) is outside the %zu parameters",
                    off, off + n, m->lo.nparams);
  if (!(lr >= 0.0f && lr < 1e6f))
    return rlx__err(RLX_ERR_ARG, "rlx_model_apply_range: learning rate %g out of range [0, 1e6)",
                    (double)lr);
  if (n == 0)
    return RLX_OK;
  return m->be->ops->apply_range(m->be, g, off, n, lr);
}

int rlx_model_grad_half(rlx_model_t *m, const float *x, const int32_t *y, int batch,
                        uint16_t *g, int bf16, float *loss, int *correct) {
  int rc = check_batch(m, "rlx_model_grad_half", x, y, batch);
  if (rc != RLX_OK)
    return rc;
  if (!g)
    return rlx__err(RLX_ERR_ARG, "rlx_model_grad_half: grad is NULL");
  struct tally t;
  tally_begin(m, &loss, &correct, &t);
  if (m->be->ops->grad_half)
    return tally_end(m, m->be->ops->grad_half(m->be, x, y, batch, g, bf16, loss, correct), batch,
                     &t);
  float *f = rlx_model_grad_buffer(m);
  if (!f)
    return rlx__err(RLX_ERR_NOMEM, "rlx_model_grad_half: no memory for the gradient");
  if ((rc = tally_end(m, m->be->ops->grad(m->be, x, y, batch, f, loss, correct), batch, &t)) !=
      RLX_OK)
    return rc;
  (bf16 ? rlx__f32_to_bf16_n : rlx__f32_to_f16_n)(g, f, m->lo.nparams);
  return RLX_OK;
}

int rlx_model_apply_half(rlx_model_t *m, const uint16_t *g, int bf16, float lr) {
  if (!m || !g)
    return rlx__err(RLX_ERR_ARG, "rlx_model_apply_half: NULL argument");
  if (!(lr >= 0.0f && lr < 1e6f))
    return rlx__err(RLX_ERR_ARG, "rlx_model_apply_half: learning rate %g out of range [0, 1e6)",
                    (double)lr);
  if (m->be->ops->apply_half)
    return m->be->ops->apply_half(m->be, g, bf16, lr);
  float *f = rlx_model_grad_buffer(m);
  if (!f)
    return rlx__err(RLX_ERR_NOMEM, "rlx_model_apply_half: no memory for the gradient");
  (bf16 ? rlx__bf16_to_f32_n : rlx__f16_to_f32_n)(f, g, m->lo.nparams);
  return m->be->ops->apply(m->be, f, lr);
}

int rlx_model_step(rlx_model_t *m, const float *x, const int32_t *y, int batch, float lr,
                   float *loss, int *correct) {
  int rc = check_batch(m, "rlx_model_step", x, y, batch);
  if (rc != RLX_OK)
    return rc;
  if (!(lr >= 0.0f && lr < 1e6f))
    return rlx__err(RLX_ERR_ARG, "rlx_model_step: learning rate %g out of range [0, 1e6)",
                    (double)lr);
  struct tally t;
  tally_begin(m, &loss, &correct, &t);
  if (m->be->ops->step)
    return tally_end(m, m->be->ops->step(m->be, x, y, batch, lr, loss, correct), batch, &t);
  float *g = rlx_model_grad_buffer(m);
  if (!g)
    return rlx__err(RLX_ERR_NOMEM, "rlx_model_step: no memory for the gradient");
  if ((rc = tally_end(m, m->be->ops->grad(m->be, x, y, batch, g, loss, correct), batch, &t)) !=
      RLX_OK)
    return rc;
  return m->be->ops->apply(m->be, g, lr);
}

int rlx_model_share_key(rlx_model_t *m, uint64_t *key) {
  if (!m || !key)
    return rlx__err(RLX_ERR_ARG, "rlx_model_share_key: NULL argument");
  *key = m->be->share_key ? m->be->share_key : (uint64_t)getpid() << 8 | 0xff;
  return RLX_OK;
}

int rlx_model_step_shared(rlx_model_t *m, const float *x, const int32_t *y, int batch, int index,
                          int members, float lr, float *loss, int *correct) {
  int rc = check_batch(m, "rlx_model_step_shared", x, y, batch);
  if (rc != RLX_OK)
    return rc;
  if (members < 1 || members > 64 || index < 0 || index >= members)
    return rlx__err(RLX_ERR_ARG, "rlx_model_step_shared: index %d of %d members (1..64)", index,
                    members);
  if (!m->be->ops->step_shared)
    return rlx__err(RLX_ERR_STATE, "rlx_model_step_shared: %s computes in no context shared "
                    "with other ranks (RLX_DEVICE_SHARE=1, an OpenCL device)", m->be->name);
  struct tally t;
  tally_begin(m, &loss, &correct, &t);
  return tally_end(m, m->be->ops->step_shared(m->be, x, y, batch, index, members, lr, loss,
                                              correct), batch, &t);
}

int rlx_model_prefetch(rlx_model_t *m, const float *x, const int32_t *y, int batch) {
  if (m && !x && !y)
    return m->be->ops->prefetch ? m->be->ops->prefetch(m->be, NULL, NULL, 0) : RLX_OK;
  int rc = check_batch(m, "rlx_model_prefetch", x, y, batch);
  if (rc != RLX_OK)
    return rc;
  return m->be->ops->prefetch ? m->be->ops->prefetch(m->be, x, y, batch) : RLX_OK;
}

int rlx_model_eval(rlx_model_t *m, const float *x, const int32_t *y, int batch,
                   double *loss_sum, long *correct) {
  int rc = check_batch(m, "rlx_model_eval", x, y, batch);
  if (rc != RLX_OK)
    return rc;
  if (!loss_sum || !correct)
    return rlx__err(RLX_ERR_ARG, "rlx_model_eval: loss_sum or correct is NULL");
  return m->be->ops->eval(m->be, x, y, batch, loss_sum, correct);
}

/* ---- the training set where the model computes ------------------------- */

int rlx_model_data_attach(rlx_model_t *m, const rlx_dataset_t *d, size_t count) {
  if (!m || !d)
    return rlx__err(RLX_ERR_ARG, "rlx_model_data_attach: NULL argument");
  if (count == 0 || count > d->count || count > UINT32_MAX)
    return rlx__err(RLX_ERR_ARG, "rlx_model_data_attach: %zu examples of the %zu there", count,
                    d->count);
  if (d->dim != m->lo.sizes[0])
    return rlx__err(RLX_ERR_ARG, "rlx_model_data_attach: images of %d values, the model takes %d",
                    d->dim, m->lo.sizes[0]);
  int classes = m->lo.sizes[m->lo.nlayers];
  for (size_t i = 0; i < count; i++)
    if (d->labels[i] >= classes)
      return rlx__err(RLX_ERR_ARG, "rlx_model_data_attach: label %d of example %zu is not a class "
                      "0..%d", d->labels[i], i, classes - 1);
  if (!m->be->ops->data_attach)
    return rlx__err(RLX_ERR_STATE, "rlx_model_data_attach: %s computes from host memory: the "
                    "training set stays there (rlx_dataset_batch)", m->be->name);
  long limit = 0;
  const char *e = getenv("RLX_DEVICE_DATA_MAX");
  if (e && *e && rlx__parse_long(e, 0, LONG_MAX, &limit) != RLX_OK)
    return rlx__err(RLX_ERR_ARG, "RLX_DEVICE_DATA_MAX=\"%.40s\": expected a number of bytes", e);
  if (e && *e && limit == 0)
    return rlx__err(RLX_ERR_NOMEM, "rlx_model_data_attach: RLX_DEVICE_DATA_MAX=0 keeps the "
                    "training set on the host");
  float lut[256];
  for (int v = 0; v < 256; v++)
    lut[v] = rlx__pixel((uint8_t)v);
  int rc = m->be->ops->data_attach(m->be, d->pixels, d->labels, count, lut, (size_t)limit);
  if (rc == RLX_OK) {
    m->data.count = count;
    m->data.norder = 0;
    m->data.batch = 0;
  }
  return rc;
}

int rlx_model_data_order(rlx_model_t *m, const uint32_t *order, size_t n) {
  if (!m || !order)
    return rlx__err(RLX_ERR_ARG, "rlx_model_data_order: NULL argument");
  if (m->data.count == 0)
    return rlx__err(RLX_ERR_STATE, "rlx_model_data_order: no training set attached "
                    "(rlx_model_data_attach)");
  if (n == 0 || n > m->data.count)
    return rlx__err(RLX_ERR_ARG, "rlx_model_data_order: %zu positions for %zu examples", n,
                    m->data.count);
  for (size_t i = 0; i < n; i++)
    if (order[i] >= m->data.count)
      return rlx__err(RLX_ERR_ARG, "rlx_model_data_order: position %zu names example %u of %zu",
                      i, order[i], m->data.count);
  int rc = m->be->ops->data_order(m->be, order, n);
  m->data.norder = rc == RLX_OK ? n : 0;
  m->data.batch = 0;
  return rc;
}

int rlx_model_data_batch(rlx_model_t *m, size_t first, size_t stride, int batch) {
  if (!m)
    return rlx__err(RLX_ERR_ARG, "rlx_model_data_batch: NULL model");
  if (m->data.norder == 0)
    return rlx__err(RLX_ERR_STATE, "rlx_model_data_batch: no order given (rlx_model_data_order)");
  if (batch < 1 || batch > m->lo.max_batch)
    return rlx__err(RLX_ERR_ARG, "rlx_model_data_batch: batch %d out of range 1..%d (max_batch)",
                    batch, m->lo.max_batch);
  size_t n = m->data.norder;
  if (first >= n || (batch > 1 && (stride == 0 || (n - 1 - first) / stride < (size_t)batch - 1)))
    return rlx__err(RLX_ERR_ARG, "rlx_model_data_batch: %d positions from %zu by %zu run past "
                    "the order's %zu", batch, first, stride, n);
  m->data.batch = 0;
  int rc = m->be->ops->data_batch(m->be, first, stride, batch);
  if (rc == RLX_OK)
    m->data.batch = batch;
  return rc;
}

int rlx_model_totals(rlx_model_t *m, double *loss_sum, long *correct) {
  if (!m || !loss_sum || !correct)
    return rlx__err(RLX_ERR_ARG, "rlx_model_totals: NULL argument");
  if (m->be->ops->totals)
    return m->be->ops->totals(m->be, loss_sum, correct);
  *loss_sum = m->tot_loss;
  *correct = m->tot_correct;
  m->tot_loss = 0;
  m->tot_correct = 0;
  return RLX_OK;
}
