/* The compute layer: C gradients against finite differences, OpenCL (PoCL
 * in CI) against C on awkward shapes, the validation's verdicts, device
 * strings, and GPU placement. */
#include <check.h>
#include "suite.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>
#include "compute/backend.h"
#include "compute/share.h"
#include "base/half.h"
#include "compute/cl_context.h"
#include "compute/cl_devices.h"
#include "compute/gemm_shape.h"
#include "base/internal.h"

static void fill(float *v, size_t n, uint64_t seed, double scale) {
  uint64_t s = seed;
  for (size_t i = 0; i < n; i++)
    v[i] = (float)((2 * rlx__uniform(&s) - 1) * scale);
}

static double rel(const float *a, const float *b, size_t n) {
  double d = 0, s = 0;
  for (size_t i = 0; i < n; i++) {
    d += ((double)a[i] - b[i]) * ((double)a[i] - b[i]);
    s += (double)b[i] * b[i];
  }
  return s > 0 ? sqrt(d / s) : sqrt(d);
}

static rlx_model_t *make(const int *sizes, int ns, int max_batch, const char *dev, float mom) {
  rlx_model_desc_t d = {.nsizes = ns, .sizes = sizes, .max_batch = max_batch, .seed = 7,
                        .momentum = mom, .device = dev, .local_rank = 0};
  rlx_model_t *m = NULL;
  int rc = rlx_model_create(&d, &m);
  ck_assert_msg(rc == RLX_OK, "rlx_model_create(%s): %s", dev, rlx_errmsg());
  return m;
}

/* Models on devs[d] ("cpu", "opencl"; b NULL: one), momentum 0.9; 0
 * when devs[d] is OpenCL and there is none here (nothing made). */
static int models_on(const char *dev, const int *sizes, int ns, int batch, rlx_model_t **a,
                     rlx_model_t **b) {
  *a = make(sizes, ns, batch, dev, 0.9f);
  if (b)
    *b = make(sizes, ns, batch, dev, 0.9f);
  if (strcmp(dev, "opencl") == 0 && strncmp(rlx_model_backend(*a), "opencl", 6) != 0) {
    rlx_model_free(a);
    if (b)
      rlx_model_free(b);
    return 0;
  }
  return 1;
}

/* Two fresh models alike on a backend (0 without OpenCL), a gradient
 * buffer, and room for each one's parameters: tests that take the same
 * steps two ways, then compare. */
struct twins {
  rlx_model_t *a, *b;
  size_t n;
  float *g, *pa, *pb;
};

static int twins_on(const char *dev, const int *sizes, int ns, int batch, struct twins *t) {
  if (!models_on(dev, sizes, ns, batch, &t->a, &t->b))
    return 0;
  t->n = rlx_model_nparams(t->a);
  t->g = malloc(t->n * sizeof *t->g);
  t->pa = malloc(t->n * sizeof *t->pa);
  t->pb = malloc(t->n * sizeof *t->pb);
  ck_assert(t->g && t->pa && t->pb);
  return 1;
}

/* Both models' parameters, into pa and pb. */
static void twins_params(struct twins *t) {
  ck_assert_int_eq(rlx_model_get_params(t->a, t->pa), RLX_OK);
  ck_assert_int_eq(rlx_model_get_params(t->b, t->pb), RLX_OK);
}

static void twins_free(struct twins *t) {
  free(t->g);
  free(t->pa);
  free(t->pb);
  rlx_model_free(&t->a);
  rlx_model_free(&t->b);
}

static double mean_loss(rlx_model_t *m, const float *x, const int32_t *y, int b) {
  double s = 0;
  long ok = 0;
  ck_assert_int_eq(rlx_model_eval(m, x, y, b, &s, &ok), RLX_OK);
  return s / b;
}

/* Central differences on every parameter of a small net. */
START_TEST(cpu_gradient_matches_finite_differences) {
  const int sizes[] = {6, 5, 4, 3};
  const int B = 5;
  rlx_model_t *m = make(sizes, 4, B, "cpu", 0);
  size_t n = rlx_model_nparams(m);
  ck_assert_uint_eq(n, 6 * 5 + 5 + 5 * 4 + 4 + 4 * 3 + 3);
  float *p = malloc(n * sizeof *p), *g = malloc(n * sizeof *g), *fd = malloc(n * sizeof *fd);
  float x[5 * 6];
  int32_t y[5] = {0, 1, 2, 1, 0};
  fill(x, sizeof x / sizeof *x, 1, 1.0);
  fill(p, n, 2, 0.8);
  ck_assert_int_eq(rlx_model_set_params(m, p), RLX_OK);
  float loss;
  ck_assert_int_eq(rlx_model_grad(m, x, y, B, g, &loss, NULL), RLX_OK);
  ck_assert(fabs(loss - mean_loss(m, x, y, B)) < 1e-6);
  const float eps = 1e-2f;
  for (size_t i = 0; i < n; i++) {
    float keep = p[i];
    p[i] = keep + eps;
    rlx_model_set_params(m, p);
    double up = mean_loss(m, x, y, B);
    p[i] = keep - eps;
    rlx_model_set_params(m, p);
    double down = mean_loss(m, x, y, B);
    p[i] = keep;
    fd[i] = (float)((up - down) / (2 * eps));
  }
  double r = rel(g, fd, n);
  ck_assert_msg(r < 1e-3, "gradient differs from finite differences by %g (relative)", r);
  free(p);
  free(g);
  free(fd);
  rlx_model_free(&m);
}
END_TEST

/* OpenCL against C: shapes and batches that are no multiple of any tile,
 * then seeded random ones; the matrix products by gemm_tiles and by
 * CLBlast (RLX_GEMM; auto: CLBlast on PoCL's CPU device). */
static void awkward_shapes(const char *gemm) {
  setenv("RLX_GEMM", gemm, 1);
  int shapes[8][5] = {{3, 13, 37, 5, 0}, {4, 100, 65, 33, 7}, {3, 784, 129, 10, 0},
                      {2, 3, 2, 0, 0}};
  uint64_t rng = 2026;
  for (int s = 4; s < 8; s++) {
    shapes[s][0] = 2 + (int)(rlx__uniform(&rng) * 3);
    for (int i = 1; i <= shapes[s][0]; i++)
      shapes[s][i] = 1 + (int)(rlx__uniform(&rng) * 300);
    if (shapes[s][shapes[s][0]] < 2)
      shapes[s][shapes[s][0]] = 2;
  }
  /* (257 rows: wgrad_tiles splits the rows of a layer with few tiles) */
  static const int batches[] = {1, 7, 33, 100, 257};
  for (size_t s = 0; s < sizeof shapes / sizeof *shapes; s++) {
    int ns = shapes[s][0];
    const int *sizes = shapes[s] + 1;
    rlx_model_t *c = make(sizes, ns, 257, "cpu", 0.9f), *o = make(sizes, ns, 257, "opencl", 0.9f);
    ck_assert_msg(!strncmp(rlx_model_backend(o), "opencl", 6) && !rlx_model_fallback(o),
                  "RLX_GEMM=%s: OpenCL not in use: %s", gemm,
                  rlx_model_fallback(o) ? rlx_model_fallback(o) : "?");
    size_t n = rlx_model_nparams(c);
    float *p = malloc(n * 4), *gc = malloc(n * 4), *go = malloc(n * 4), *pc = malloc(n * 4),
          *po = malloc(n * 4);
    float *x = malloc(sizeof(float) * 257 * sizes[0]);
    int32_t y[257];
    fill(p, n, 10 + s, 0.3);
    ck_assert_int_eq(rlx_model_set_params(c, p), RLX_OK);
    ck_assert_int_eq(rlx_model_set_params(o, p), RLX_OK);
    for (size_t b = 0; b < sizeof batches / sizeof *batches; b++) {
      int B = batches[b];
      fill(x, (size_t)B * sizes[0], 100 + b, 1.5);
      for (int r = 0; r < B; r++)
        y[r] = (r * 7 + (int)b) % sizes[ns - 1];
      float lc, lo;
      int kc, ko;
      ck_assert_int_eq(rlx_model_grad(c, x, y, B, gc, &lc, &kc), RLX_OK);
      ck_assert_int_eq(rlx_model_grad(o, x, y, B, go, &lo, &ko), RLX_OK);
      double r = rel(go, gc, n);
      const char *gs = getenv("RLX_GEMM_SHAPE");
      ck_assert_msg(r < 1e-4, "RLX_GEMM=%s RLX_GEMM_SHAPE=%s model %zu batch %d: gradients differ by %g",
                    gemm, gs ? gs : "", s, B, r);
      ck_assert_msg(fabs(lc - lo) < 1e-4 * fabs(lc), "loss %g vs %g", lc, lo);
      ck_assert_int_eq(kc, ko);
      ck_assert_int_eq(rlx_model_apply(c, gc, 0.1f), RLX_OK);
      ck_assert_int_eq(rlx_model_apply(o, gc, 0.1f), RLX_OK);
      rlx_model_get_params(c, pc);
      rlx_model_get_params(o, po);
      ck_assert_msg(rel(po, pc, n) < 1e-5, "parameters drift after an update");
      double ec = 0, eo = 0;
      long oc = 0, oo = 0;
      ck_assert_int_eq(rlx_model_eval(c, x, y, B, &ec, &oc), RLX_OK);
      ck_assert_int_eq(rlx_model_eval(o, x, y, B, &eo, &oo), RLX_OK);
      ck_assert(fabs(ec - eo) < 1e-4 * fabs(ec) + 1e-6);
      ck_assert_int_eq(oc, oo);
    }
    free(p);
    free(gc);
    free(go);
    free(pc);
    free(po);
    free(x);
    rlx_model_free(&c);
    rlx_model_free(&o);
  }
  unsetenv("RLX_GEMM");
}

START_TEST(opencl_matches_cpu_on_awkward_shapes) {
  awkward_shapes("tiles");
  awkward_shapes("clblast");
}
END_TEST

/* gemm_tiles' other work-group shapes (RLX_GEMM_SHAPE, gemm_shape.h):
 * taller and wider tiles, half the work-items, k 8 and 32 at a time, the
 * k split never and wherever allowed: the same against C. */
START_TEST(gemm_tiles_shapes) {
  static const char *const shapes[] = {"8x4x16x16", "4x8x8x16/1", "8x8x16x8/65536", "4x4x16x32",
                                       "8x8x8x32/1"};
  for (size_t i = 0; i < sizeof shapes / sizeof *shapes; i++) {
    setenv("RLX_GEMM_SHAPE", shapes[i], 1);
    awkward_shapes("tiles");
  }
  unsetenv("RLX_GEMM_SHAPE");
}
END_TEST

/* The shape a device and model get (gemm_shape.c's table): the H200's
 * and the H100 SXM's measured one for models with a layer of 1024 or
 * more (another H100's name gets none: not measured), the plain one for
 * narrower models and other devices; RLX_GEMM_SHAPE over both, a bad
 * value refused with its reason. */
START_TEST(gemm_shape_by_device_and_width) {
  struct rlx__gemm_shape s;
  char why[300] = "";
  unsetenv("RLX_GEMM_SHAPE");
  ck_assert_int_eq(rlx__gemm_shape_wanted("NVIDIA H200", 1024, &s, why, sizeof why), 0);
  ck_assert(s.rm == 8 && s.rn == 4 && s.wy == 16 && s.chunk == 16 && s.fill == 128);
  ck_assert_int_eq(rlx__gemm_shape_wanted("NVIDIA H200", 784, &s, why, sizeof why), 0);
  ck_assert(s.rm == 4 && s.rn == 4 && s.wy == 16 && s.chunk == 16 && s.fill == 256);
  ck_assert_int_eq(rlx__gemm_shape_wanted("NVIDIA H100 80GB HBM3", 1024, &s, why, sizeof why), 0);
  ck_assert(s.rm == 8 && s.rn == 4 && s.wy == 16 && s.chunk == 16 && s.fill == 128);
  ck_assert_int_eq(rlx__gemm_shape_wanted("NVIDIA H100 PCIe", 1024, &s, why, sizeof why), 0);
  ck_assert(s.rm == 4 && s.rn == 4 && s.fill == 256); /* (not measured: the plain shape) */
  ck_assert_int_eq(rlx__gemm_shape_wanted("cpu-haswell", 4096, &s, why, sizeof why), 0);
  ck_assert(s.rm == 4 && s.rn == 4 && s.fill == 256);
  setenv("RLX_GEMM_SHAPE", "4x8x8x16/1", 1);
  ck_assert_int_eq(rlx__gemm_shape_wanted("NVIDIA H200", 1024, &s, why, sizeof why), 0);
  ck_assert(s.rm == 4 && s.rn == 8 && s.wy == 8 && s.chunk == 16 && s.fill == 1);
  setenv("RLX_GEMM_SHAPE", "3x4x16x16", 1);
  ck_assert_int_eq(rlx__gemm_shape_wanted("NVIDIA H200", 1024, &s, why, sizeof why), -1);
  ck_assert_msg(strstr(why, "RLX_GEMM_SHAPE=\"3x4x16x16\"") != NULL, "%s", why);
  unsetenv("RLX_GEMM_SHAPE");
}
END_TEST

/* Validation on its own: a backend whose answers are wrong is refused. */
struct liar {
  struct rlx__backend base;
  struct rlx__backend *real;
  int mode; /* 0 honest, 1 zeros, 2 scaled gradient, 3 NaN loss */
};
static int liar_set(struct rlx__backend *b, const float *p) {
  struct liar *l = (struct liar *)b;
  return l->real->ops->set_params(l->real, p);
}
static int liar_get(struct rlx__backend *b, float *p) {
  struct liar *l = (struct liar *)b;
  return l->real->ops->get_params(l->real, p);
}
static int liar_grad(struct rlx__backend *b, const float *x, const int32_t *y, int n, float *g,
                     float *loss, int *ok) {
  struct liar *l = (struct liar *)b;
  int rc = l->real->ops->grad(l->real, x, y, n, g, loss, ok);
  for (size_t i = 0; i < b->lo->nparams; i++)
    g[i] = l->mode == 1 ? 0.0f : l->mode == 2 ? g[i] * 1.01f : g[i];
  if (l->mode == 1)
    *loss = 0;
  if (l->mode == 3)
    *loss = NAN;
  return rc;
}
static int liar_apply(struct rlx__backend *b, const float *g, float lr) {
  struct liar *l = (struct liar *)b;
  return l->real->ops->apply(l->real, g, lr);
}
static int liar_eval(struct rlx__backend *b, const float *x, const int32_t *y, int n, double *s,
                     long *ok) {
  struct liar *l = (struct liar *)b;
  return l->real->ops->eval(l->real, x, y, n, s, ok);
}
static const struct rlx__backend_ops liar_ops = {.set_params = liar_set,
                                                 .get_params = liar_get,
                                                 .grad = liar_grad,
                                                 .apply = liar_apply,
                                                 .eval = liar_eval};

START_TEST(validation_catches_wrong_answers) {
  const int sizes[] = {20, 16, 10};
  rlx_model_desc_t d = {.nsizes = 3, .sizes = sizes, .max_batch = 64};
  struct rlx__layout lo;
  ck_assert_int_eq(rlx__layout_init(&lo, &d), RLX_OK);
  const char *want[] = {NULL, "probe loss 0 ", "gradient of layer", "probe loss nan"};
  for (int mode = 0; mode < 4; mode++) {
    struct liar l = {.base = {.ops = &liar_ops, .lo = &lo, .momentum = 0}, .mode = mode};
    ck_assert_int_eq(rlx__cpu_create(&lo, 0, &l.real), RLX_OK);
    char why[400];
    int rc = rlx__validate(&l.base, why, sizeof why);
    if (!want[mode])
      ck_assert_msg(rc == RLX_OK, "honest backend refused: %s", why);
    else
      ck_assert_msg(rc == RLX_ERR_DEVICE && strstr(why, want[mode]),
                    "mode %d: rc %d, why '%s'", mode, rc, why);
    l.real->ops->destroy(l.real);
  }
}
END_TEST

START_TEST(device_strings) {
  struct rlx__device_choice c;
  ck_assert_int_eq(rlx__device_parse("auto", &c), RLX_OK);
  ck_assert_int_eq(c.kind, RLX__DEV_AUTO);
  ck_assert_int_eq(rlx__device_parse("opencl:3", &c), RLX_OK);
  ck_assert_int_eq(c.kind, RLX__DEV_OPENCL);
  ck_assert_int_eq(c.index, 3);
  ck_assert_int_eq(rlx__device_parse("cpu", &c), RLX_OK);
  ck_assert_int_eq(rlx__device_parse("gpu", &c), RLX_OK);
  ck_assert_int_eq(c.kind, RLX__DEV_GPU);
  ck_assert_int_eq(c.index, RLX__DEV_GPU_ONLY);
  const char *bad[] = {"GPU", "opencl:", "opencl:-1", "opencl:x", "CPU", "opencl:999"};
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    ck_assert_int_eq(rlx__device_parse(bad[i], &c), RLX_ERR_ARG);
    ck_assert_ptr_nonnull(strstr(rlx_errmsg(), bad[i]));
  }
  /* Through the public call and the environment. */
  const int sizes[] = {4, 2};
  rlx_model_desc_t d = {.nsizes = 2, .sizes = sizes, .max_batch = 4, .local_rank = -1};
  rlx_model_t *m = NULL;
  setenv("RLX_DEVICE", "tpu", 1);
  ck_assert_int_eq(rlx_model_create(&d, &m), RLX_ERR_ARG);
  ck_assert_ptr_null(m);
  ck_assert_ptr_nonnull(strstr(rlx_errmsg(), "tpu"));
  setenv("RLX_DEVICE", "cpu", 1);
  ck_assert_int_eq(rlx_model_create(&d, &m), RLX_OK);
  ck_assert_str_eq(rlx_model_backend(m), "cpu");
  ck_assert_ptr_null(rlx_model_fallback(m));
  /* Labels outside the classes are refused before any kernel sees them. */
  float x[4] = {0};
  int32_t y[1] = {2};
  float g[10];
  ck_assert_int_eq(rlx_model_grad(m, x, y, 1, g, NULL, NULL), RLX_ERR_ARG);
  y[0] = 1;
  ck_assert_int_eq(rlx_model_grad(m, x, y, 5, g, NULL, NULL), RLX_ERR_ARG); /* > max_batch */
  ck_assert_int_eq(rlx_model_grad(m, x, y, 1, g, NULL, NULL), RLX_OK);
  rlx_model_free(&m);
  unsetenv("RLX_DEVICE");
}
END_TEST

/* Placement: GPUs near the rank's cores first, local rank i takes the
 * i-th mod their count; no near GPU (or no binding known) means all. */
START_TEST(gpu_placement) {
  hwloc_topology_t t;
  ck_assert_int_eq(hwloc_topology_init(&t), 0);
  ck_assert_int_eq(hwloc_topology_set_synthetic(t, "pack:2 core:4 pu:1"), 0);
  ck_assert_int_eq(hwloc_topology_load(t), 0);
  hwloc_obj_t p0 = hwloc_get_obj_by_type(t, HWLOC_OBJ_PACKAGE, 0);
  hwloc_obj_t p1 = hwloc_get_obj_by_type(t, HWLOC_OBJ_PACKAGE, 1);
  hwloc_const_bitmap_t gpus[4] = {p0->cpuset, p0->cpuset, p1->cpuset, p1->cpuset};
  hwloc_obj_t core5 = hwloc_get_obj_by_type(t, HWLOC_OBJ_CORE, 5);
  /* A rank bound to a core of package 1 takes GPU 2 or 3. */
  ck_assert_int_eq(rlx__cl_pick_near(gpus, 4, core5->cpuset, 0), 2);
  ck_assert_int_eq(rlx__cl_pick_near(gpus, 4, core5->cpuset, 1), 3);
  ck_assert_int_eq(rlx__cl_pick_near(gpus, 4, core5->cpuset, 2), 2);
  /* Unbound (the whole machine): every GPU is near; i mod 4. */
  hwloc_const_bitmap_t all = hwloc_topology_get_topology_cpuset(t);
  for (int r = 0; r < 8; r++)
    ck_assert_int_eq(rlx__cl_pick_near(gpus, 4, all, r), r % 4);
  /* Binding unknown, or nothing near: all of them. */
  ck_assert_int_eq(rlx__cl_pick_near(gpus, 4, NULL, 5), 1);
  hwloc_bitmap_t none = hwloc_bitmap_alloc();
  ck_assert_int_eq(rlx__cl_pick_near(gpus, 4, none, 6), 2);
  hwloc_bitmap_free(none);
  ck_assert_int_eq(rlx__cl_pick_near(gpus, 0, all, 0), -1);
  hwloc_topology_destroy(t);
}
END_TEST

/* rlx_model_step (one rank: the gradient stays where it is computed)
 * gives the parameters of rlx_model_grad then rlx_model_apply, after 6
 * steps with momentum, on C and on OpenCL, on an awkward shape. */
START_TEST(step_matches_grad_then_apply) {
  const int sizes[] = {13, 9, 7, 3};
  const int B = 11;
  float x[11 * 13], loss_a, loss_b;
  int32_t y[11];
  int ok_a, ok_b;
  const char *devs[] = {"cpu", "opencl"};
  for (int d = 0; d < 2; d++) {
    struct twins t;
    if (!twins_on(devs[d], sizes, 4, B, &t))
      break; /* no OpenCL here */
    for (int step = 0; step < 6; step++) {
      fill(x, sizeof x / sizeof *x, 10 + (uint64_t)step, 1.0);
      for (int i = 0; i < B; i++)
        y[i] = (i * 7 + step) % 3;
      ck_assert_int_eq(rlx_model_step(t.a, x, y, B, 0.05f, &loss_a, &ok_a), RLX_OK);
      ck_assert_int_eq(rlx_model_grad(t.b, x, y, B, t.g, &loss_b, &ok_b), RLX_OK);
      ck_assert_int_eq(rlx_model_apply(t.b, t.g, 0.05f), RLX_OK);
      ck_assert_msg(fabsf(loss_a - loss_b) <= 1e-6f * fabsf(loss_b) && ok_a == ok_b,
                    "%s step %d: loss %g against %g, correct %d against %d", devs[d], step,
                    (double)loss_a, (double)loss_b, ok_a, ok_b);
    }
    twins_params(&t);
    ck_assert_msg(rel(t.pa, t.pb, t.n) <= 1e-6, "%s: parameters differ by %g", devs[d],
                  rel(t.pa, t.pb, t.n));
    ck_assert_int_eq(rlx_model_step(t.a, x, y, 0, 0.05f, NULL, NULL), RLX_ERR_ARG);
    ck_assert_int_eq(rlx_model_step(t.a, x, y, B, -1.0f, NULL, NULL), RLX_ERR_ARG);
    twins_free(&t);
  }
}
END_TEST

/* prefetch_matches_plain's batch for a step (its rows and labels). */
static void prefetch_batch(float *x, int32_t *y, int batch, int step) {
  fill(x, (size_t)batch * 13, 30 + (uint64_t)step, 1.0);
  for (int i = 0; i < batch; i++)
    y[i] = (i * 5 + step) % 3;
}

/* rlx_model_prefetch: 8 steps whose batches (in two buffers, in turn)
 * were moved ahead, each while the step before ran, end with exactly the
 * parameters of 8 steps uploading their own batch; in the middle one step
 * is called on a batch nobody prefetched while two wait (it is uploaded
 * and they stay usable), and rlx_model_grad and _eval use a prefetched
 * batch too. A third batch waiting is refused; x NULL drops them. Both
 * backends (the C one has nothing to move). */
START_TEST(prefetch_matches_plain) {
  const int sizes[] = {13, 9, 3};
  const int B = 11;
  float xs[3][11 * 13], loss[2];
  int32_t ys[3][11];
  int ok[2];
  const char *devs[] = {"cpu", "opencl"};
  for (int d = 0; d < 2; d++) {
    struct twins t;
    if (!twins_on(devs[d], sizes, 3, B, &t))
      break; /* no OpenCL here */
    rlx_model_t *ab[2] = {t.a, t.b};
    for (int step = 0; step < 9; step++) {
      int k = step % 2;
      if (step == 0) {
        prefetch_batch(xs[0], ys[0], B, 0);
        ck_assert_int_eq(rlx_model_prefetch(t.a, xs[0], ys[0], B), RLX_OK);
      }
      if (step < 8) { /* the next one goes ahead now */
        int nk = (step + 1) % 2;
        prefetch_batch(xs[nk], ys[nk], B, step + 1);
        ck_assert_int_eq(rlx_model_prefetch(t.a, xs[nk], ys[nk], B), RLX_OK);
      }
      if (step == 4) { /* two wait: a third is refused, an unprefetched batch is uploaded */
        ck_assert_int_eq(rlx_model_prefetch(t.a, xs[2], ys[2], B), RLX_ERR_ARG);
        fill(xs[2], 11 * 13, 99, 1.0);
        for (int i = 0; i < B; i++)
          ys[2][i] = i % 3;
        for (int w = 0; w < 2; w++)
          ck_assert_int_eq(rlx_model_step(ab[w], xs[2], ys[2], B, 0.05f, NULL, NULL), RLX_OK);
      }
      for (int w = 0; w < 2; w++) /* the last step as grad + apply, on a prefetched batch */
        if (step == 8) {
          ck_assert_int_eq(rlx_model_grad(ab[w], xs[k], ys[k], B, t.g, &loss[w], &ok[w]), RLX_OK);
          ck_assert_int_eq(rlx_model_apply(ab[w], t.g, 0.05f), RLX_OK);
        } else {
          ck_assert_int_eq(rlx_model_step(ab[w], xs[k], ys[k], B, 0.05f, &loss[w], &ok[w]),
                           RLX_OK);
        }
      ck_assert_msg(loss[0] == loss[1] && ok[0] == ok[1], "%s step %d: loss %g against %g",
                    devs[d], step, (double)loss[0], (double)loss[1]);
    }
    twins_params(&t);
    ck_assert_msg(memcmp(t.pa, t.pb, t.n * sizeof *t.pa) == 0, "%s: parameters differ by %g",
                  devs[d], rel(t.pa, t.pb, t.n));
    /* evaluation on a prefetched batch; then two waiting are dropped */
    double la = 0, lb = 0;
    long ca = 0, cb = 0;
    ck_assert_int_eq(rlx_model_prefetch(t.a, xs[1], ys[1], B), RLX_OK);
    ck_assert_int_eq(rlx_model_eval(t.a, xs[1], ys[1], B, &la, &ca), RLX_OK);
    ck_assert_int_eq(rlx_model_eval(t.b, xs[1], ys[1], B, &lb, &cb), RLX_OK);
    ck_assert_msg(la == lb && ca == cb, "%s: eval %g against %g", devs[d], la, lb);
    ck_assert_int_eq(rlx_model_prefetch(t.a, xs[0], ys[0], B), RLX_OK);
    ck_assert_int_eq(rlx_model_prefetch(t.a, xs[1], ys[1], B), RLX_OK);
    ck_assert_int_eq(rlx_model_prefetch(t.a, NULL, NULL, 0), RLX_OK);
    ck_assert_int_eq(rlx_model_prefetch(t.a, xs[2], ys[2], B), RLX_OK);
    ck_assert_int_eq(rlx_model_prefetch(t.a, xs[2], ys[2], B + 1), RLX_ERR_ARG);
    ck_assert_ptr_nonnull(rlx_model_next_input_buffer(t.a));
    ck_assert_ptr_ne(rlx_model_next_input_buffer(t.a), rlx_model_input_buffer(t.a));
    twins_free(&t);
  }
}
END_TEST

/* The training set kept where the model computes (rlx_model_data_*):
 * on OpenCL, steps on batches gathered on the device from the epoch's
 * order end bit for bit where steps on the host's batches of the same
 * indices do, and the totals kept on the device (steps given no loss)
 * match the host's sums; the C backend keeps no set (RLX_ERR_STATE) but
 * keeps the totals. Bad arguments and limits are refused, named. */
START_TEST(data_on_device) {
  const int sizes[] = {13, 9, 3};
  enum { B = 10, N = 200, STEPS = 7 };
  rlx_dataset_t *ds = NULL, *wide = NULL, *many = NULL;
  ck_assert_int_eq(rlx_dataset_synthetic(N, 13, 3, 5, "train", &ds), RLX_OK);
  ck_assert_int_eq(rlx_dataset_synthetic(N, 12, 3, 5, "train", &wide), RLX_OK);
  ck_assert_int_eq(rlx_dataset_synthetic(N, 13, 5, 5, "train", &many), RLX_OK);
  uint32_t perm[N], idx[B];
  ck_assert_int_eq(rlx_dataset_shuffle(perm, N, 42, 0), RLX_OK);
  float x[B * 13], loss;
  int32_t y[B];
  int ok;
  const char *devs[] = {"cpu", "opencl"};
  for (int d = 0; d < 2; d++) {
    struct twins t;
    if (!twins_on(devs[d], sizes, 3, B, &t))
      break; /* no OpenCL here */
    if (d == 0) {
      ck_assert_int_eq(rlx_model_data_attach(t.a, ds, N), RLX_ERR_STATE);
      ck_assert_ptr_nonnull(strstr(rlx_errmsg(), "cpu computes from host memory"));
    } else {
      ck_assert_int_eq(rlx_model_data_order(t.a, perm, N), RLX_ERR_STATE);
      ck_assert_int_eq(rlx_model_data_attach(t.a, wide, N), RLX_ERR_ARG);
      ck_assert_int_eq(rlx_model_data_attach(t.a, many, N), RLX_ERR_ARG);
      ck_assert_ptr_nonnull(strstr(rlx_errmsg(), "is not a class 0..2"));
      ck_assert_int_eq(rlx_model_data_attach(t.a, ds, 0), RLX_ERR_ARG);
      ck_assert_int_eq(rlx_model_data_attach(t.a, ds, N + 1), RLX_ERR_ARG);
      setenv("RLX_DEVICE_DATA_MAX", "lots", 1);
      ck_assert_int_eq(rlx_model_data_attach(t.a, ds, N), RLX_ERR_ARG);
      setenv("RLX_DEVICE_DATA_MAX", "1000", 1);
      ck_assert_int_eq(rlx_model_data_attach(t.a, ds, N), RLX_ERR_NOMEM);
      ck_assert_ptr_nonnull(strstr(rlx_errmsg(), "more than the 0.0 MB it may have there"));
      unsetenv("RLX_DEVICE_DATA_MAX");
      ck_assert_int_eq(rlx_model_data_attach(t.a, ds, N), RLX_OK);
      ck_assert_int_eq(rlx_model_data_batch(t.a, 0, 1, B), RLX_ERR_STATE);
      perm[3] = N; /* an index past the set */
      ck_assert_int_eq(rlx_model_data_order(t.a, perm, N), RLX_ERR_ARG);
      ck_assert_int_eq(rlx_dataset_shuffle(perm, N, 42, 0), RLX_OK);
      ck_assert_int_eq(rlx_model_data_order(t.a, perm, N + 1), RLX_ERR_ARG);
      ck_assert_int_eq(rlx_model_data_order(t.a, perm, N), RLX_OK);
      ck_assert_int_eq(rlx_model_data_batch(t.a, N - 5, 1, B), RLX_ERR_ARG);
      ck_assert_int_eq(rlx_model_data_batch(t.a, 0, 1, B + 1), RLX_ERR_ARG);
      ck_assert_int_eq(rlx_model_step(t.a, NULL, NULL, B, 0.05f, NULL, NULL), RLX_ERR_ARG);
    }
    double sum = 0, tl = 0;
    long right = 0, tc = 0;
    for (int s = 0; s < STEPS; s++) { /* positions s*2B + 1, +2, ...: a rank's cut of two */
      ck_assert_int_eq(rlx_dataset_order(idx, B, N, 42, 0, (size_t)s * 2 * B + 1, 2), RLX_OK);
      ck_assert_int_eq(rlx_dataset_batch(ds, idx, B, x, y), RLX_OK);
      ck_assert_int_eq(rlx_model_step(t.b, x, y, B, 0.05f, &loss, &ok), RLX_OK);
      sum += (double)loss * B;
      right += ok;
      if (d == 1) {
        ck_assert_int_eq(rlx_model_data_batch(t.a, (size_t)s * 2 * B + 1, 2, B), RLX_OK);
        if (s == 3) { /* a new order drops the batch asked for: asked again, it is the same */
          uint32_t other[N];
          ck_assert_int_eq(rlx_dataset_shuffle(other, N, 43, 0), RLX_OK);
          ck_assert_int_eq(rlx_model_data_order(t.a, other, N), RLX_OK);
          ck_assert_int_eq(rlx_model_step(t.a, NULL, NULL, B, 0.05f, NULL, NULL), RLX_ERR_ARG);
          ck_assert_int_eq(rlx_model_data_batch(t.a, 0, 1, B), RLX_OK); /* (then another) */
          ck_assert_int_eq(rlx_model_data_order(t.a, perm, N), RLX_OK);
          ck_assert_int_eq(rlx_model_data_batch(t.a, (size_t)s * 2 * B + 1, 2, B), RLX_OK);
        }
        ck_assert_int_eq(rlx_model_step(t.a, NULL, NULL, B, 0.05f, NULL, NULL), RLX_OK);
      } else {
        ck_assert_int_eq(rlx_model_step(t.a, x, y, B, 0.05f, NULL, NULL), RLX_OK);
      }
    }
    ck_assert_int_eq(rlx_model_totals(t.a, &tl, NULL), RLX_ERR_ARG);
    ck_assert_int_eq(rlx_model_totals(t.a, &tl, &tc), RLX_OK);
    ck_assert_msg(tc == right && fabs(tl - sum) <= 1e-5 * sum,
                  "%s: totals %g, %ld right against %g, %ld", devs[d], tl, tc, sum, right);
    ck_assert_int_eq(rlx_model_totals(t.a, &tl, &tc), RLX_OK); /* read, then zero */
    ck_assert_msg(tl == 0 && tc == 0, "%s: totals not cleared", devs[d]);
    twins_params(&t);
    ck_assert_msg(memcmp(t.pa, t.pb, t.n * sizeof *t.pa) == 0, "%s: parameters differ by %g",
                  devs[d], rel(t.pa, t.pb, t.n));
    twins_free(&t);
  }
  rlx_dataset_free(&ds);
  rlx_dataset_free(&wide);
  rlx_dataset_free(&many);
}
END_TEST

/* A joining rank's copy (rlx_model_get/set_params and _momentum into a
 * fresh model) continues exactly as the original: after 4 momentum steps
 * the copy and the original take 3 more and end equal; without the
 * momentum (set_params clears it) they differ. Both backends. */
START_TEST(momentum_travels) {
  const int sizes[] = {13, 9, 3};
  const int B = 11;
  float x[11 * 13];
  int32_t y[11];
  const char *devs[] = {"cpu", "opencl"};
  for (int d = 0; d < 2; d++) {
    rlx_model_t *a;
    if (!models_on(devs[d], sizes, 3, B, &a, NULL))
      break; /* no OpenCL here */
    size_t n = rlx_model_nparams(a);
    float *p = malloc(n * sizeof *p), *v = malloc(n * sizeof *v), *pa = malloc(n * sizeof *pa),
          *pb = malloc(n * sizeof *pb), *pc = malloc(n * sizeof *pc);
    for (int step = 0; step < 7; step++) {
      if (step == 4) { /* b joins with everything; c with the parameters only */
        ck_assert_int_eq(rlx_model_get_params(a, p), RLX_OK);
        ck_assert_int_eq(rlx_model_get_momentum(a, v), RLX_OK);
        float mag = 0;
        for (size_t i = 0; i < n; i++)
          mag += fabsf(v[i]);
        ck_assert_msg(mag > 0, "%s: no momentum after 4 steps", devs[d]);
      }
      fill(x, sizeof x / sizeof *x, 20 + (uint64_t)step, 1.0);
      for (int i = 0; i < B; i++)
        y[i] = (i * 5 + step) % 3;
      ck_assert_int_eq(rlx_model_step(a, x, y, B, 0.05f, NULL, NULL), RLX_OK);
      if (step < 4)
        continue;
      static rlx_model_t *b, *c;
      if (step == 4) {
        b = make(sizes, 3, B, devs[d], 0.9f);
        c = make(sizes, 3, B, devs[d], 0.9f);
        ck_assert_int_eq(rlx_model_set_params(b, p), RLX_OK);
        ck_assert_int_eq(rlx_model_set_momentum(b, v), RLX_OK);
        ck_assert_int_eq(rlx_model_set_params(c, p), RLX_OK);
      }
      ck_assert_int_eq(rlx_model_step(b, x, y, B, 0.05f, NULL, NULL), RLX_OK);
      ck_assert_int_eq(rlx_model_step(c, x, y, B, 0.05f, NULL, NULL), RLX_OK);
      if (step == 6) {
        ck_assert_int_eq(rlx_model_get_params(a, pa), RLX_OK);
        ck_assert_int_eq(rlx_model_get_params(b, pb), RLX_OK);
        ck_assert_int_eq(rlx_model_get_params(c, pc), RLX_OK);
        ck_assert_msg(rel(pa, pb, n) <= 1e-6, "%s: the copy drifted by %g", devs[d],
                      rel(pa, pb, n));
        ck_assert_msg(rel(pa, pc, n) > 1e-5, "%s: momentum made no difference (%g)", devs[d],
                      rel(pa, pc, n));
        rlx_model_free(&b);
        rlx_model_free(&c);
      }
    }
    ck_assert_int_eq(rlx_model_get_momentum(a, NULL), RLX_ERR_ARG);
    ck_assert_int_eq(rlx_model_set_momentum(NULL, v), RLX_ERR_ARG);
    free(p), free(v), free(pa), free(pb), free(pc);
    rlx_model_free(&a);
  }
}
END_TEST

/* The C backend's state in place (rlx_model_params_buffer, _momentum_
 * buffer): what get_params and get_momentum copy out, bit for bit; a fresh
 * model given it by memcpy continues exactly as the original; writing the
 * parameters there leaves the momentum alone. OpenCL holds its state on
 * the device: NULL there, and for no model. */
START_TEST(state_in_place) {
  const int sizes[] = {13, 9, 3};
  const int B = 11;
  float x[11 * 13];
  int32_t y[11];
  rlx_model_t *a = make(sizes, 3, B, "cpu", 0.9f), *b = make(sizes, 3, B, "cpu", 0.9f);
  size_t n = rlx_model_nparams(a);
  float *p = malloc(n * sizeof *p), *v = malloc(n * sizeof *v);
  for (int step = 0; step < 7; step++) {
    if (step == 4) {
      float *pa = rlx_model_params_buffer(a), *va = rlx_model_momentum_buffer(a);
      float *pb = rlx_model_params_buffer(b), *vb = rlx_model_momentum_buffer(b);
      ck_assert_ptr_nonnull(pa);
      ck_assert_ptr_nonnull(va);
      ck_assert_int_eq(rlx_model_get_params(a, p), RLX_OK);
      ck_assert_int_eq(rlx_model_get_momentum(a, v), RLX_OK);
      ck_assert_int_eq(memcmp(p, pa, n * sizeof *p), 0);
      ck_assert_int_eq(memcmp(v, va, n * sizeof *v), 0);
      memcpy(vb, va, n * sizeof *v);
      memcpy(pb, pa, n * sizeof *p); /* (after the momentum: it stays) */
      ck_assert_int_eq(rlx_model_get_momentum(b, v), RLX_OK);
      ck_assert_int_eq(memcmp(v, va, n * sizeof *v), 0);
    }
    fill(x, sizeof x / sizeof *x, 40 + (uint64_t)step, 1.0);
    for (int i = 0; i < B; i++)
      y[i] = (i * 7 + step) % 3;
    ck_assert_int_eq(rlx_model_step(a, x, y, B, 0.05f, NULL, NULL), RLX_OK);
    if (step >= 4)
      ck_assert_int_eq(rlx_model_step(b, x, y, B, 0.05f, NULL, NULL), RLX_OK);
  }
  ck_assert_int_eq(memcmp(rlx_model_params_buffer(a), rlx_model_params_buffer(b), n * sizeof *p),
                   0);
  rlx_model_t *o = NULL;
  if (models_on("opencl", sizes, 3, B, &o, NULL)) {
    ck_assert_ptr_null(rlx_model_params_buffer(o));
    ck_assert_ptr_null(rlx_model_momentum_buffer(o));
    rlx_model_free(&o);
  }
  ck_assert_ptr_null(rlx_model_params_buffer(NULL));
  ck_assert_ptr_null(rlx_model_momentum_buffer(NULL));
  free(p), free(v);
  rlx_model_free(&a);
  rlx_model_free(&b);
}
END_TEST

/* The epoch's order (rlx_dataset_shuffle, rlx_dataset_order): a
 * permutation of 0..n-1 for every n (powers of 4 and between), the same
 * when asked again, other for another epoch or seed; one position at a
 * time (a rank's strided share) gives what the whole order holds there;
 * and it looks shuffled: at 60,000 the mean distance an example moves is
 * near n/3 (a random permutation's), few stay put or keep a neighbour.
 * Positions past the end are refused. */
START_TEST(epoch_order) {
  const size_t ns[] = {1, 2, 3, 4, 5, 7, 16, 17, 1000, 4096, 60000, 65537};
  for (size_t t = 0; t < sizeof ns / sizeof *ns; t++) {
    size_t n = ns[t];
    uint32_t *p = malloc(n * sizeof *p), *q = malloc(n * sizeof *q), *seen = calloc(n, sizeof *q);
    ck_assert_int_eq(rlx_dataset_shuffle(p, n, 7, 3), RLX_OK);
    for (size_t i = 0; i < n; i++) {
      ck_assert_msg(p[i] < n && !seen[p[i]], "n=%zu: position %zu holds %u twice or past the end",
                    n, i, p[i]);
      seen[p[i]] = 1;
    }
    ck_assert_int_eq(rlx_dataset_shuffle(q, n, 7, 3), RLX_OK);
    ck_assert_int_eq(memcmp(p, q, n * sizeof *p), 0);
    if (n >= 7) {
      ck_assert_int_eq(rlx_dataset_shuffle(q, n, 7, 4), RLX_OK);
      ck_assert_msg(memcmp(p, q, n * sizeof *p) != 0, "n=%zu: epochs 3 and 4 alike", n);
      ck_assert_int_eq(rlx_dataset_shuffle(q, n, 8, 3), RLX_OK);
      ck_assert_msg(memcmp(p, q, n * sizeof *p) != 0, "n=%zu: seeds 7 and 8 alike", n);
    }
    for (size_t stride = 1; stride <= 5 && stride <= n; stride += 2)
      for (size_t first = 0; first < stride; first++) {
        size_t count = (n - first + stride - 1) / stride;
        ck_assert_int_eq(rlx_dataset_order(q, count, n, 7, 3, first, stride), RLX_OK);
        for (size_t j = 0; j < count; j++)
          ck_assert_uint_eq(q[j], p[first + j * stride]);
      }
    ck_assert_int_eq(rlx_dataset_order(q, 1, n, 7, 3, n, 1), RLX_ERR_ARG);
    ck_assert_int_eq(rlx_dataset_order(q, 2, n, 7, 3, n - 1, 1), RLX_ERR_ARG);
    if (n == 60000) {
      double moved = 0;
      int still = 0, neighbours = 0;
      for (size_t i = 0; i < n; i++) {
        moved += fabs((double)p[i] - (double)i);
        still += p[i] == i;
        neighbours += i + 1 < n && p[i + 1] == p[i] + 1;
      }
      ck_assert_msg(fabs(moved / n / (n / 3.0) - 1) < 0.02, "mean move %.0f, not near n/3",
                    moved / n);
      ck_assert_msg(still < 10 && neighbours < 10, "%d fixed, %d kept a neighbour", still,
                    neighbours);
    }
    free(p), free(q), free(seen);
  }
  ck_assert_int_eq(rlx_dataset_order(NULL, 1, 10, 1, 1, 0, 1), RLX_ERR_ARG);
  ck_assert_int_eq(rlx_dataset_order(NULL, 0, 10, 1, 1, 0, 1), RLX_OK);
  ck_assert_int_eq(rlx_dataset_order((uint32_t[2]){0}, 2, 10, 1, 1, 0, 0), RLX_ERR_ARG);
}
END_TEST

/* 16-bit gradients: rlx_model_grad_half gives the float32 gradient
 * rounded to nearest even as the host rounds it (lib/base/half.c), bit for bit,
 * on the device too; rlx_model_apply_half applies what widening gives. */
START_TEST(half_gradients) {
  const int sizes[] = {13, 9, 3};
  const int B = 11;
  float x[11 * 13];
  int32_t y[11];
  const char *devs[] = {"cpu", "opencl"};
  fill(x, sizeof x / sizeof *x, 77, 1.0);
  for (int i = 0; i < B; i++)
    y[i] = i % 3;
  for (int d = 0; d < 2; d++) {
    rlx_model_t *a, *b;
    if (!models_on(devs[d], sizes, 3, B, &a, &b))
      break; /* no OpenCL here */
    size_t n = rlx_model_nparams(a);
    float *g = malloc(n * sizeof *g), *w = malloc(n * sizeof *w), *pa = malloc(n * sizeof *pa),
          *pb = malloc(n * sizeof *pb);
    uint16_t *h = malloc(n * sizeof *h), *want = malloc(n * sizeof *want);
    for (int bf16 = 0; bf16 < 2; bf16++) {
      float la, lb;
      ck_assert_int_eq(rlx_model_grad(a, x, y, B, g, &la, NULL), RLX_OK);
      ck_assert_int_eq(rlx_model_grad_half(a, x, y, B, h, bf16, &lb, NULL), RLX_OK);
      (bf16 ? rlx__f32_to_bf16_n : rlx__f32_to_f16_n)(want, g, n);
      size_t diff = 0;
      for (size_t i = 0; i < n; i++)
        diff += h[i] != want[i];
      ck_assert_msg(diff == 0 && la == lb, "%s %s: %zu of %zu values rounded otherwise", devs[d],
                    bf16 ? "bf16" : "f16", diff, n);
      (bf16 ? rlx__bf16_to_f32_n : rlx__f16_to_f32_n)(w, h, n);
      ck_assert_int_eq(rlx_model_apply_half(a, h, bf16, 0.05f), RLX_OK);
      ck_assert_int_eq(rlx_model_apply(b, w, 0.05f), RLX_OK);
      ck_assert_int_eq(rlx_model_get_params(a, pa), RLX_OK);
      ck_assert_int_eq(rlx_model_get_params(b, pb), RLX_OK);
      ck_assert_msg(memcmp(pa, pb, n * sizeof *pa) == 0, "%s %s: apply_half differs", devs[d],
                    bf16 ? "bf16" : "f16");
    }
    ck_assert_int_eq(rlx_model_grad_half(a, x, y, B, NULL, 0, NULL, NULL), RLX_ERR_ARG);
    ck_assert_int_eq(rlx_model_apply_half(a, h, 0, -1.0f), RLX_ERR_ARG);
    free(g), free(w), free(pa), free(pb), free(h), free(want);
    rlx_model_free(&a);
    rlx_model_free(&b);
  }
}
END_TEST

/* Buckets: rlx_model_grad_buckets hands over whole layers from the last,
 * each range once, covering the gradient, bit for bit rlx_model_grad's;
 * rlx_model_apply_range over the buckets equals rlx_model_apply. Bucket
 * sizes at the edges: a layer each, odd, all in one. */
struct seen {
  size_t off[8], n[8];
  int k;
  const float *g, *want;
};
static int note(size_t off, size_t n, void *arg) {
  struct seen *s = arg;
  ck_assert_int_lt(s->k, 8);
  ck_assert_msg(memcmp(s->g + off, s->want + off, n * sizeof(float)) == 0,
                "bucket [%zu, %zu) not final when handed over", off, off + n);
  s->off[s->k] = off;
  s->n[s->k++] = n;
  return 0;
}
static int refuse(size_t off, size_t n, void *arg) {
  (void)off, (void)n, (void)arg;
  return RLX_ERR_PEER_LOST;
}

START_TEST(gradient_buckets) {
  const int sizes[] = {13, 9, 7, 3};
  const int B = 11;
  float x[11 * 13];
  int32_t y[11];
  const char *devs[] = {"cpu", "opencl"};
  fill(x, sizeof x / sizeof *x, 5, 1.0);
  for (int i = 0; i < B; i++)
    y[i] = i % 3;
  for (int d = 0; d < 2; d++) {
    rlx_model_t *a, *b;
    if (!models_on(devs[d], sizes, 4, B, &a, &b))
      break; /* no OpenCL here */
    size_t n = rlx_model_nparams(a);
    float *want = malloc(n * sizeof *want), *g = malloc(n * sizeof *g), *pa = malloc(n * 4),
          *pb = malloc(n * 4);
    const size_t sizes_b[] = {0, 61, 1000000}; /* layers of 126, 70 and 24 values */
    for (int t = 0; t < 3; t++) {
      struct seen s = {.g = g, .want = want};
      float la, lb;
      ck_assert_int_eq(rlx_model_grad(a, x, y, B, want, &la, NULL), RLX_OK);
      memset(g, 0xff, n * sizeof *g);
      ck_assert_int_eq(rlx_model_grad_buckets(b, x, y, B, g, sizes_b[t], note, &s, &lb, NULL),
                       RLX_OK);
      ck_assert_msg(la == lb, "%s: loss %g against %g", devs[d], (double)lb, (double)la);
      size_t end = n;
      for (int k = 0; k < s.k; k++) { /* from the end down, no gaps */
        ck_assert_msg(s.off[k] + s.n[k] == end, "%s: bucket %d is [%zu, %zu), want it to end at %zu",
                      devs[d], k, s.off[k], s.off[k] + s.n[k], end);
        end = s.off[k];
      }
      ck_assert_msg(end == 0 && s.k == (t == 0 ? 3 : t == 1 ? 2 : 1), "%s: %d buckets for %zu",
                    devs[d], s.k, sizes_b[t]);
      for (int k = 0; k < s.k; k++)
        ck_assert_int_eq(rlx_model_apply_range(b, g, s.off[k], s.n[k], 0.05f), RLX_OK);
      ck_assert_int_eq(rlx_model_apply(a, want, 0.05f), RLX_OK);
      ck_assert_int_eq(rlx_model_get_params(a, pa), RLX_OK);
      ck_assert_int_eq(rlx_model_get_params(b, pb), RLX_OK);
      ck_assert_msg(memcmp(pa, pb, n * 4) == 0, "%s: apply_range differs from apply", devs[d]);
    }
    ck_assert_int_eq(rlx_model_grad_buckets(b, x, y, B, g, 0, refuse, NULL, NULL, NULL),
                     RLX_ERR_PEER_LOST);
    ck_assert_int_eq(rlx_model_apply_range(b, g, n - 1, 2, 0.05f), RLX_ERR_ARG);
    free(want), free(g), free(pa), free(pb);
    rlx_model_free(&a);
    rlx_model_free(&b);
  }
}
END_TEST

/* Ranks sharing one OpenCL device (share.h), on PoCL's device with
 * RLX_DEVICE_SHARE=1 in a fresh run directory:
 * - a model whose serving process dies fails its next call with
 *   RLX_ERR_DEVICE naming that process (no hang), and the next model made
 *   serves the device itself;
 * - a second model in a serving process computes through its own socket
 *   ("through pid N") bit for bit as the first, on every operation: steps
 *   from the caller's memory (copied through the staging region) and from
 *   the model's shared buffers, grad and apply, 16-bit gradients, a range,
 *   momentum, the training set on the device with its totals, and eval
 *   adding to what it is given;
 * - a gather deferred to the step that takes it, or sent alone before
 *   another request, and a new order dropping it, as in the serving
 *   process;
 * - corrupt requests (a short message, an unknown operation, a model of
 *   another device, memory never shared, a region without its memfd, a
 *   gather with a request that takes no batch or outside any order) are
 *   answered RLX_ERR_CORRUPT or cut off, and serving goes on. */
static rlx_model_t *shared_model(const int *sizes, int ns, int batch) {
  rlx_model_t *m = make(sizes, ns, batch, "opencl", 0.9f);
  if (strncmp(rlx_model_backend(m), "opencl", 6) != 0)
    rlx_model_free(&m);
  return m;
}

static int raw_connect(const char *dir) {
  struct sockaddr_un sa = {.sun_family = AF_UNIX};
  snprintf(sa.sun_path, sizeof sa.sun_path, "%s/compute-0", dir);
  int fd = socket(AF_UNIX, SOCK_SEQPACKET, 0);
  ck_assert_int_ge(fd, 0);
  ck_assert_int_eq(connect(fd, (struct sockaddr *)&sa, sizeof sa), 0);
  return fd;
}

/* Send q (with the descriptor pass, if >= 0); the reply's rc, or 1 when
 * the server closed the connection. */
static int raw_ask_fd(int fd, const void *q, size_t len, int pass) {
  static struct rlx__share_rep rep;
  ck_assert_int_eq(rlx__share_send(fd, q, len, pass), (ssize_t)len);
  ssize_t n = recv(fd, &rep, sizeof rep, 0);
  if (n == 0)
    return 1;
  ck_assert_int_eq(n, (ssize_t)sizeof rep);
  return rep.rc;
}
static int raw_ask(int fd, const void *q, size_t len) { return raw_ask_fd(fd, q, len, -1); }

/* rlx_model_step_shared on a thread of its own (the other member runs on
 * the test's), retrying once with index 1 if its index was taken; its
 * loss and count asked for when stats. */
struct member {
  rlx_model_t *m;
  const float *x;
  const int32_t *y;
  int batch, index, members, rc, mismatches, stats, correct;
  float loss;
  char why[600]; /* rlx_errmsg() of its last call */
  pthread_t t;
};
static void *member_step(void *arg) {
  struct member *s = arg;
  float *loss = s->stats ? &s->loss : NULL;
  int *correct = s->stats ? &s->correct : NULL;
  s->rc = rlx_model_step_shared(s->m, s->x, s->y, s->batch, s->index, s->members, 0.05f, loss,
                                correct);
  if (s->rc == RLX_ERR_MISMATCH) {
    s->mismatches++;
    s->rc = rlx_model_step_shared(s->m, s->x, s->y, s->batch, 1, s->members, 0.05f, loss,
                                  correct);
  }
  snprintf(s->why, sizeof s->why, "%s", rlx_errmsg());
  return NULL;
}

#ifdef RLX_FAULT_INJECTION
/* With RLX_FAULT_COMPUTE=fault: t's shared step on its thread and a's, as
 * member 0 of 2 from x, y, on this one; a's answer, rlx_errmsg() in mine. */
static int step_with_fault(const char *fault, struct member *t, rlx_model_t *a, const float *x,
                           const int32_t *y, int batch, char *mine, size_t len) {
  setenv("RLX_FAULT_COMPUTE", fault, 1);
  ck_assert_int_eq(pthread_create(&t->t, NULL, member_step, t), 0);
  int rc = rlx_model_step_shared(a, x, y, batch, 0, 2, 0.05f, NULL, NULL);
  snprintf(mine, len, "%s", rlx_errmsg());
  pthread_join(t->t, NULL);
  unsetenv("RLX_FAULT_COMPUTE");
  return rc;
}
#endif

START_TEST(shared_device) {
  const int sizes[] = {13, 9, 3};
  enum { B = 10, N = 120 };
  char dir[] = "/tmp/rlx-share-test-XXXXXX";
  ck_assert_ptr_nonnull(mkdtemp(dir));
  setenv("RLX_RUNDIR", dir, 1);
  setenv("RLX_DEVICE_SHARE", "1", 1);
  /* a serving process that dies (forked before this one touches OpenCL) */
  int ready[2];
  ck_assert_int_eq(pipe(ready), 0);
  pid_t child = fork();
  if (child == 0) {
    rlx_model_t *m = shared_model(sizes, 3, B);
    char c = m ? 'y' : 'n';
    (void)!write(ready[1], &c, 1);
    pause();
    _exit(0);
  }
  char c = 0;
  ck_assert_int_eq(read(ready[0], &c, 1), 1);
  if (c != 'y') { /* no OpenCL here */
    kill(child, SIGKILL);
    waitpid(child, NULL, 0);
    return;
  }
  float x[B * 13], *g;
  int32_t y[B];
  fill(x, B * 13, 3, 1.0);
  for (int i = 0; i < B; i++)
    y[i] = i % 3;
  rlx_model_t *a = shared_model(sizes, 3, B), *b = NULL;
  char through[64];
  snprintf(through, sizeof through, ", through pid %d", (int)child);
  ck_assert_msg(strstr(rlx_model_backend(a), through), "%s", rlx_model_backend(a));
  ck_assert_int_eq(rlx_model_step(a, x, y, B, 0.05f, NULL, NULL), RLX_OK);
  kill(child, SIGKILL);
  waitpid(child, NULL, 0);
  ck_assert_int_eq(rlx_model_step(a, x, y, B, 0.05f, NULL, NULL), RLX_ERR_DEVICE);
  snprintf(through, sizeof through, "the process serving it (pid %d) is gone", (int)child);
  ck_assert_msg(strstr(rlx_errmsg(), through), "%s", rlx_errmsg());
  rlx_model_free(&a);

  /* this process serves now: a computes here, b through the socket */
  a = shared_model(sizes, 3, B);
  b = shared_model(sizes, 3, B);
  ck_assert_ptr_null(strstr(rlx_model_backend(a), "through"));
  snprintf(through, sizeof through, ", through pid %d", (int)getpid());
  ck_assert_msg(strstr(rlx_model_backend(b), through), "%s", rlx_model_backend(b));
  size_t n = rlx_model_nparams(a);
  float *pa = malloc(n * 4), *pb = malloc(n * 4), *own = malloc(n * 4);
  uint16_t *h = malloc(n * 2);
  ck_assert(pa && pb && own && h);
  rlx_model_t *ab[2] = {a, b};
  float loss[2];
  int ok[2];
  rlx_dataset_t *ds = NULL;
  ck_assert_int_eq(rlx_dataset_synthetic(N, 13, 3, 5, "train", &ds), RLX_OK);
  uint32_t perm[N];
  ck_assert_int_eq(rlx_dataset_shuffle(perm, N, 42, 0), RLX_OK);
  float x2_eval[B * 13];
  fill(x2_eval, B * 13, 9, 1.0);
  double tl[2] = {7, 7}, el[2] = {0, 0}, el2[2] = {0, 0}; /* (totals are read, not added to) */
  long tc[2] = {7, 7}, ec[2] = {0, 0}, ec2[2] = {0, 0};
  for (int w = 0; w < 2; w++) {
    rlx_model_t *m = ab[w];
    float *in = rlx_model_input_buffer(m);
    g = rlx_model_grad_buffer(m);
    ck_assert(in && g);
    memcpy(in, x, sizeof x);
    ck_assert_int_eq(rlx_model_step(m, x, y, B, 0.05f, &loss[w], &ok[w]), RLX_OK);
    ck_assert_int_eq(rlx_model_grad(m, in, y, B, g, NULL, NULL), RLX_OK);
    ck_assert_int_eq(rlx_model_apply(m, g, 0.05f), RLX_OK);
    ck_assert_int_eq(rlx_model_grad(m, x, y, B, own, NULL, NULL), RLX_OK);
    ck_assert_int_eq(rlx_model_apply_range(m, own, 0, n / 2, 0.05f), RLX_OK);
    ck_assert_int_eq(rlx_model_grad_half(m, x, y, B, h, 1, NULL, NULL), RLX_OK);
    ck_assert_int_eq(rlx_model_apply_half(m, h, 1, 0.05f), RLX_OK);
    ck_assert_int_eq(rlx_model_get_momentum(m, own), RLX_OK);
    own[0] += 0.5f;
    ck_assert_int_eq(rlx_model_set_momentum(m, own), RLX_OK);
    ck_assert_int_eq(rlx_model_data_attach(m, ds, N), RLX_OK);
    ck_assert_int_eq(rlx_model_data_order(m, perm, N), RLX_OK);
    for (int s = 0; s < 4; s++) {
      ck_assert_int_eq(rlx_model_data_batch(m, (size_t)s * 2 * B + 1, 2, B), RLX_OK);
      ck_assert_int_eq(rlx_model_step(m, NULL, NULL, B, 0.05f, NULL, NULL), RLX_OK);
    }
    /* a served model's gather comes with the step that takes it, or goes
     * alone before another request (here eval's): the same effects in
     * the same order as in the serving process */
    ck_assert_int_eq(rlx_model_data_batch(m, 3, 1, B), RLX_OK);
    ck_assert_int_eq(rlx_model_grad(m, NULL, NULL, B, g, NULL, NULL), RLX_OK);
    ck_assert_int_eq(rlx_model_apply(m, g, 0.05f), RLX_OK);
    ck_assert_int_eq(rlx_model_data_batch(m, 5, 3, B), RLX_OK);
    ck_assert_int_eq(rlx_model_eval(m, x2_eval, y, B, &el2[w], &ec2[w]), RLX_OK);
    ck_assert_int_eq(rlx_model_step(m, NULL, NULL, B, 0.05f, NULL, NULL), RLX_OK);
    ck_assert_int_eq(rlx_model_data_batch(m, 7, 1, B), RLX_OK);
    ck_assert_int_eq(rlx_model_data_order(m, perm, N), RLX_OK); /* drops the batch asked for */
    ck_assert_int_eq(rlx_model_step(m, NULL, NULL, B, 0.05f, NULL, NULL), RLX_ERR_ARG);
    ck_assert_int_eq(rlx_model_totals(m, &tl[w], &tc[w]), RLX_OK);
    ck_assert_int_eq(rlx_model_eval(m, x, y, B, &el[w], &ec[w]), RLX_OK);
    ck_assert_int_eq(rlx_model_eval(m, x, y, B, &el[w], &ec[w]), RLX_OK); /* adds */
  }
  ck_assert_msg(loss[0] == loss[1] && ok[0] == ok[1], "loss %g against %g", (double)loss[1],
                (double)loss[0]);
  ck_assert_msg(tl[0] == tl[1] && tc[0] == tc[1] && tc[0] > 0, "totals %g, %ld against %g, %ld",
                tl[1], tc[1], tl[0], tc[0]);
  ck_assert_msg(el[0] == el[1] && ec[0] == ec[1] && el[1] > 0, "eval %g, %ld against %g, %ld",
                el[1], ec[1], el[0], ec[0]);
  ck_assert_msg(el2[0] == el2[1] && ec2[0] == ec2[1] && el2[1] > 0,
                "eval between a gather and its step %g, %ld against %g, %ld", el2[1], ec2[1], el2[0],
                ec2[0]);
  double one = 0;
  long one_c = 0;
  ck_assert_int_eq(rlx_model_eval(b, x, y, B, &one, &one_c), RLX_OK);
  ck_assert_msg(fabs(2 * one - el[1]) <= 1e-9 * el[1] && 2 * one_c == ec[1],
                "eval does not add: %g twice is not %g", one, el[1]);
  ck_assert_int_eq(rlx_model_get_params(a, pa), RLX_OK);
  ck_assert_int_eq(rlx_model_get_params(b, pb), RLX_OK);
  ck_assert_msg(memcmp(pa, pb, n * 4) == 0, "parameters differ by %g", rel(pa, pb, n));
  ck_assert_int_eq(rlx_model_get_momentum(a, pa), RLX_OK);
  ck_assert_int_eq(rlx_model_get_momentum(b, pb), RLX_OK);
  ck_assert_msg(memcmp(pa, pb, n * 4) == 0, "momentum differs by %g", rel(pa, pb, n));

  /* corrupt requests, each on a connection of its own */
  struct rlx__share_req q;
  int fd = raw_connect(dir);
  ck_assert_int_eq(raw_ask(fd, "short", 5), 1);
  close(fd);
  fd = raw_connect(dir);
  memset(&q, 0, sizeof q);
  q.op = 999;
  ck_assert_int_eq(raw_ask(fd, &q, sizeof q), RLX_ERR_CORRUPT);
  ck_assert_int_eq(recv(fd, &q, sizeof q, 0), 0); /* and cut off */
  close(fd);
  fd = raw_connect(dir);
  memset(&q, 0, sizeof q);
  q.op = RLX__SH_CREATE;
  q.nsizes = 3;
  q.max_batch = B;
  q.sizes[0] = 13, q.sizes[1] = 9, q.sizes[2] = 3;
  q.device = 5;
  ck_assert_int_eq(raw_ask(fd, &q, sizeof q), RLX_ERR_CORRUPT);
  close(fd);
  fd = raw_connect(dir);
  q.device = 0;
  ck_assert_int_eq(raw_ask(fd, &q, sizeof q), RLX_OK);
  struct rlx__share_req gq = {.op = RLX__SH_GRAD, .i = B};
  gq.ref[0] = (struct rlx__share_ref){.region = 3};
  gq.ref[1] = (struct rlx__share_ref){.region = 3, .off = 1000};
  gq.ref[2] = (struct rlx__share_ref){.region = 3};
  ck_assert_int_eq(raw_ask(fd, &gq, sizeof gq), RLX_ERR_CORRUPT);
  close(fd);
  fd = raw_connect(dir); /* a gather with a request that takes no batch */
  ck_assert_int_eq(raw_ask(fd, &q, sizeof q), RLX_OK);
  struct rlx__share_req tq = {.op = RLX__SH_TOTALS, .gather = {.batch = B}};
  ck_assert_int_eq(raw_ask(fd, &tq, sizeof tq), RLX_ERR_CORRUPT);
  close(fd);
  fd = raw_connect(dir); /* a step's gather from no order at all */
  ck_assert_int_eq(raw_ask(fd, &q, sizeof q), RLX_OK);
  struct rlx__share_req sq = {.op = RLX__SH_STEP, .i = B, .f = 0.05f, .gather = {.batch = B}};
  for (int k = 0; k < RLX__SH_REFS; k++)
    sq.ref[k].region = -1;
  ck_assert_int_eq(raw_ask(fd, &sq, sizeof sq), RLX_ERR_CORRUPT);
  close(fd);
  fd = raw_connect(dir);
  ck_assert_int_eq(raw_ask(fd, &q, sizeof q), RLX_OK);
  struct rlx__share_req mq = {.op = RLX__SH_MAP, .i = 1, .u = {4096, 0}};
  ck_assert_int_eq(raw_ask(fd, &mq, sizeof mq), RLX_ERR_CORRUPT); /* no memfd */
  close(fd);
  fd = raw_connect(dir); /* a memfd it could shrink under the server's mapping */
  ck_assert_int_eq(raw_ask(fd, &q, sizeof q), RLX_OK);
  int mfd = memfd_create("unsealed", 0);
  ck_assert_int_eq(ftruncate(mfd, 4096), 0);
  ck_assert_int_eq(raw_ask_fd(fd, &mq, sizeof mq, mfd), RLX_ERR_CORRUPT);
  close(mfd);
  close(fd);
  ck_assert_int_eq(rlx_model_step(b, x, y, B, 0.05f, NULL, NULL), RLX_OK); /* still served */
  rlx_model_t *c2 = shared_model(sizes, 3, B);
  ck_assert_int_eq(rlx_model_step(c2, x, y, B, 0.05f, NULL, NULL), RLX_OK);

  /* rlx_model_step_shared: a (here) and b (through the socket) average on
   * the device, bit for bit the host's (ga + gb) / 2 applied to both of a
   * reference pair (c2 and r, from the same parameters) */
  rlx_model_t *r = shared_model(sizes, 3, B);
  float x2[B * 13], *ga = malloc(n * 4), *gb = malloc(n * 4);
  fill(x2, B * 13, 4, 1.0);
  ck_assert_int_eq(rlx_model_get_params(a, pa), RLX_OK);
  ck_assert_int_eq(rlx_model_get_momentum(a, own), RLX_OK);
  rlx_model_t *all[] = {b, c2, r};
  for (int w = 0; w < 3; w++) {
    ck_assert_int_eq(rlx_model_set_params(all[w], pa), RLX_OK);
    ck_assert_int_eq(rlx_model_set_momentum(all[w], own), RLX_OK);
  }
  for (int s = 0; s < 3; s++) {
    struct member t = {.m = b, .x = x2, .y = y, .batch = B, .index = 1, .members = 2};
    ck_assert_int_eq(pthread_create(&t.t, NULL, member_step, &t), 0);
    ck_assert_int_eq(rlx_model_step_shared(a, x, y, B, 0, 2, 0.05f, NULL, NULL), RLX_OK);
    pthread_join(t.t, NULL);
    ck_assert_msg(t.rc == RLX_OK, "b's shared step: %d", t.rc);
    ck_assert_int_eq(rlx_model_grad(c2, x, y, B, ga, NULL, NULL), RLX_OK);
    ck_assert_int_eq(rlx_model_grad(r, x2, y, B, gb, NULL, NULL), RLX_OK);
    for (size_t i = 0; i < n; i++)
      ga[i] = (ga[i] + gb[i]) / 2;
    ck_assert_int_eq(rlx_model_apply(c2, ga, 0.05f), RLX_OK);
    ck_assert_int_eq(rlx_model_apply(r, ga, 0.05f), RLX_OK);
  }
  rlx_model_t *cmp[] = {a, b, r};
  ck_assert_int_eq(rlx_model_get_params(c2, pb), RLX_OK);
  for (int w = 0; w < 3; w++) {
    ck_assert_int_eq(rlx_model_get_params(cmp[w], pa), RLX_OK);
    ck_assert_msg(memcmp(pa, pb, n * 4) == 0, "model %d: the device's average differs by %g", w,
                  rel(pa, pb, n));
  }
  /* an index two members give: one is told, tries index 1, both go on */
  struct member t = {.m = b, .x = x2, .y = y, .batch = B, .index = 0, .members = 2};
  ck_assert_int_eq(pthread_create(&t.t, NULL, member_step, &t), 0);
  struct member self = {.m = a, .x = x, .y = y, .batch = B, .index = 0, .members = 2};
  member_step(&self);
  pthread_join(t.t, NULL);
  ck_assert_msg(self.rc == RLX_OK && t.rc == RLX_OK && self.mismatches + t.mismatches == 1,
                "rc %d, %d; %d mismatches", self.rc, t.rc, self.mismatches + t.mismatches);
  ck_assert_int_eq(rlx_model_step_shared(a, x, y, B, 2, 2, 0.05f, NULL, NULL), RLX_ERR_ARG);
  /* a member gone (b freed: its process's connection ends) while a waits:
   * a is told, naming it; so is every later shared step; plain steps go on */
  t = (struct member){.m = a, .x = x, .y = y, .batch = B, .index = 0, .members = 2};
  ck_assert_int_eq(pthread_create(&t.t, NULL, member_step, &t), 0);
  rlx_model_free(&b);
  pthread_join(t.t, NULL);
  ck_assert_int_eq(t.rc, RLX_ERR_PEER_LOST);
  snprintf(through, sizeof through, "(pid %d) is gone", (int)getpid());
  ck_assert_int_eq(rlx_model_step_shared(a, x, y, B, 0, 2, 0.05f, NULL, NULL), RLX_ERR_PEER_LOST);
  ck_assert_msg(strstr(rlx_errmsg(), through), "%s", rlx_errmsg());
  ck_assert_int_eq(rlx_model_step(a, x, y, B, 0.05f, NULL, NULL), RLX_OK);
  rlx_model_t *cpu = make(sizes, 3, B, "cpu", 0.9f);
  ck_assert_int_eq(rlx_model_step_shared(cpu, x, y, B, 0, 1, 0.05f, NULL, NULL), RLX_ERR_STATE);
  rlx_model_free(&cpu);
  free(ga), free(gb);
  rlx_model_free(&r);
  rlx_model_free(&c2);

  rlx_dataset_free(&ds);
  free(pa), free(pb), free(own), free(h);
  rlx_model_free(&b);
  rlx_model_free(&a);
  unsetenv("RLX_DEVICE_SHARE");
  unsetenv("RLX_RUNDIR");
  char path[128];
  snprintf(path, sizeof path, "%s/compute-0", dir);
  unlink(path);
  rmdir(dir);
}
END_TEST

/* RLX_DEVICE=gpu where OpenCL lists no GPU (PoCL's CPU device here): a
 * clear error naming the devices there are, and, when a GPU vendor's
 * OpenCL library is on disk (RLX_GPU_OPENCL_LIBS stands in for NVIDIA's
 * path), how to register it; no quiet fallback to C. An OpenCL device
 * that is a CPU while such a library is there comes with that note
 * (rlx_model_fallback). */
START_TEST(gpu_asked_without_gpu) {
  struct rlx__cl_device devs[RLX__CL_MAX_DEVICES];
  char why[256];
  int n = rlx__cl_list(devs, RLX__CL_MAX_DEVICES, why, sizeof why);
  if (n > 0 && devs[0].is_gpu)
    return; /* a machine with a GPU: nothing to show */
  const int sizes[] = {4, 2};
  rlx_model_desc_t d = {.nsizes = 2, .sizes = sizes, .max_batch = 4, .device = "gpu",
                        .local_rank = -1};
  rlx_model_t *m = NULL;
  setenv("RLX_GPU_OPENCL_LIBS", "/nonexistent/libnvidia-opencl.so.1", 1);
  ck_assert_int_eq(rlx_model_create(&d, &m), RLX_ERR_DEVICE);
  ck_assert_ptr_null(m);
  ck_assert_msg(strstr(rlx_errmsg(), "device gpu: opencl: no OpenCL GPU device (devices here:") &&
                    !strstr(rlx_errmsg(), "not registered") && !strstr(rlx_errmsg(), "using cpu"),
                "%s", rlx_errmsg());
  if (n > 0)
    ck_assert_msg(strstr(rlx_errmsg(), devs[0].name) != NULL, "%s", rlx_errmsg());
  char lib[] = "/tmp/rlx-test-libnvidia-opencl.so.1-XXXXXX";
  int fd = mkstemp(lib);
  ck_assert_int_ge(fd, 0);
  close(fd);
  setenv("RLX_GPU_OPENCL_LIBS", lib, 1);
  ck_assert_int_eq(rlx_model_create(&d, &m), RLX_ERR_DEVICE);
  ck_assert_msg(strstr(rlx_errmsg(), "is installed but not registered with the OpenCL ICD loader") &&
                    strstr(rlx_errmsg(), lib) && strstr(rlx_errmsg(), "OCL_ICD_VENDORS"),
                "%s", rlx_errmsg());
  if (n > 0) { /* an explicit opencl runs on the CPU device, and says what it misses */
    d.device = "opencl";
    ck_assert_int_eq(rlx_model_create(&d, &m), RLX_OK);
    const char *note = rlx_model_fallback(m);
    ck_assert_msg(note && strstr(note, "is a CPU, but") && strstr(note, lib), "%s",
                  note ? note : "(no note)");
    rlx_model_free(&m);
  }
  unlink(lib);
  unsetenv("RLX_GPU_OPENCL_LIBS");
}
END_TEST

/* An allocation that fails while a model is made (RLX_FAULT_COMPUTE=nomem,
 * test builds): RLX_ERR_NOMEM with the count, no model, nothing read from
 * the freed one (it read m->lo.nparams after rlx_model_free set m NULL). */
START_TEST(out_of_memory_while_creating) {
#ifdef RLX_FAULT_INJECTION
  const int sizes[] = {784, 64, 10};
  rlx_model_desc_t d = {.nsizes = 3, .sizes = sizes, .max_batch = 8, .device = "cpu",
                        .local_rank = -1};
  rlx_model_t *m = NULL;
  setenv("RLX_FAULT_COMPUTE", "nomem", 1);
  int rc = rlx_model_create(&d, &m);
  unsetenv("RLX_FAULT_COMPUTE");
  ck_assert_int_eq(rc, RLX_ERR_NOMEM);
  ck_assert_ptr_null(m);
  ck_assert_msg(strstr(rlx_errmsg(), "out of memory for 50890 parameters"), "%s", rlx_errmsg());
#endif
}
END_TEST

/* A shared step whose gradient fails (RLX_FAULT_COMPUTE=gradient, test
 * builds): the member arriving last queues every member's part, so each
 * member is told: the first member's own error, the other's naming it;
 * the group is over (later shared steps fail), plain steps go on. Then
 * a fresh pair whose update fails (RLX_FAULT_COMPUTE=update): both told. */
START_TEST(shared_step_fails) {
#ifdef RLX_FAULT_INJECTION
  const int sizes[] = {13, 9, 3};
  enum { B = 4 };
  rlx_model_t *a, *b;
  if (!models_on("opencl", sizes, 3, B, &a, &b))
    return;
  float x[B * 13];
  int32_t y[B] = {0, 1, 2, 1};
  fill(x, B * 13, 3, 1.0);
  struct member t = {.m = b, .x = x, .y = y, .batch = B, .index = 1, .members = 2};
  char mine[600];
  int rc = step_with_fault("gradient", &t, a, x, y, B, mine, sizeof mine);
  ck_assert_int_eq(rc, RLX_ERR_DEVICE);
  ck_assert_int_eq(t.rc, RLX_ERR_DEVICE);
  ck_assert_msg(strstr(mine, "injected fault: no gradient") && !strstr(mine, "member 0"), "%s",
                mine);
  ck_assert_msg(strstr(t.why, "the gradient of member 0 (this process's own model) failed: "
                              "opencl") && strstr(t.why, "injected fault"), "%s", t.why);
  ck_assert_int_eq(rlx_model_step_shared(a, x, y, B, 0, 2, 0.05f, NULL, NULL), RLX_ERR_PEER_LOST);
  ck_assert_msg(strstr(rlx_errmsg(), "member 0's gradient failed"), "%s", rlx_errmsg());
  ck_assert_int_eq(rlx_model_step(a, x, y, B, 0.05f, NULL, NULL), RLX_OK);
  rlx_model_free(&a);
  rlx_model_free(&b);
  /* the two members' update failing (pair_update's): both told, with its
   * error; later shared steps name it */
  if (!models_on("opencl", sizes, 3, B, &a, &b))
    return;
  t = (struct member){.m = b, .x = x, .y = y, .batch = B, .index = 1, .members = 2};
  rc = step_with_fault("update", &t, a, x, y, B, mine, sizeof mine);
  ck_assert_int_eq(rc, RLX_ERR_DEVICE);
  ck_assert_int_eq(t.rc, RLX_ERR_DEVICE);
  ck_assert_msg(strstr(mine, "injected fault: no update"), "%s", mine);
  ck_assert_msg(strstr(t.why, "injected fault: no update"), "%s", t.why);
  ck_assert_int_eq(rlx_model_step_shared(a, x, y, B, 0, 2, 0.05f, NULL, NULL), RLX_ERR_PEER_LOST);
  ck_assert_msg(strstr(rlx_errmsg(), "the members' update failed"), "%s", rlx_errmsg());
  rlx_model_free(&a);
  rlx_model_free(&b);
#endif
}
END_TEST

/* Members of a shared step whose models differ in size: the one arriving
 * while another waits is refused at once (RLX_ERR_MISMATCH, naming both
 * sizes; at the first step too, before any step ran), and the step goes
 * on with a member of the right size. (Two members: one kernel averages
 * and updates both, which must never run over models unlike.) */
static void *member_once(void *arg) { /* (member_step without its retry) */
  struct member *s = arg;
  s->rc = rlx_model_step_shared(s->m, s->x, s->y, s->batch, s->index, s->members, 0.05f, NULL,
                                NULL);
  snprintf(s->why, sizeof s->why, "%s", rlx_errmsg());
  return NULL;
}

START_TEST(shared_step_sizes) {
  const int sizes[] = {13, 9, 3}, other[] = {13, 7, 3};
  enum { B = 4 };
  rlx_model_t *b, *c, *a2;
  if (!models_on("opencl", sizes, 3, B, &b, &c))
    return;
  a2 = make(other, 3, B, "opencl", 0.9f);
  float x[B * 13];
  int32_t y[B] = {0, 1, 2, 1};
  fill(x, B * 13, 3, 1.0);
  struct member tb = {.m = b, .x = x, .y = y, .batch = B, .index = 1, .members = 2};
  ck_assert_int_eq(pthread_create(&tb.t, NULL, member_step, &tb), 0);
  usleep(300 * 1000); /* (b arrives and waits) */
  struct member ta = {.m = a2, .x = x, .y = y, .batch = B, .index = 0, .members = 2};
  ck_assert_int_eq(pthread_create(&ta.t, NULL, member_once, &ta), 0);
  struct timespec until;
  clock_gettime(CLOCK_REALTIME, &until);
  until.tv_sec += 20;
  ck_assert_msg(pthread_timedjoin_np(ta.t, NULL, &until) == 0, "a model unlike the other waited");
  ck_assert_int_eq(ta.rc, RLX_ERR_MISMATCH);
  char want[160];
  snprintf(want, sizeof want, "a model of %zu parameters where the others have %zu",
           rlx_model_nparams(a2), rlx_model_nparams(b));
  ck_assert_msg(strstr(ta.why, want), "%s", ta.why);
  ck_assert_int_eq(rlx_model_step_shared(c, x, y, B, 0, 2, 0.05f, NULL, NULL), RLX_OK);
  pthread_join(tb.t, NULL);
  ck_assert_int_eq(tb.rc, RLX_OK);
  rlx_model_free(&a2);
  rlx_model_free(&b);
  rlx_model_free(&c);
}
END_TEST

/* The joint step: two members that hold the same parameters step once
 * over both batches (gemm_tiles' products, RLX_GEMM=tiles), bit for bit
 * their steps by parts (RLX_JOINT_STEP=0): parameters, momentum's effect,
 * each member's loss and count. RLX_GEMM_SHAPE's fill of 16 splits the
 * first product's k in 8 for a member's 128 rows, in 4 for both members'
 * 256 (the member's split must be kept), and the first weight gradient's
 * k in 2 for each member's rows (each member's parts summed alone, then
 * the two added). A joint step failing fails both members and the group.
 * Joint only while the
 * members are known equal: b's parameters set apart makes the next step
 * by parts, set equal again (momentum too) joint again. A bad
 * RLX_JOINT_STEP is a fallback's reason. */
enum { JOINT_B = 128, JOINT_IN = 512 };

/* Six shared steps of a and b from p0, v0 (the fourth with b set apart);
 * their parameters after (pb: b's after the fourth, and after the sixth),
 * each step's losses and counts; the steps that ran joint. */
static long joint_run(rlx_model_t *a, rlx_model_t *b, const float *p0, const float *v0,
                      const float *xa, const float *xb, const int32_t *y, float *pa, float *pb,
                      float loss[6][2], int correct[6][2]) {
  size_t n = rlx_model_nparams(a);
  float *t = malloc(n * 4);
  ck_assert_ptr_nonnull(t);
  for (int w = 0; w < 2; w++) {
    ck_assert_int_eq(rlx_model_set_params(w ? b : a, p0), RLX_OK);
    ck_assert_int_eq(rlx_model_set_momentum(w ? b : a, v0), RLX_OK);
  }
  long before = rlx__cl_joint_steps(), apart = 0;
  for (int s = 0; s < 6; s++) {
    if (s == 3) { /* b apart */
      ck_assert_int_eq(rlx_model_get_params(b, t), RLX_OK);
      t[n / 2] += 0.25f;
      ck_assert_int_eq(rlx_model_set_params(b, t), RLX_OK);
      apart = rlx__cl_joint_steps();
    }
    if (s == 4) { /* b equal to a again */
      ck_assert_int_eq(rlx__cl_joint_steps(), apart);
      ck_assert_int_eq(rlx_model_get_params(b, pb), RLX_OK);
      pb += n;
      ck_assert_int_eq(rlx_model_get_params(a, t), RLX_OK);
      ck_assert_int_eq(rlx_model_set_params(b, t), RLX_OK);
      ck_assert_int_eq(rlx_model_get_momentum(a, t), RLX_OK);
      ck_assert_int_eq(rlx_model_set_momentum(b, t), RLX_OK);
    }
    struct member mb = {.m = b, .x = xb, .y = y + JOINT_B, .batch = JOINT_B, .index = 1,
                        .members = 2, .stats = 1};
    ck_assert_int_eq(pthread_create(&mb.t, NULL, member_step, &mb), 0);
    ck_assert_int_eq(
        rlx_model_step_shared(a, xa, y, JOINT_B, 0, 2, 0.05f, &loss[s][0], &correct[s][0]), RLX_OK);
    pthread_join(mb.t, NULL);
    ck_assert_msg(mb.rc == RLX_OK, "b's shared step %d: %d", s, mb.rc);
    loss[s][1] = mb.loss;
    correct[s][1] = mb.correct;
  }
  ck_assert_int_eq(rlx_model_get_params(a, pa), RLX_OK);
  ck_assert_int_eq(rlx_model_get_params(b, pb), RLX_OK);
  free(t);
  return rlx__cl_joint_steps() - before;
}

START_TEST(joint_step_matches_parts) {
  const int sizes[] = {JOINT_IN, 24, 3};
  enum { B = JOINT_B };
  setenv("RLX_GEMM", "tiles", 1);
  setenv("RLX_GEMM_SHAPE", "4x4x16x16/16", 1);
  rlx_model_t *m[2][2]; /* [0]: joint where they can, [1]: RLX_JOINT_STEP=0, by parts only */
  int on = models_on("opencl", sizes, 3, B, &m[0][0], &m[0][1]);
  setenv("RLX_JOINT_STEP", "0", 1);
  if (on)
    ck_assert(models_on("opencl", sizes, 3, B, &m[1][0], &m[1][1]));
  setenv("RLX_JOINT_STEP", "sometimes", 1);
  rlx_model_t *bad = on ? make(sizes, 3, B, "opencl", 0.9f) : NULL;
  unsetenv("RLX_JOINT_STEP");
  unsetenv("RLX_GEMM");
  unsetenv("RLX_GEMM_SHAPE");
  if (!on)
    return;
  ck_assert_str_eq(rlx_model_backend(bad), "cpu");
  ck_assert_msg(strstr(rlx_model_fallback(bad), "RLX_JOINT_STEP=\"sometimes\": expected auto, 0 or 1"),
                "%s", rlx_model_fallback(bad));
  rlx_model_free(&bad);
  rlx_model_t *a = m[0][0];
  size_t n = rlx_model_nparams(a);
  float *p0 = malloc(n * 4), *v0 = malloc(n * 4), *pa[2], *pb[2]; /* (pb: two steps' each) */
  float *xa = malloc(B * JOINT_IN * 4), *xb = malloc(B * JOINT_IN * 4), loss[2][6][2];
  int32_t y[2 * B];
  int correct[2][6][2];
  ck_assert(p0 && v0 && xa && xb);
  fill(xa, B * JOINT_IN, 11, 1.0);
  fill(xb, B * JOINT_IN, 12, 1.0);
  for (int i = 0; i < 2 * B; i++)
    y[i] = (i * 7) % 3;
  ck_assert_int_eq(rlx_model_get_params(a, p0), RLX_OK);
  fill(v0, n, 13, 0.01);
  for (int r = 0; r < 2; r++) {
    pa[r] = malloc(n * 4), pb[r] = malloc(2 * n * 4);
    ck_assert(pa[r] && pb[r]);
    long joint = joint_run(m[r][0], m[r][1], p0, v0, xa, xb, y, pa[r], pb[r], loss[r], correct[r]);
    ck_assert_int_eq(joint, r == 0 ? 5 : 0);
  }
  ck_assert_msg(memcmp(pa[0], pa[1], n * 4) == 0, "a: joint differs by %g", rel(pa[0], pa[1], n));
  for (int h = 0; h < 2; h++)
    ck_assert_msg(memcmp(pb[0] + h * n, pb[1] + h * n, n * 4) == 0,
                  "b after step %d: joint differs by %g", h ? 6 : 4,
                  rel(pb[0] + h * n, pb[1] + h * n, n));
  ck_assert_msg(memcmp(pa[0], pb[0], n * 4) != 0, "b set apart, yet equal to a");
  for (int s = 0; s < 6; s++)
    for (int w = 0; w < 2; w++)
      ck_assert_msg(loss[0][s][w] == loss[1][s][w] && correct[0][s][w] == correct[1][s][w],
                    "step %d member %d: loss %g (%d right) joint, %g (%d) by parts", s, w,
                    (double)loss[0][s][w], correct[0][s][w], (double)loss[1][s][w],
                    correct[1][s][w]);
#ifdef RLX_FAULT_INJECTION
  /* a joint step failing on the device (RLX_FAULT_COMPUTE=joint): both
   * members told, with its error; later shared steps name it */
  struct member mb = {.m = m[0][1], .x = xb, .y = y + B, .batch = B, .index = 1, .members = 2};
  char mine[600];
  int rc = step_with_fault("joint", &mb, m[0][0], xa, y, B, mine, sizeof mine);
  ck_assert_int_eq(rc, RLX_ERR_DEVICE);
  ck_assert_int_eq(mb.rc, RLX_ERR_DEVICE);
  ck_assert_msg(strstr(mine, "injected fault: no joint step"), "%s", mine);
  ck_assert_int_eq(rlx_model_step_shared(m[0][0], xa, y, B, 0, 2, 0.05f, NULL, NULL),
                   RLX_ERR_PEER_LOST);
  ck_assert_msg(strstr(rlx_errmsg(), "the members' joint step failed"), "%s", rlx_errmsg());
#endif
  for (int r = 0; r < 2; r++)
    free(pa[r]), free(pb[r]);
  free(p0), free(v0), free(xa), free(xb);
  for (int r = 0; r < 4; r++)
    rlx_model_free(&m[r / 2][r % 2]);
}
END_TEST

/* Models made on two threads at once, as a program with a model per
 * thread does: both compute on OpenCL. PoCL answered the second thread
 * asking for devices while the first one's call set the driver up with
 * none (it fell back to the CPU) until the listing took turns. */
static pthread_barrier_t made_at_once;

static void *make_one(void *arg) {
  static const int sizes[] = {784, 16, 10};
  pthread_barrier_wait(&made_at_once);
  *(rlx_model_t **)arg = make(sizes, 3, 8, "opencl", 0.0f);
  return NULL;
}

START_TEST(models_made_at_once) {
  rlx_model_t *m[2] = {NULL, NULL};
  pthread_t th[2];
  pthread_barrier_init(&made_at_once, NULL, 2);
  for (int i = 0; i < 2; i++)
    ck_assert_int_eq(pthread_create(&th[i], NULL, make_one, &m[i]), 0);
  for (int i = 0; i < 2; i++)
    pthread_join(th[i], NULL);
  for (int i = 0; i < 2; i++) {
    ck_assert_ptr_nonnull(m[i]);
    ck_assert_msg(strncmp(rlx_model_backend(m[i]), "opencl", 6) == 0, "model %d: %s (%s)", i,
                  rlx_model_backend(m[i]), rlx_model_fallback(m[i]) ? rlx_model_fallback(m[i]) : "");
    rlx_model_free(&m[i]);
  }
  pthread_barrier_destroy(&made_at_once);
}
END_TEST

Suite *compute_suite(void) {
  Suite *s = suite_create("compute");
  TCase *t = tcase_create("model");
  /* A hang guard, not a speed bound: with a cold PoCL cache the first
   * OpenCL model compiles CLBlast's whole GEMM program (every kernel, since
   * CLBlast asks for the binaries), 3-8 minutes on a loaded 2-core host. */
  tcase_set_timeout(t, 900);
  tcase_add_test(t, cpu_gradient_matches_finite_differences);
  tcase_add_test(t, validation_catches_wrong_answers);
  tcase_add_test(t, device_strings);
  tcase_add_test(t, gpu_asked_without_gpu);
  tcase_add_test(t, out_of_memory_while_creating);
  tcase_add_test(t, step_matches_grad_then_apply);
  tcase_add_test(t, prefetch_matches_plain);
  tcase_add_test(t, data_on_device);
  tcase_add_test(t, momentum_travels);
  tcase_add_test(t, state_in_place);
  tcase_add_test(t, epoch_order);
  tcase_add_test(t, half_gradients);
  tcase_add_test(t, gradient_buckets);
  tcase_add_test(t, shared_device);
  tcase_add_test(t, models_made_at_once);
  tcase_add_test(t, shared_step_fails);
  tcase_add_test(t, shared_step_sizes);
  tcase_add_test(t, joint_step_matches_parts);
  tcase_add_test(t, gpu_placement);
  tcase_add_test(t, opencl_matches_cpu_on_awkward_shapes);
  tcase_add_test(t, gemm_tiles_shapes);
  tcase_add_test(t, gemm_shape_by_device_and_width);
  suite_add_tcase(s, t);
  return s;
}

int main(void) { return rlx_run_suite(compute_suite()); }
