/* The OpenCL backend. Parameters, momentum, activations and gradients live
 * on the device between steps; a step moves the batch in and the flat
 * gradient out, and an update moves the averaged gradient in. Matrix
 * products are kernels.cl's gemm_tiles (the forward one with its bias and
 * ReLU folded in), CLBlast's where a device cannot run it or RLX_GEMM=clblast
 * asks (README: why, measured); kernels.cl has the rest. One in-order
 * compute queue, so the only waits are the reads the caller needs. */
#include <clblast_c.h>
#include <hwloc/opencl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "compute/backend.h"
#include "compute/cl_context.h"
#include "compute/cl_devices.h"
#include "compute/cl_profile.h"
#include "compute/clblast_tuning.h"
#include "compute/kernels_cl.h"
#include "compute/gemm_shape.h"
#include "compute/share.h"
#include "base/internal.h"

enum {
  K_BIAS_ACT, K_SOFTMAX_XENT, K_RELU_BACK, K_SGD, K_TO_HALF, K_FROM_HALF, K_COL_SUMS,
  K_WGRAD_SMALL, K_SUM_PARTS, K_GATHER, K_BATCH_STATS, K_GROUP_SUM, K_PAIR_UPDATE,
  K_GEMM_TILES, K_COUNT /* (gemm_tiles last: its own work-group size) */
};
static const char *const kernel_names[K_COUNT] = {
    "bias_act", "softmax_xent", "relu_back", "sgd",          "to_half",   "from_half",
    "col_sums", "wgrad_small",  "sum_parts", "gather_batch", "batch_stats", "group_sum",
    "pair_update", "gemm_tiles"};
/* wgrad_small's limit on a layer's outputs (kernels.cl takes it and
 * gemm_tiles' shape, gemm_shape.h, from the build options) */
#define SMALL_OUT 16

struct ocl {
  struct rlx__backend base;
  cl_context ctx;
  cl_command_queue q;
  cl_command_queue tq;                /* gradient downloads, overlapping the backward pass */
  cl_program prog;
  cl_kernel k[K_COUNT];
  size_t wg;                          /* work-group size for 1-D launches */
  cl_mem params, velocity, grad, dz, dz2, stats;
  cl_mem row_stats; /* each row's loss and verdict (batch x 2), summed into stats */
  cl_mem xin[2], yin[2]; /* the batch's input slots ([1]: made at rlx_model_prefetch's first call) */
  struct {
    const float *x;
    const int32_t *y;
    int batch;
    unsigned long order; /* the oldest match is used first (the same buffers for every step) */
    cl_event ev; /* its upload on tq; NULL: the slot waits for nobody */
  } pf[2];       /* batches prefetched into each input slot, not yet used */
  unsigned long pf_count;
  cl_mem ycur;   /* the labels forward took */
  cl_mem grad16; /* the gradient in 16 bits (rlx_model_grad_half), made at first use */
  cl_mem gemm_tmp;                    /* CLBlast's scratch, allocated once, not per call */
  int tiles_ok;                       /* the device runs gemm_tiles' work-groups */
  struct rlx__gemm_shape gs;          /* their shape */
  cl_mem part;                        /* gemm_tiles' partial products, made at first need */
  size_t part_bytes;
  size_t gemm_tmp_bytes;
  cl_mem act[RLX__MAX_LAYERS + 1];    /* act[0]: the input slot of the batch in use */
  struct { cl_mem mem; float *ptr; } pinned[4]; /* mapped for their lifetime */
  struct rlx__cl_prof *prof;          /* RLX_COMPUTE_PROFILE=1, else NULL */
  cl_device_id dev;
  /* rlx_model_data_attach: the training set kept here (bytes, labels,
   * the epoch's order, the byte-to-float table) and the slot its batches
   * are gathered into (model.c keeps what was given and checks calls) */
  struct {
    cl_mem pix, lab, order, lut, x, y;
    /* rlx_model_data_batch's gather, queued with the step that takes it
     * (into x and y, or a joint step's rows; batch 0: none since) */
    struct {
      int batch;
      cl_uint first, stride;
    } ask;
  } data;
  cl_mem totals; /* loss, right answers, the loss's compensation: batch_stats */
  int to_totals; /* a step's loss and count go to totals (batch_stats adds them), not read */
  struct rlx__cl_group *grp; /* this context's models that step together, or NULL */
  /* A joint step (ocl_joint) being queued on this model: the batch is
   * parts of joint.rows rows, member j's the j-th (joint.rows 0: none). Its
   * rows' buffers (jw, twice the batch: act[0] the input, y its labels),
   * made at the first, swapped with the model's own while it runs. */
  struct {
    int rows;
    struct ocl *of[2];
  } joint;
  struct {
    cl_mem act[RLX__MAX_LAYERS + 1], y, dz, dz2, row_stats;
  } jw;
  /* Writes to the parameters or momentum (joint_step: whether two models
   * are still known equal), and this model's number in the process. */
  unsigned long id, writes;
  int joint_off; /* RLX_JOINT_STEP=0 */
  struct {
    unsigned long peer, mine, theirs; /* equal (or not) to model peer at these writes */
    int equal;
  } twin;
};

static struct ocl *ocl_of(struct rlx__backend *b) { return (struct ocl *)b; }

/* The profiling event slot of the next command on the compute queue
 * (NULL, "no event", unless RLX_COMPUTE_PROFILE=1). */
#define PEV(o, what, layer) rlx__cl_prof_ev((o)->prof, (what), (layer), 0)

/* A command whose event we make anyway: profiled too. */
static void prof_keep(struct ocl *o, const char *what, int layer, int side, cl_event ev) {
  cl_event *slot = rlx__cl_prof_ev(o->prof, what, layer, side);
  if (slot != NULL && clRetainEvent(ev) == CL_SUCCESS)
    *slot = ev;
}

/* Name the call, the error and the device. */
static int cl_fail(struct ocl *o, const char *what, cl_int e) {
  return rlx__err(RLX_ERR_DEVICE, "%s: %s: %d (%s)", o->base.name, what, (int)e,
                  rlx__cl_errname(e));
}
#define CL_TRY(o, what, call)                                                  \
  do {                                                                         \
    cl_int e_ = (call);                                                        \
    if (e_ != CL_SUCCESS)                                                      \
      return cl_fail((o), (what), e_);                                         \
  } while (0)
#define BLAS_TRY(o, what, call)                                                \
  do {                                                                         \
    CLBlastStatusCode s_ = (call);                                             \
    if (s_ != CLBlastSuccess)                                                  \
      return rlx__err(RLX_ERR_DEVICE, "%s: CLBlast %s: status %d", (o)->base.name, (what), \
                      (int)s_);                                                \
  } while (0)

static int ocl_host_free(struct rlx__backend *b, float *p) {
  struct ocl *o = ocl_of(b);
  for (size_t i = 0; i < RLX__ARRAY_SIZE(o->pinned); i++)
    if (o->pinned[i].ptr == p && p) {
      clEnqueueUnmapMemObject(o->q, o->pinned[i].mem, p, 0, NULL, NULL);
      clFinish(o->q);
      clReleaseMemObject(o->pinned[i].mem);
      o->pinned[i].mem = NULL;
      o->pinned[i].ptr = NULL;
      return 1;
    }
  return 0;
}

/* Page-locked host memory the usual way (a host-allocated buffer, mapped
 * once and kept mapped): NVIDIA's and AMD's drivers DMA straight from it
 * where an ordinary pointer is first copied into a staging area. */
static float *ocl_host_alloc(struct rlx__backend *b, size_t n) {
  struct ocl *o = ocl_of(b);
  for (size_t i = 0; i < RLX__ARRAY_SIZE(o->pinned); i++) {
    if (o->pinned[i].ptr)
      continue;
    cl_int e;
    size_t bytes = n ? n * sizeof(float) : 4;
    cl_mem m = clCreateBuffer(o->ctx, CL_MEM_READ_WRITE | CL_MEM_ALLOC_HOST_PTR, bytes, NULL, &e);
    if (e != CL_SUCCESS)
      return NULL;
    void *p = clEnqueueMapBuffer(o->q, m, CL_TRUE, CL_MAP_READ | CL_MAP_WRITE, 0, bytes, 0, NULL,
                                 NULL, &e);
    if (e != CL_SUCCESS) {
      clReleaseMemObject(m);
      return NULL;
    }
    o->pinned[i].mem = m;
    o->pinned[i].ptr = p;
    return p;
  }
  return NULL;
}

static struct rlx__cl_member member_of(struct ocl *o);
static void joint_release(struct ocl *o);

/* Release the buffer *m if there is one, and forget it; each of
 * *mems[0..n); each of the run m[0..n). */
static void release_one(cl_mem *m) {
  if (*m)
    clReleaseMemObject(*m);
  *m = NULL;
}
static void release_mems(cl_mem *const *mems, size_t n) {
  for (size_t i = 0; i < n; i++)
    release_one(mems[i]);
}
static void release_run(cl_mem *m, size_t n) {
  for (size_t i = 0; i < n; i++)
    release_one(&m[i]);
}

static void ocl_destroy(struct rlx__backend *b) {
  struct ocl *o = ocl_of(b);
  struct rlx__cl_member me = member_of(o);
  rlx__cl_group_leave(o->grp, &me);
  for (size_t i = 0; i < RLX__ARRAY_SIZE(o->pinned); i++)
    if (o->pinned[i].ptr)
      ocl_host_free(b, o->pinned[i].ptr);
  if (o->tq)
    clFinish(o->tq);
  if (o->q)
    clFinish(o->q);
  for (int s = 0; s < 2; s++)
    if (o->pf[s].ev)
      clReleaseEvent(o->pf[s].ev);
  if (o->prof) {
    rlx__cl_prof_collect(o->prof, 1);
    rlx__cl_prof_report(o->prof, o->base.name);
    rlx__cl_prof_free(o->prof);
  }
  cl_mem *mems[] = {&o->params,  &o->velocity, &o->grad,     &o->xin[0], &o->yin[0],
                    &o->xin[1],  &o->yin[1],   &o->dz,       &o->dz2,    &o->row_stats,
                    &o->stats,   &o->gemm_tmp, &o->grad16,   &o->part,   &o->data.pix,
                    &o->data.lab, &o->data.order, &o->data.lut, &o->data.x, &o->data.y,
                    &o->totals};
  release_mems(mems, RLX__ARRAY_SIZE(mems));
  release_run(o->act + 1, RLX__MAX_LAYERS); /* (act[0]: one of the input slots) */
  joint_release(o);
  for (int i = 0; i < K_COUNT; i++)
    if (o->k[i])
      clReleaseKernel(o->k[i]);
  if (o->prog)
    clReleaseProgram(o->prog);
  if (o->q)
    clReleaseCommandQueue(o->q);
  if (o->tq)
    clReleaseCommandQueue(o->tq);
  if (o->ctx)
    rlx__cl_ctx_drop(o->ctx);
  free(o);
}

static size_t round_up(size_t n, size_t m) { return (n + m - 1) / m * m; }

/* Row-major C = A op B through CLBlast, on our scratch buffer when it is
 * big enough (CLBlast otherwise creates and frees one on every call). */
static int gemm(struct ocl *o, const char *what, int layer, CLBlastTranspose ta, CLBlastTranspose tb, size_t m,
                size_t n, size_t k, cl_mem a, size_t aoff, size_t lda, cl_mem b, size_t boff,
                size_t ldb, cl_mem c, size_t coff, size_t ldc) {
  size_t need = 0;
  CLBlastStatusCode st;
  if (o->gemm_tmp &&
      CLBlastSGemmTempBufferSize(CLBlastLayoutRowMajor, ta, tb, m, n, k, aoff, lda, boff, ldb,
                                 coff, ldc, &o->q, &need) == CLBlastSuccess &&
      need <= o->gemm_tmp_bytes)
    st = CLBlastSgemmWithTempBuffer(CLBlastLayoutRowMajor, ta, tb, m, n, k, 1.0f, a, aoff, lda, b,
                                    boff, ldb, 0.0f, c, coff, ldc, &o->q, PEV(o, what, layer),
                                    o->gemm_tmp);
  else
    st = CLBlastSgemm(CLBlastLayoutRowMajor, ta, tb, m, n, k, 1.0f, a, aoff, lda, b, boff, ldb,
                      0.0f, c, coff, ldc, &o->q, PEV(o, what, layer));
  if (st != CLBlastSuccess)
    return rlx__err(RLX_ERR_DEVICE, "%s: CLBlast Sgemm (%s): status %d", o->base.name, what,
                    (int)st);
  return RLX_OK;
}

/* The scratch the largest of the step's GEMMs needs. */
static size_t gemm_scratch(struct ocl *o) {
  const struct rlx__layout *lo = o->base.lo;
  size_t B = (size_t)lo->max_batch, most = 0, need;
  const CLBlastTranspose N = CLBlastTransposeNo, T = CLBlastTransposeYes;
  for (int l = 0; l < lo->nlayers; l++) {
    size_t in = (size_t)lo->sizes[l], out = (size_t)lo->sizes[l + 1];
    if (CLBlastSGemmTempBufferSize(CLBlastLayoutRowMajor, N, T, B, out, in, 0, in, lo->w_off[l],
                                   in, 0, out, &o->q, &need) == CLBlastSuccess && need > most)
      most = need;
    if (CLBlastSGemmTempBufferSize(CLBlastLayoutRowMajor, T, N, out, in, B, 0, out, 0, in,
                                   lo->w_off[l], in, &o->q, &need) == CLBlastSuccess && need > most)
      most = need;
    if (CLBlastSGemmTempBufferSize(CLBlastLayoutRowMajor, N, N, B, in, out, 0, out, lo->w_off[l],
                                   in, 0, in, &o->q, &need) == CLBlastSuccess && need > most)
      most = need;
  }
  return most;
}

/* Kernel k over work items [off, off + n), in work groups of o->wg. */
static int launch_at(struct ocl *o, int k, size_t off, size_t n, int layer) {
  size_t global = round_up(n ? n : 1, o->wg);
  CL_TRY(o, kernel_names[k],
         clEnqueueNDRangeKernel(o->q, o->k[k], 1, off ? &off : NULL, &global, &o->wg, 0, NULL,
                                PEV(o, kernel_names[k], layer)));
  return RLX_OK;
}

static int launch(struct ocl *o, int k, size_t n, int layer) { return launch_at(o, k, 0, n, layer); }

#define ARG(o, kn, i, v) CL_TRY(o, "clSetKernelArg", clSetKernelArg((o)->k[kn], (i), sizeof(v), &(v)))

static int ocl_set_params(struct rlx__backend *b, const float *p) {
  struct ocl *o = ocl_of(b);
  o->writes++;
  size_t bytes = sizeof(float) * b->lo->nparams;
  float zero = 0.0f;
  CL_TRY(o, "write parameters", clEnqueueWriteBuffer(o->q, o->params, CL_TRUE, 0, bytes, p, 0,
                                                     NULL, NULL));
  CL_TRY(o, "clear momentum", clEnqueueFillBuffer(o->q, o->velocity, &zero, sizeof zero, 0, bytes,
                                                  0, NULL, NULL));
  CL_TRY(o, "clFinish", clFinish(o->q));
  return RLX_OK;
}

static int ocl_get_params(struct rlx__backend *b, float *p) {
  struct ocl *o = ocl_of(b);
  CL_TRY(o, "read parameters", clEnqueueReadBuffer(o->q, o->params, CL_TRUE, 0,
                                                   sizeof(float) * b->lo->nparams, p, 0, NULL,
                                                   NULL));
  return RLX_OK;
}

static int ocl_velocity(struct rlx__backend *b, float *v, int set) {
  struct ocl *o = ocl_of(b);
  o->writes += set != 0;
  size_t bytes = sizeof(float) * b->lo->nparams;
  if (set)
    CL_TRY(o, "write momentum",
           clEnqueueWriteBuffer(o->q, o->velocity, CL_TRUE, 0, bytes, v, 0, NULL, NULL));
  else
    CL_TRY(o, "read momentum",
           clEnqueueReadBuffer(o->q, o->velocity, CL_TRUE, 0, bytes, v, 0, NULL, NULL));
  return RLX_OK;
}

static cl_mem alloc(struct ocl *o, size_t bytes, int *fail);
static int gather(struct ocl *o, const struct ocl *m, cl_mem x, cl_mem y, cl_uint row0);

/* out[off + c] = the sum of column c of m (rows x cols; in a joint step
 * parts of joint.rows rows, each summed alone), by the col_sums kernel: a
 * work-group per column; ev: its event (or NULL). */
static int col_sums(struct ocl *o, cl_mem m, cl_uint rows, cl_uint cols, cl_mem out, cl_uint off,
                    cl_event *ev) {
  cl_uint parts = o->joint.rows ? rows / (cl_uint)o->joint.rows : 1;
  rows /= parts;
  ARG(o, K_COL_SUMS, 6, parts);
  ARG(o, K_COL_SUMS, 0, m);
  ARG(o, K_COL_SUMS, 1, rows);
  ARG(o, K_COL_SUMS, 2, cols);
  ARG(o, K_COL_SUMS, 3, out);
  ARG(o, K_COL_SUMS, 4, off);
  CL_TRY(o, "clSetKernelArg", clSetKernelArg(o->k[K_COL_SUMS], 5, sizeof(float) * o->wg, NULL));
  size_t global = cols * o->wg;
  CL_TRY(o, "col_sums", clEnqueueNDRangeKernel(o->q, o->k[K_COL_SUMS], 1, NULL, &global, &o->wg,
                                               0, NULL, ev));
  return RLX_OK;
}

/* The batch's upload into input slot s on queue q (after: an event to
 * wait for first, or NULL): the labels, then the rows, whose event goes
 * to *done (NULL: none). */
static int upload(struct ocl *o, cl_command_queue q, int s, const float *x, const int32_t *y,
                  int batch, cl_event after, cl_event *done) {
  CL_TRY(o, "write labels",
         clEnqueueWriteBuffer(q, o->yin[s], CL_FALSE, 0, sizeof(int32_t) * (size_t)batch, y,
                              after ? 1 : 0, after ? &after : NULL,
                              q == o->q ? PEV(o, "write labels", -1) : NULL));
  CL_TRY(o, "write batch",
         clEnqueueWriteBuffer(q, o->xin[s], CL_FALSE, 0,
                              sizeof(float) * (size_t)batch * o->base.lo->sizes[0], x, 0, NULL,
                              done));
  return RLX_OK;
}

/* The batch on the device: the slot rlx_model_prefetch moved it into
 * (the compute queue waits for that upload), else uploaded now into a slot
 * no prefetched batch waits in. act[0] and ycur then name it. */
static int batch_in(struct ocl *o, const float *x, const int32_t *y, int batch) {
  int m = -1;
  if (o->joint.rows) /* a joint step: its rows are in (joint_inputs) */
    return RLX_OK;
  if (x == NULL) { /* gathered here by rlx_model_data_batch (model.c checked the size) */
    int rc = o->data.ask.batch ? gather(o, o, o->data.x, o->data.y, 0) : RLX_OK;
    o->data.ask.batch = 0;
    o->act[0] = o->data.x;
    o->ycur = o->data.y;
    return rc;
  }
  for (int s = 0; s < 2; s++)
    if (o->pf[s].ev && o->pf[s].x == x && o->pf[s].y == y && o->pf[s].batch == batch &&
        (m < 0 || o->pf[s].order < o->pf[m].order))
      m = s;
  if (m >= 0) {
    cl_int e = clEnqueueBarrierWithWaitList(o->q, 1, &o->pf[m].ev, PEV(o, "prefetched batch", -1));
    clReleaseEvent(o->pf[m].ev);
    o->pf[m].ev = NULL;
    if (e != CL_SUCCESS)
      return cl_fail(o, "wait for the prefetched batch", e);
  } else {
    /* slot 0 unless a batch waits there; both waiting (for other steps):
     * slot 0's is dropped, once its upload is done */
    m = o->pf[0].ev != NULL && o->pf[1].ev == NULL;
    cl_event after = o->pf[m].ev;
    o->pf[m].ev = NULL;
    int rc = upload(o, o->q, m, x, y, batch, after, PEV(o, "write batch", -1));
    if (after)
      clReleaseEvent(after);
    if (rc != RLX_OK)
      return rc;
  }
  o->act[0] = o->xin[m];
  o->ycur = o->yin[m];
  return RLX_OK;
}

/* rlx_model_prefetch: the batch's upload starts now on the transfer
 * queue, into a slot no other prefetched batch waits in. */
static int ocl_prefetch(struct rlx__backend *b, const float *x, const int32_t *y, int batch) {
  struct ocl *o = ocl_of(b);
  const struct rlx__layout *lo = b->lo;
  int bad = 0;
  if (x == NULL) { /* drop them */
    for (int s = 0; s < 2; s++)
      if (o->pf[s].ev) {
        clWaitForEvents(1, &o->pf[s].ev);
        clReleaseEvent(o->pf[s].ev);
        o->pf[s].ev = NULL;
      }
    return RLX_OK;
  }
  if (o->xin[1] == NULL) {
    o->xin[1] = alloc(o, sizeof(float) * (size_t)lo->max_batch * lo->sizes[0], &bad);
    o->yin[1] = alloc(o, sizeof(int32_t) * (size_t)lo->max_batch, &bad);
    if (bad)
      return rlx__err(RLX_ERR_NOMEM, "%s: no device memory for a second batch", o->base.name);
  }
  int s = o->pf[1].ev == NULL ? 1 : o->pf[0].ev == NULL ? 0 : -1;
  if (s < 0)
    return rlx__err(RLX_ERR_ARG, "rlx_model_prefetch: two batches already wait for their steps "
                    "(prefetch with x NULL drops them)");
  int rc = upload(o, o->tq, s, x, y, batch, NULL, &o->pf[s].ev);
  if (rc != RLX_OK)
    return rc;
  prof_keep(o, "prefetch batch", -1, 1, o->pf[s].ev);
  o->pf[s].x = x;
  o->pf[s].y = y;
  o->pf[s].batch = batch;
  o->pf[s].order = ++o->pf_count;
  clFlush(o->tq);
  return RLX_OK;
}

/* One of gemm_tiles' products (kernels.cl says what a_k and b_k mean),
 * C = A B over k into c at coff (m x n), then bias (at params + boff, when
 * bias_on) and ReLU: k split in 2, 4 or 8 when the product has too few
 * tiles to fill the device (fewer than the shape's FILL work-groups), each split at
 * least 64 deep, then sum_parts. */
struct tiles {
  cl_mem a, b, c, ep; /* ep: the epilogue's operand (kernels.cl), the parameters unless set */
  cl_uint a_off, lda, b_off, ldb, coff, m, n, k;
  cl_int a_k, b_k, bias_on, relu;
  cl_uint boff;
  /* A joint step's (o->joint.rows set): m is its rows, split as a member's
   * would be (rows_m), or k is (rows_k: a weight gradient, each member's
   * rows split as alone and their sums added), for the member's bits. */
  cl_int rows_m, rows_k;
};

/* The k split of t (tiles_split's answers): as the shape says for the
 * product, or in a joint step as each member's product alone
 * (group: splits of one member's rows; splits: of all). */
static void tiles_split(const struct ocl *o, const struct tiles *t, cl_uint *tm, cl_uint *tn,
                        cl_uint *splits, cl_uint *per, cl_uint *group) {
  cl_uint rows = (cl_uint)o->joint.rows, m = t->m, k = t->k, parts = 1;
  if (rows && t->rows_m)
    m = rows;
  if (rows && t->rows_k)
    parts = k / rows, k = rows;
  rlx__gemm_shape_split(&o->gs, m, t->n, k, tm, tn, group, per);
  *splits = *group * parts;
}

static int gemm_tiles(struct ocl *o, const char *what, int layer, const struct tiles *t) {
  const struct rlx__gemm_shape *gs = &o->gs;
  cl_uint mn = t->m * t->n, tm, tn, splits, per, group;
  tiles_split(o, t, &tm, &tn, &splits, &per, &group);
  int bad = 0;
  size_t need = splits > 1 ? sizeof(float) * splits * mn : 0;
  if (need > o->part_bytes) {
    if (o->part)
      clReleaseMemObject(o->part);
    if ((o->part = alloc(o, need, &bad)) == NULL || bad) {
      o->part_bytes = 0;
      return rlx__err(RLX_ERR_NOMEM, "%s: no device memory for %u partial products",
                      o->base.name, splits);
    }
    o->part_bytes = need;
  }
  cl_mem part = o->part ? o->part : t->c; /* (one split: part is not read) */
  ARG(o, K_GEMM_TILES, 0, t->a);
  ARG(o, K_GEMM_TILES, 1, t->a_off);
  ARG(o, K_GEMM_TILES, 2, t->lda);
  ARG(o, K_GEMM_TILES, 3, t->a_k);
  ARG(o, K_GEMM_TILES, 4, t->b);
  ARG(o, K_GEMM_TILES, 5, t->b_off);
  ARG(o, K_GEMM_TILES, 6, t->ldb);
  ARG(o, K_GEMM_TILES, 7, t->b_k);
  ARG(o, K_GEMM_TILES, 8, t->m);
  ARG(o, K_GEMM_TILES, 9, t->n);
  ARG(o, K_GEMM_TILES, 10, t->k);
  ARG(o, K_GEMM_TILES, 11, t->c);
  ARG(o, K_GEMM_TILES, 12, t->coff);
  ARG(o, K_GEMM_TILES, 13, part);
  ARG(o, K_GEMM_TILES, 14, per);
  cl_mem ep = t->ep ? t->ep : o->params;
  ARG(o, K_GEMM_TILES, 15, ep);
  ARG(o, K_GEMM_TILES, 16, t->boff);
  ARG(o, K_GEMM_TILES, 17, t->bias_on);
  ARG(o, K_GEMM_TILES, 18, t->relu);
  size_t local[3] = {16, (size_t)gs->wy, 1};
  size_t global[3] = {(t->n + tn - 1) / tn * 16, (t->m + tm - 1) / tm * (size_t)gs->wy, splits};
  CL_TRY(o, "gemm_tiles", clEnqueueNDRangeKernel(o->q, o->k[K_GEMM_TILES], 3, NULL, global, local,
                                                 0, NULL, PEV(o, what, layer)));
  if (splits == 1)
    return RLX_OK;
  ARG(o, K_SUM_PARTS, 0, o->part);
  ARG(o, K_SUM_PARTS, 1, splits);
  ARG(o, K_SUM_PARTS, 2, mn);
  ARG(o, K_SUM_PARTS, 3, t->n);
  ARG(o, K_SUM_PARTS, 4, t->c);
  ARG(o, K_SUM_PARTS, 5, t->coff);
  ARG(o, K_SUM_PARTS, 6, ep);
  ARG(o, K_SUM_PARTS, 7, t->boff);
  ARG(o, K_SUM_PARTS, 8, t->bias_on);
  ARG(o, K_SUM_PARTS, 9, t->relu);
  ARG(o, K_SUM_PARTS, 10, group);
  return launch(o, K_SUM_PARTS, mn, layer);
}

/* Batch in, forward through every layer, then softmax cross-entropy and
 * the per-batch sums; the logits' gradient lands in dz when want_dz. */
static int forward(struct ocl *o, const float *x, const int32_t *y, int batch, int want_dz) {
  const struct rlx__layout *lo = o->base.lo;
  int rc = batch_in(o, x, y, batch);
  if (rc != RLX_OK)
    return rc;
  for (int l = 0; l < lo->nlayers; l++) {
    cl_uint in = (cl_uint)lo->sizes[l], out = (cl_uint)lo->sizes[l + 1];
    if (o->tiles_ok) { /* act W^T, then the bias and ReLU, in one */
      struct tiles t = {.a = o->act[l], .lda = in, .b = o->params, .b_off = (cl_uint)lo->w_off[l],
                        .ldb = in, .c = o->act[l + 1], .m = (cl_uint)batch, .n = out, .k = in,
                        .bias_on = 1, .boff = (cl_uint)lo->b_off[l], .relu = l + 1 < lo->nlayers,
                        .rows_m = 1};
      if ((rc = gemm_tiles(o, "forward", l, &t)) != RLX_OK)
        return rc;
      continue;
    }
    if ((rc = gemm(o, "forward", l, CLBlastTransposeNo, CLBlastTransposeYes, (size_t)batch, out, in,
                   o->act[l], 0, in, o->params, lo->w_off[l], in, o->act[l + 1], 0, out)) != RLX_OK)
      return rc;
    cl_uint boff = (cl_uint)lo->b_off[l], n = (cl_uint)batch * out;
    cl_int relu = l + 1 < lo->nlayers;
    ARG(o, K_BIAS_ACT, 0, o->act[l + 1]);
    ARG(o, K_BIAS_ACT, 1, o->params);
    ARG(o, K_BIAS_ACT, 2, boff);
    ARG(o, K_BIAS_ACT, 3, out);
    ARG(o, K_BIAS_ACT, 4, relu);
    ARG(o, K_BIAS_ACT, 5, n);
    if ((rc = launch(o, K_BIAS_ACT, n, l)) != RLX_OK)
      return rc;
  }
  cl_uint rows = (cl_uint)batch, classes = (cl_uint)lo->sizes[lo->nlayers];
  cl_int wd = want_dz;
  ARG(o, K_SOFTMAX_XENT, 0, o->act[lo->nlayers]);
  ARG(o, K_SOFTMAX_XENT, 1, o->ycur);
  ARG(o, K_SOFTMAX_XENT, 2, rows);
  ARG(o, K_SOFTMAX_XENT, 3, classes);
  ARG(o, K_SOFTMAX_XENT, 4, o->dz);
  ARG(o, K_SOFTMAX_XENT, 5, wd);
  ARG(o, K_SOFTMAX_XENT, 6, o->row_stats);
  cl_uint norm = o->joint.rows ? (cl_uint)o->joint.rows : rows;
  ARG(o, K_SOFTMAX_XENT, 7, norm);
  if ((rc = launch(o, K_SOFTMAX_XENT, rows, -1)) != RLX_OK)
    return rc;
  /* the loss and count: the batch's, or in a joint step each member's
   * rows' into that member's buffers */
  int parts = o->joint.rows ? 2 : 1;
  for (int j = 0; j < parts; j++) {
    struct ocl *to = o->joint.rows ? o->joint.of[j] : o;
    cl_uint first = (cl_uint)j * norm;
    cl_int add = want_dz && to->to_totals; /* (a step's, not an evaluation's) */
    ARG(o, K_BATCH_STATS, 0, o->row_stats);
    ARG(o, K_BATCH_STATS, 1, norm);
    ARG(o, K_BATCH_STATS, 2, to->stats);
    ARG(o, K_BATCH_STATS, 3, to->totals);
    ARG(o, K_BATCH_STATS, 4, add);
    ARG(o, K_BATCH_STATS, 6, first);
    CL_TRY(o, "clSetKernelArg",
           clSetKernelArg(o->k[K_BATCH_STATS], 5, 2 * sizeof(float) * o->wg, NULL));
    CL_TRY(o, "batch_stats", clEnqueueNDRangeKernel(o->q, o->k[K_BATCH_STATS], 1, NULL, &o->wg,
                                                    &o->wg, 0, NULL, PEV(o, "batch_stats", -1)));
  }
  return RLX_OK;
}

static int read_stats(struct ocl *o, float stats[2]) {
  CL_TRY(o, "read loss", clEnqueueReadBuffer(o->q, o->stats, CL_TRUE, 0, 2 * sizeof(float), stats,
                                             0, NULL, PEV(o, "read loss", -1)));
  return RLX_OK;
}

/* A step's loss and count: read (a wait for the whole step) when the
 * caller wants either (want), else added to the totals on the device by
 * the forward pass's batch_stats, where rlx_model_totals reads them:
 * nothing waits. Said before the step (stats_plan), read after it. */
static void stats_plan(struct ocl *o, int want) {
  o->to_totals = !want;
}

static int step_stats(struct ocl *o, int want, float stats[2]) {
  return want ? read_stats(o, stats) : RLX_OK;
}

/* Round layer l's gradient (o->grad) into o->grad16 after event after;
 * *done: when it is there. */
static int round_layer(struct ocl *o, int l, cl_uint bf16, cl_event after, cl_event *done) {
  const struct rlx__layout *lo = o->base.lo;
  cl_uint off = (cl_uint)lo->w_off[l], n = (cl_uint)(lo->b_off[l] + lo->sizes[l + 1] - lo->w_off[l]);
  ARG(o, K_TO_HALF, 0, o->grad);
  ARG(o, K_TO_HALF, 1, o->grad16);
  ARG(o, K_TO_HALF, 2, off);
  ARG(o, K_TO_HALF, 3, n);
  ARG(o, K_TO_HALF, 4, bf16);
  size_t global = round_up(n, o->wg);
  CL_TRY(o, "to_half", clEnqueueNDRangeKernel(o->q, o->k[K_TO_HALF], 1, NULL, &global, &o->wg, 1,
                                              &after, done));
  prof_keep(o, "to_half", l, 0, *done);
  return RLX_OK;
}

/* Layer l's weight gradient into o->grad from its output's gradient dz
 * (batch x out) and its input: a product over the batch, wgrad_tiles'
 * (CLBlast's where the device cannot run it) but for a layer of few
 * outputs (the classifier), which wgrad_small does. */
static int weight_grad(struct ocl *o, int l, int batch, cl_mem dz) {
  const struct rlx__layout *lo = o->base.lo;
  cl_uint in = (cl_uint)lo->sizes[l], out = (cl_uint)lo->sizes[l + 1], rows = (cl_uint)batch;
  cl_uint woff = (cl_uint)lo->w_off[l];
  if (out > SMALL_OUT && o->tiles_ok) { /* dz^T a: both k-major (k = the batch's rows) */
    struct tiles t = {.a = dz, .lda = out, .a_k = 1, .b = o->act[l], .ldb = in, .b_k = 1,
                      .c = o->grad, .coff = woff, .m = out, .n = in, .k = rows, .rows_k = 1};
    return gemm_tiles(o, "weight gradient", l, &t);
  }
  if (out > SMALL_OUT || o->wg < 16)
    return gemm(o, "weight gradient", l, CLBlastTransposeYes, CLBlastTransposeNo, out, in,
                (size_t)batch, dz, 0, out, o->act[l], 0, in, o->grad, lo->w_off[l], in);
  cl_uint parts = o->joint.rows ? rows / (cl_uint)o->joint.rows : 1; /* (as col_sums) */
  rows /= parts;
  ARG(o, K_WGRAD_SMALL, 8, parts);
  ARG(o, K_WGRAD_SMALL, 0, dz);
  ARG(o, K_WGRAD_SMALL, 1, o->act[l]);
  ARG(o, K_WGRAD_SMALL, 2, rows);
  ARG(o, K_WGRAD_SMALL, 3, out);
  ARG(o, K_WGRAD_SMALL, 4, in);
  ARG(o, K_WGRAD_SMALL, 5, o->grad);
  ARG(o, K_WGRAD_SMALL, 6, woff);
  CL_TRY(o, "clSetKernelArg",
         clSetKernelArg(o->k[K_WGRAD_SMALL], 7, sizeof(float) * SMALL_OUT * o->wg, NULL));
  size_t global = (in + 7) / 8 * o->wg;
  CL_TRY(o, "wgrad_small", clEnqueueNDRangeKernel(o->q, o->k[K_WGRAD_SMALL], 1, NULL, &global,
                                                  &o->wg, 0, NULL, PEV(o, "weight gradient", l)));
  return RLX_OK;
}

/* Layer l's bias gradient, dz's column sums; *done: its event (the layer's
 * gradient is then final). */
static int bias_grad(struct ocl *o, int l, int batch, cl_mem dz, cl_event *done) {
  const struct rlx__layout *lo = o->base.lo;
  int rc = col_sums(o, dz, (cl_uint)batch, (cl_uint)lo->sizes[l + 1], o->grad,
                    (cl_uint)lo->b_off[l], done);
  if (rc == RLX_OK)
    prof_keep(o, "bias gradient", l, 0, *done);
  return rc;
}

/* Forward and backward into o->grad; each layer's part is downloaded to g
 * as soon as it is final (g NULL: it stays on the device); half 1 or 2:
 * rounded on the device to float16 or bfloat16 first, and g is 16-bit. */
static int backprop(struct ocl *o, const float *x, const int32_t *y, int batch, void *g,
                    int half, cl_event *ev) {
  const struct rlx__layout *lo = o->base.lo;
  rlx__cl_prof_collect(o->prof, 1); /* a step begins: the last one (and its update) ended */
  int rc = forward(o, x, y, batch, 1);
  if (rc != RLX_OK)
    return rc;
  cl_mem dz = o->dz, dprev = o->dz2;
  for (int l = lo->nlayers - 1; l >= 0; l--) {
    size_t in = (size_t)lo->sizes[l], out = (size_t)lo->sizes[l + 1];
    cl_event done;
    if ((rc = weight_grad(o, l, batch, dz)) != RLX_OK || (rc = bias_grad(o, l, batch, dz, &done)) != RLX_OK)
      return rc;
    /* This layer's gradient is final: download it on the second queue
     * while the compute queue goes on to the layers below. */
    size_t es = half ? 2 : sizeof(float), count = lo->b_off[l] + out - lo->w_off[l];
    if (g != NULL && half) {
      cl_event rounded;
      if ((rc = round_layer(o, l, (cl_uint)(half - 1), done, &rounded)) != RLX_OK) {
        clReleaseEvent(done);
        return rc;
      }
      clReleaseEvent(done);
      done = rounded;
    }
    cl_int e = g == NULL ? CL_SUCCESS
                         : clEnqueueReadBuffer(o->tq, half ? o->grad16 : o->grad, CL_FALSE,
                                               es * lo->w_off[l], es * count,
                                               (char *)g + es * lo->w_off[l], 1, &done,
                                               ev ? &ev[l]
                                                  : rlx__cl_prof_ev(o->prof, "read gradient",
                                                                    l, 1));
    clReleaseEvent(done);
    if (e != CL_SUCCESS) {
      clFinish(o->tq);
      return cl_fail(o, "read gradient", e);
    }
    if (l == 0)
      break;
    /* dz W, then back through the ReLU: gemm_tiles folds it in (relu 2,
     * the layer's output as the epilogue's operand), after CLBlast a
     * kernel of its own */
    struct tiles t = {.a = dz, .lda = (cl_uint)out, .b = o->params, .b_off = (cl_uint)lo->w_off[l],
                      .ldb = (cl_uint)in, .b_k = 1, .c = dprev, .m = (cl_uint)batch,
                      .n = (cl_uint)in, .k = (cl_uint)out, .ep = o->act[l], .relu = 2,
                      .rows_m = 1};
    if (o->tiles_ok) {
      if ((rc = gemm_tiles(o, "backward", l, &t)) != RLX_OK)
        return rc;
    } else {
      if ((rc = gemm(o, "backward", l, CLBlastTransposeNo, CLBlastTransposeNo, (size_t)batch, in,
                     out, dz, 0, out, o->params, lo->w_off[l], in, dprev, 0, in)) != RLX_OK)
        return rc;
      cl_uint n = (cl_uint)((size_t)batch * in);
      ARG(o, K_RELU_BACK, 0, dprev);
      ARG(o, K_RELU_BACK, 1, o->act[l]);
      ARG(o, K_RELU_BACK, 2, n);
      if ((rc = launch(o, K_RELU_BACK, n, l)) != RLX_OK)
        return rc;
    }
    cl_mem swap = dz;
    dz = dprev;
    dprev = swap;
  }
  return RLX_OK;
}

static int grad_as(struct rlx__backend *b, const float *x, const int32_t *y, int batch, void *g,
                   int half, float *loss, int *correct) {
  struct ocl *o = ocl_of(b);
  const struct rlx__layout *lo = b->lo;
  int bad = 0;
  if (half && o->grad16 == NULL && (o->grad16 = alloc(o, 2 * lo->nparams, &bad)) == NULL)
    return rlx__err(RLX_ERR_NOMEM, "%s: no device memory for a 16-bit gradient", o->base.name);
  stats_plan(o, loss || correct);
  int rc = backprop(o, x, y, batch, g, half, NULL);
  if (rc != RLX_OK) {
    clFinish(o->tq);
    return rc;
  }
  float stats[2] = {0.0f, 0.0f};
  rc = step_stats(o, loss || correct, stats);
  cl_int e = clFinish(o->tq);
  rlx__cl_prof_collect(o->prof, 0);
  if (rc != RLX_OK)
    return rc;
  if (e != CL_SUCCESS)
    return cl_fail(o, "read gradient", e);
  if (rlx__fault_compute("zeros")) {
    /* Injected fault (test builds): a driver that says yes and computes nothing. */
    memset(g, 0, (half ? 2 : sizeof(float)) * lo->nparams);
    stats[0] = stats[1] = 0.0f;
  }
  if (loss)
    *loss = stats[0] / (float)batch;
  if (correct)
    *correct = (int)stats[1];
  return RLX_OK;
}

static int ocl_grad(struct rlx__backend *b, const float *x, const int32_t *y, int batch, float *g,
                    float *loss, int *correct) {
  return grad_as(b, x, y, batch, g, 0, loss, correct);
}

static int ocl_grad_half(struct rlx__backend *b, const float *x, const int32_t *y, int batch,
                         uint16_t *g, int bf16, float *loss, int *correct) {
  return grad_as(b, x, y, batch, g, bf16 ? 2 : 1, loss, correct);
}

/* The SGD kernel on o->grad, enqueued. */
/* (on parameters [off, off + n): the kernel stops at index off + n) */
static int sgd_from(struct ocl *o, cl_mem grad, float lr, size_t off, size_t n) {
  cl_uint end = (cl_uint)(off + n);
  float mu = o->base.momentum;
  o->writes++;
  ARG(o, K_SGD, 0, o->params);
  ARG(o, K_SGD, 1, o->velocity);
  ARG(o, K_SGD, 2, grad);
  ARG(o, K_SGD, 3, lr);
  ARG(o, K_SGD, 4, mu);
  ARG(o, K_SGD, 5, end);
  return launch_at(o, K_SGD, off, n, -1);
}
static int sgd(struct ocl *o, float lr, size_t off, size_t n) {
  return sgd_from(o, o->grad, lr, off, n);
}

static int ocl_apply(struct rlx__backend *b, const float *g, float lr) {
  struct ocl *o = ocl_of(b);
  CL_TRY(o, "write gradient", clEnqueueWriteBuffer(o->q, o->grad, CL_FALSE, 0,
                                                   sizeof(float) * b->lo->nparams, g, 0, NULL,
                                                   PEV(o, "write gradient", -1)));
  int rc = sgd(o, lr, 0, o->base.lo->nparams);
  if (rc != RLX_OK)
    return rc;
  /* The caller may reuse g as soon as we return; unless g is the model's
   * own gradient buffer, which only the model writes next (the next
   * gradient's download, queued behind this upload): then nothing waits,
   * and with ranks sharing a device this rank does not wait for the
   * other's kernels to run its update. */
  CL_TRY(o, "clFinish", g == b->own_grad ? clFlush(o->q) : clFinish(o->q));
  rlx__cl_prof_collect(o->prof, 0);
  return RLX_OK;
}

/* Backward as ocl_grad, every layer's download an event of its own:
 * while the device computes the layers below, the host waits for each in
 * turn and hands it over (done). */
static int ocl_grad_layers(struct rlx__backend *b, const float *x, const int32_t *y, int batch,
                           float *g, int (*done)(int l, void *arg), void *arg, float *loss,
                           int *correct) {
  struct ocl *o = ocl_of(b);
  const struct rlx__layout *lo = b->lo;
  cl_event ev[RLX__MAX_LAYERS] = {0};
  stats_plan(o, loss || correct);
  int rc = backprop(o, x, y, batch, g, 0, ev), stop = 0;
  clFlush(o->q);
  clFlush(o->tq);
  for (int l = lo->nlayers - 1; l >= 0; l--) {
    if (ev[l] == NULL)
      continue;
    cl_int e = clWaitForEvents(1, &ev[l]);
    clReleaseEvent(ev[l]);
    if (rc == RLX_OK && e != CL_SUCCESS)
      rc = cl_fail(o, "read gradient", e);
    if (rc == RLX_OK && !stop && (stop = done(l, arg)) != 0)
      rc = stop;
  }
  if (rc != RLX_OK) {
    clFinish(o->q);
    clFinish(o->tq);
    return rc;
  }
  float stats[2];
  rc = step_stats(o, loss || correct, stats);
  rlx__cl_prof_collect(o->prof, 0);
  if (rc != RLX_OK)
    return rc;
  if (loss)
    *loss = stats[0] / (float)batch;
  if (correct)
    *correct = (int)stats[1];
  return RLX_OK;
}

/* A bucket's SGD: its gradient up, the kernel over its range only. */
static int ocl_apply_range(struct rlx__backend *b, const float *g, size_t off, size_t n, float lr) {
  struct ocl *o = ocl_of(b);
  CL_TRY(o, "write gradient", clEnqueueWriteBuffer(o->q, o->grad, CL_TRUE, sizeof(float) * off,
                                                   sizeof(float) * n, g + off, 0, NULL,
                                                   PEV(o, "write gradient", -1)));
  return sgd(o, lr, off, n);
}

/* The 16-bit gradient up, widened on the device, then SGD. */
static int ocl_apply_half(struct rlx__backend *b, const uint16_t *g, int bf16, float lr) {
  struct ocl *o = ocl_of(b);
  int bad = 0;
  cl_uint n = (cl_uint)b->lo->nparams, bf = bf16 != 0;
  if (o->grad16 == NULL && (o->grad16 = alloc(o, 2 * (size_t)n, &bad)) == NULL)
    return rlx__err(RLX_ERR_NOMEM, "%s: no device memory for a 16-bit gradient", o->base.name);
  CL_TRY(o, "write gradient", clEnqueueWriteBuffer(o->q, o->grad16, CL_FALSE, 0, 2 * (size_t)n, g,
                                                   0, NULL, PEV(o, "write gradient", -1)));
  ARG(o, K_FROM_HALF, 0, o->grad16);
  ARG(o, K_FROM_HALF, 1, o->grad);
  ARG(o, K_FROM_HALF, 2, n);
  ARG(o, K_FROM_HALF, 3, bf);
  int rc = launch(o, K_FROM_HALF, n, -1);
  if (rc == RLX_OK)
    rc = sgd(o, lr, 0, o->base.lo->nparams);
  if (rc != RLX_OK)
    return rc;
  CL_TRY(o, "clFinish", clFinish(o->q)); /* the caller may reuse g */
  rlx__cl_prof_collect(o->prof, 0);
  return RLX_OK;
}

/* A step's end, its update queued (rc so far): its loss and count read
 * when asked for, else added to the totals on the device; the wait for an
 * upload from the caller's x. */
static int step_end(struct ocl *o, int rc, const float *x, int batch, float *loss, int *correct) {
  float stats[2];
  if (rc == RLX_OK)
    rc = step_stats(o, loss || correct, stats);
  if (rc == RLX_OK && !(loss || correct)) {
    cl_int e = x != NULL ? clFinish(o->q) : clFlush(o->q);
    if (e != CL_SUCCESS)
      rc = cl_fail(o, "the step", e);
  }
  rlx__cl_prof_collect(o->prof, 0);
  if (rc != RLX_OK)
    return rc;
  if (loss)
    *loss = stats[0] / (float)batch;
  if (correct)
    *correct = (int)stats[1];
  return RLX_OK;
}

/* One rank's step: the gradient never leaves the device; the loss and the
 * count, read last, are the one wait. Without them, and with a batch
 * gathered on the device (x NULL), nothing waits: the host returns while
 * the device computes, and the next step queues behind this one. A batch
 * from the host is uploaded from x, which the caller may reuse at once:
 * that upload is waited for. */
static int ocl_step(struct rlx__backend *b, const float *x, const int32_t *y, int batch, float lr,
                    float *loss, int *correct) {
  struct ocl *o = ocl_of(b);
  stats_plan(o, loss || correct);
  int rc = backprop(o, x, y, batch, NULL, 0, NULL);
  if (rc == RLX_OK)
    rc = sgd(o, lr, 0, o->base.lo->nparams);
  return step_end(o, rc, x, batch, loss, correct);
}

static struct rlx__cl_member member_of(struct ocl *o) {
  return (struct rlx__cl_member){.self = o, .name = o->base.name, .owner = o->base.owner,
                                 .ctx = o->ctx, .grad = o->grad, .n = o->base.lo->nparams};
}

/* rlx__cl_average_fn: the members' average on this model's queue. */
static int ocl_average(const struct rlx__cl_member *me, cl_mem avg, int members,
                       const cl_mem *grads, const cl_event *ready, cl_event *done) {
  struct ocl *o = (struct ocl *)me->self;
  cl_uint n = (cl_uint)me->n;
  CL_TRY(o, "wait for the members' gradients",
         clEnqueueBarrierWithWaitList(o->q, (cl_uint)members, ready, NULL));
  for (int j = 0; j < members; j++) {
    cl_uint first = j == 0;
    float scale = j == members - 1 ? 1.0f / (float)members : 0.0f;
    ARG(o, K_GROUP_SUM, 0, avg);
    ARG(o, K_GROUP_SUM, 1, grads[j]);
    ARG(o, K_GROUP_SUM, 2, n);
    ARG(o, K_GROUP_SUM, 3, first);
    ARG(o, K_GROUP_SUM, 4, scale);
    int rc = launch(o, K_GROUP_SUM, n, -1);
    if (rc != RLX_OK)
      return rc;
  }
  CL_TRY(o, "mark the average", clEnqueueMarkerWithWaitList(o->q, 0, NULL, done));
  CL_TRY(o, "clFlush", clFlush(o->q));
  return RLX_OK;
}

/* Both members' update in one kernel on o's queue, after what is queued
 * there: from (g0 + g1) / 2, or from g0 / 2 when summed (g0 is both
 * members' sum already); the other member's queue waits for it. */
static int pair_queue(struct ocl *o, const struct rlx__cl_member *at, cl_mem g0, cl_mem g1,
                      cl_int summed) {
  struct ocl *a = (struct ocl *)at[0].self, *b = (struct ocl *)at[1].self;
  cl_uint n = (cl_uint)at[0].n;
  float mu0 = a->base.momentum, mu1 = b->base.momentum;
  cl_event done;
  if (rlx__fault_compute("update")) /* (test builds: a driver failing the update) */
    return rlx__err(RLX_ERR_DEVICE, "%s: injected fault: no update", o->base.name);
  if (at[0].lr != at[1].lr || mu0 != mu1) /* (equal parameters would part here) */
    a->writes++, b->writes++;
  ARG(o, K_PAIR_UPDATE, 0, g0);
  ARG(o, K_PAIR_UPDATE, 1, g1);
  ARG(o, K_PAIR_UPDATE, 2, a->params);
  ARG(o, K_PAIR_UPDATE, 3, a->velocity);
  ARG(o, K_PAIR_UPDATE, 4, at[0].lr);
  ARG(o, K_PAIR_UPDATE, 5, mu0);
  ARG(o, K_PAIR_UPDATE, 6, b->params);
  ARG(o, K_PAIR_UPDATE, 7, b->velocity);
  ARG(o, K_PAIR_UPDATE, 8, at[1].lr);
  ARG(o, K_PAIR_UPDATE, 9, mu1);
  ARG(o, K_PAIR_UPDATE, 10, n);
  ARG(o, K_PAIR_UPDATE, 11, summed);
  size_t global = round_up(n, o->wg);
  CL_TRY(o, "pair_update", clEnqueueNDRangeKernel(o->q, o->k[K_PAIR_UPDATE], 1, NULL, &global,
                                                  &o->wg, 0, NULL, &done));
  prof_keep(o, "pair_update", -1, 0, done);
  cl_int e = clFlush(o->q);
  struct ocl *other = o == a ? b : a;
  if (e == CL_SUCCESS) /* (its next step reads what this wrote; its own thread flushes it) */
    e = clEnqueueBarrierWithWaitList(other->q, 1, &done, NULL);
  clReleaseEvent(done);
  return e == CL_SUCCESS ? RLX_OK : cl_fail(o, "the members' update", e);
}

/* A two-member step's end in one kernel on the queuing member's queue
 * (me): once both gradients are ready, their average and both updates
 * (pair_update). In place of ocl_average's two sums, its marker and the
 * two updates: fewer commands through the driver, whose rate bounds a
 * small model's shared step. */
static int ocl_pair(const struct rlx__cl_member *me, const struct rlx__cl_member *at,
                    const cl_event ready[2]) {
  struct ocl *o = (struct ocl *)me->self, *a = (struct ocl *)at[0].self,
             *b = (struct ocl *)at[1].self;
  CL_TRY(o, "wait for the members' gradients", clEnqueueBarrierWithWaitList(o->q, 2, ready, NULL));
  return pair_queue(o, at, a->grad, b->grad, 0);
}

/* ---- The joint step: two members that hold the same parameters and
 * momentum (data-parallel ranks sharing a device, after the broadcast
 * that starts them) step once over both batches, member 0's rows then
 * member 1's, instead of each over its own: one forward and backward pass
 * of twice the rows, where two passes took about 2.4 times one on an
 * H100 for the small model at batch 64, whose step is bound by the
 * driver's command rate. Bit for bit the two passes: every sum over a
 * member's rows is taken over its rows alone, as its own pass takes it,
 * and the members' sums added in index order as their average adds them
 * (softmax's 1/rows a member's; the weight gradients' k split at the
 * member's boundary, each member's split as alone; col_sums and
 * wgrad_small a part each); the products along the rows split k as for
 * the member's batch. RLX_JOINT_STEP=0 turns it off. */

/* Whether a and b hold the same parameters and momentum: known from the
 * last comparison while neither was written since, else compared now
 * (a read of both, once a run where nothing else writes them). */
static int twins(struct ocl *a, struct ocl *b) {
  if (a->twin.peer == b->id && a->twin.mine == a->writes && a->twin.theirs == b->writes)
    return a->twin.equal;
  size_t bytes = sizeof(float) * a->base.lo->nparams;
  char *h = malloc(4 * bytes);
  if (h == NULL)
    return 0;
  cl_int e = clEnqueueReadBuffer(a->q, a->params, CL_FALSE, 0, bytes, h, 0, NULL, NULL);
  if (e == CL_SUCCESS)
    e = clEnqueueReadBuffer(a->q, a->velocity, CL_TRUE, 0, bytes, h + bytes, 0, NULL, NULL);
  if (e == CL_SUCCESS)
    e = clEnqueueReadBuffer(b->q, b->params, CL_FALSE, 0, bytes, h + 2 * bytes, 0, NULL, NULL);
  if (e == CL_SUCCESS)
    e = clEnqueueReadBuffer(b->q, b->velocity, CL_TRUE, 0, bytes, h + 3 * bytes, 0, NULL, NULL);
  int equal = e == CL_SUCCESS && memcmp(h, h + 2 * bytes, 2 * bytes) == 0;
  free(h);
  if (e != CL_SUCCESS)
    return 0;
  a->twin.peer = b->id, a->twin.mine = a->writes, a->twin.theirs = b->writes;
  b->twin.peer = a->id, b->twin.mine = b->writes, b->twin.theirs = a->writes;
  a->twin.equal = b->twin.equal = equal;
  return equal;
}

static int same_model(const struct ocl *a, const struct ocl *b) {
  const struct rlx__layout *x = a->base.lo, *y = b->base.lo;
  if (x->nlayers != y->nlayers || a->base.momentum != b->base.momentum ||
      memcmp(&a->gs, &b->gs, sizeof a->gs) != 0 || !a->tiles_ok || !b->tiles_ok)
    return 0;
  for (int l = 0; l <= x->nlayers; l++)
    if (x->sizes[l] != y->sizes[l])
      return 0;
  return 1;
}

/* Whether the step of at[0] and at[1] may be joint, queued by o. */
static int joinable(struct ocl *o, const struct rlx__cl_member *at) {
  struct ocl *a = (struct ocl *)at[0].self, *b = (struct ocl *)at[1].self;
  const struct rlx__layout *lo = o->base.lo;
  int rows = at[0].batch;
  if (o->joint_off || rlx__fault_compute("gradient") ||
      rlx__fault_compute("update") || !same_model(a, b) || o->wg < 16 ||
      at[1].batch != rows || rows > lo->max_batch || at[0].lr != at[1].lr)
    return 0;
  /* each member's weight gradient split at whole chunks of its rows */
  for (int l = 0; l < lo->nlayers; l++) {
    struct tiles t = {.m = (cl_uint)lo->sizes[l + 1], .n = (cl_uint)lo->sizes[l],
                      .k = (cl_uint)rows};
    cl_uint tm, tn, splits, per, group;
    tiles_split(o, &t, &tm, &tn, &splits, &per, &group);
    if (lo->sizes[l + 1] > SMALL_OUT && per * splits != (cl_uint)rows)
      return 0;
  }
  return twins(a, b);
}

static void joint_release(struct ocl *o) {
  cl_mem *mems[] = {&o->jw.y, &o->jw.dz, &o->jw.dz2, &o->jw.row_stats};
  release_mems(mems, RLX__ARRAY_SIZE(mems));
  release_run(o->jw.act, RLX__MAX_LAYERS + 1);
}

/* The joint rows' buffers, twice the batch (made at the first joint
 * step): 1 when they are there, 0 when the device has no room for them
 * (the members step by parts, as without). */
static int joint_buffers(struct ocl *o) {
  const struct rlx__layout *lo = o->base.lo;
  size_t B = 2 * (size_t)lo->max_batch;
  int bad = 0;
  if (o->jw.y)
    return 1;
  for (int l = 0; l <= lo->nlayers; l++)
    o->jw.act[l] = alloc(o, sizeof(float) * B * lo->sizes[l], &bad);
  o->jw.y = alloc(o, sizeof(int32_t) * B, &bad);
  o->jw.dz = alloc(o, sizeof(float) * B * lo->max_width, &bad);
  o->jw.dz2 = alloc(o, sizeof(float) * B * lo->max_width, &bad);
  o->jw.row_stats = alloc(o, 2 * sizeof(float) * B, &bad);
  if (bad)
    joint_release(o);
  return !bad;
}

/* The model's own rows' buffers for the joint step's, or back. */
static void joint_swap(struct ocl *o) {
  cl_mem t;
#define SWAP(x, y) (t = (x), (x) = (y), (y) = t)
  for (int l = 0; l <= o->base.lo->nlayers; l++)
    SWAP(o->act[l], o->jw.act[l]);
  SWAP(o->ycur, o->jw.y);
  SWAP(o->dz, o->jw.dz);
  SWAP(o->dz2, o->jw.dz2);
  SWAP(o->row_stats, o->jw.row_stats);
#undef SWAP
}

/* Each member's batch into its part of the joint rows on o's queue:
 * gathered there when it is asked for from the set on the device, else
 * as its own step takes it (on its queue), then copied. */
static int joint_inputs(struct ocl *o, const struct rlx__cl_member *at, int rows) {
  size_t in = (size_t)o->base.lo->sizes[0];
  for (int j = 0; j < 2; j++) {
    struct ocl *m = (struct ocl *)at[j].self;
    cl_event ev = NULL;
    if (at[j].x == NULL && m->data.ask.batch == rows) { /* (its set, order and table: written, */
      int rc = gather(o, m, o->jw.act[0], o->jw.y, (cl_uint)(j * rows)); /* blocking) */
      if (rc != RLX_OK)
        return rc;
      continue;
    }
    int rc = batch_in(m, at[j].x, at[j].y, rows);
    if (rc != RLX_OK)
      return rc;
    cl_int e = m == o ? CL_SUCCESS : clEnqueueMarkerWithWaitList(m->q, 0, NULL, &ev);
    if (e == CL_SUCCESS && ev)
      e = clFlush(m->q);
    if (e == CL_SUCCESS)
      e = clEnqueueCopyBuffer(o->q, m->act[0], o->jw.act[0], 0, sizeof(float) * j * rows * in,
                              sizeof(float) * rows * in, ev ? 1 : 0, ev ? &ev : NULL,
                              PEV(o, "joint batch", -1));
    if (e == CL_SUCCESS)
      e = clEnqueueCopyBuffer(o->q, m->ycur, o->jw.y, 0, sizeof(int32_t) * j * rows,
                              sizeof(int32_t) * rows, 0, NULL, NULL);
    if (ev)
      clReleaseEvent(ev);
    if (e != CL_SUCCESS)
      return cl_fail(o, "the joint step's batch", e);
  }
  return RLX_OK;
}

/* rlx__cl_member's joint: the whole step of both members on me's queue. */
static int ocl_joint(const struct rlx__cl_member *me, const struct rlx__cl_member *at) {
  struct ocl *o = (struct ocl *)me->self;
  if (!joinable(o, at) || !joint_buffers(o))
    return RLX__CL_NOT_JOINT;
  if (rlx__fault_compute("joint")) /* (test builds: a driver failing the joint step) */
    return rlx__err(RLX_ERR_DEVICE, "%s: injected fault: no joint step", o->base.name);
  int rows = at[0].batch, rc = joint_inputs(o, at, rows);
  if (rc != RLX_OK)
    return rc;
  o->joint.rows = rows;
  o->joint.of[0] = (struct ocl *)at[0].self;
  o->joint.of[1] = (struct ocl *)at[1].self;
  joint_swap(o);
  rc = backprop(o, NULL, NULL, 2 * rows, NULL, 0, NULL);
  joint_swap(o);
  o->joint.rows = 0;
  if (rc != RLX_OK)
    return rc;
  return pair_queue(o, at, o->grad, o->grad, 1);
}

/* A member's parts of a shared step (rlx__cl_group_step), queued by the
 * member that arrives last, on this member's queue. */
static int shared_gradient(const struct rlx__cl_member *me, cl_event *ready) {
  struct ocl *o = (struct ocl *)me->self;
  if (rlx__fault_compute("gradient")) /* (test builds: a driver failing the step) */
    return rlx__err(RLX_ERR_DEVICE, "%s: injected fault: no gradient", o->base.name);
  int rc = backprop(o, me->x, me->y, me->batch, NULL, 0, NULL);
  if (rc != RLX_OK)
    return rc;
  CL_TRY(o, "mark the gradient", clEnqueueMarkerWithWaitList(o->q, 0, NULL, ready));
  cl_int e = clFlush(o->q); /* (the device starts on it while the next member's is queued) */
  if (e != CL_SUCCESS) {
    clReleaseEvent(*ready);
    return cl_fail(o, "clFlush", e);
  }
  return RLX_OK;
}

static int shared_update(const struct rlx__cl_member *me, cl_mem avg, cl_event done) {
  struct ocl *o = (struct ocl *)me->self;
  CL_TRY(o, "wait for the average", clEnqueueBarrierWithWaitList(o->q, 1, &done, NULL));
  return sgd_from(o, avg, me->lr, 0, o->base.lo->nparams);
}

static int ocl_step_shared(struct rlx__backend *b, const float *x, const int32_t *y, int batch,
                           int index, int members, float lr, float *loss, int *correct) {
  struct ocl *o = ocl_of(b);
  if (!o->grp)
    return rlx__err(RLX_ERR_STATE, "%s: rlx_model_step_shared: this model's context is its own",
                    o->base.name);
  struct rlx__cl_member me = member_of(o);
  me.x = x;
  me.y = y;
  me.batch = batch;
  me.lr = lr;
  me.gradient = shared_gradient;
  me.update = shared_update;
  me.pair = ocl_pair;
  me.joint = ocl_joint;
  stats_plan(o, loss || correct); /* (whichever member's thread queues this one's gradient) */
  int rc = rlx__cl_group_step(o->grp, &me, index, members, ocl_average);
  return step_end(o, rc, x, batch, loss, correct);
}

static int ocl_eval(struct rlx__backend *b, const float *x, const int32_t *y, int batch,
                    double *loss_sum, long *correct) {
  struct ocl *o = ocl_of(b);
  float stats[2];
  struct rlx__cl_prof *prof = o->prof; /* evaluation is not a step: not profiled */
  o->prof = NULL;
  int rc = forward(o, x, y, batch, 0);
  if (rc == RLX_OK)
    rc = read_stats(o, stats);
  o->prof = prof;
  if (rc != RLX_OK)
    return rc;
  *loss_sum += stats[0];
  *correct += (long)stats[1];
  return RLX_OK;
}

/* rlx_model_data_attach: the set's bytes and labels, and the table that
 * widens a byte as the host does, uploaded once; room for an epoch's
 * order and a gathered batch. limit: the bytes the caller lets it take
 * (0: the device's own limit, half its memory, the rest for the model). */
static int ocl_data_attach(struct rlx__backend *b, const uint8_t *pix, const uint8_t *lab,
                           size_t count, const float lut[256], size_t limit) {
  struct ocl *o = ocl_of(b);
  const struct rlx__layout *lo = b->lo;
  size_t dim = (size_t)lo->sizes[0], B = (size_t)lo->max_batch;
  size_t need = count * dim + count + sizeof(uint32_t) * count + 256 * sizeof(float) +
                B * dim * sizeof(float) + B * sizeof(int32_t);
  cl_ulong mem = 0, one = 0;
  clGetDeviceInfo(o->dev, CL_DEVICE_GLOBAL_MEM_SIZE, sizeof mem, &mem, NULL);
  clGetDeviceInfo(o->dev, CL_DEVICE_MAX_MEM_ALLOC_SIZE, sizeof one, &one, NULL);
  if (limit == 0)
    limit = (size_t)(mem / 2);
  if (need > limit || count * dim > one)
    return rlx__err(RLX_ERR_NOMEM, "%s: the training set takes %.1f MB on the device, more than "
                    "the %.1f MB it may have there (%s)", o->base.name, need / 1e6,
                    (need > limit ? limit : one) / 1e6,
                    need > limit ? "half the device's memory, or RLX_DEVICE_DATA_MAX"
                                 : "the device's largest buffer");
  if (o->data.pix != NULL)
    return rlx__err(RLX_ERR_STATE, "%s: a training set is attached already", o->base.name);
  int bad = 0;
  o->data.pix = alloc(o, count * dim, &bad);
  o->data.lab = alloc(o, count, &bad);
  o->data.order = alloc(o, sizeof(uint32_t) * count, &bad);
  o->data.lut = alloc(o, 256 * sizeof(float), &bad);
  o->data.x = alloc(o, sizeof(float) * B * dim, &bad);
  o->data.y = alloc(o, sizeof(int32_t) * B, &bad);
  cl_int e = CL_SUCCESS;
  if (!bad) {
    e = clEnqueueWriteBuffer(o->q, o->data.pix, CL_FALSE, 0, count * dim, pix, 0, NULL, NULL);
    if (e == CL_SUCCESS)
      e = clEnqueueWriteBuffer(o->q, o->data.lab, CL_FALSE, 0, count, lab, 0, NULL, NULL);
    if (e == CL_SUCCESS)
      e = clEnqueueWriteBuffer(o->q, o->data.lut, CL_FALSE, 0, 256 * sizeof(float), lut, 0, NULL,
                               NULL);
    if (e == CL_SUCCESS)
      e = clFinish(o->q);
  }
  if (bad || e != CL_SUCCESS) {
    cl_mem *mems[] = {&o->data.pix, &o->data.lab, &o->data.order, &o->data.lut, &o->data.x,
                      &o->data.y};
    release_mems(mems, RLX__ARRAY_SIZE(mems));
    if (bad)
      return rlx__err(RLX_ERR_NOMEM, "%s: no device memory for the training set (%.1f MB)",
                      o->base.name, need / 1e6);
    return cl_fail(o, "upload the training set", e);
  }
  return RLX_OK;
}

/* rlx_model_data_order: the epoch's order, n positions (a blocking write:
 * once an epoch, and the caller's array is free when it returns). */
static int ocl_data_order(struct rlx__backend *b, const uint32_t *order, size_t n) {
  struct ocl *o = ocl_of(b);
  o->data.ask.batch = 0; /* (model.c drops it too) */
  CL_TRY(o, "write the epoch's order",
         clEnqueueWriteBuffer(o->q, o->data.order, CL_TRUE, 0, sizeof(uint32_t) * n, order, 0,
                              NULL, PEV(o, "write order", -1)));
  return RLX_OK;
}

/* rlx_model_data_batch: the batch of positions first, first + stride, ...
 * of the order (model.c checked the range), gathered with the step that
 * takes it (gather): a joint step gathers both members' batches straight
 * into its rows. */
static int ocl_data_batch(struct rlx__backend *b, size_t first, size_t stride, int batch) {
  struct ocl *o = ocl_of(b);
  o->data.ask.batch = batch;
  o->data.ask.first = (cl_uint)first;
  o->data.ask.stride = (cl_uint)stride;
  return RLX_OK;
}

/* m's batch asked for, gathered by o's kernel on o's queue into x and y
 * from row row0 (m's data slot, or a joint step's rows). The asked batch
 * is still m's to gather into its slot: a joint step's leaves it there. */
static int gather(struct ocl *o, const struct ocl *m, cl_mem x, cl_mem y, cl_uint row0) {
  cl_uint dim = (cl_uint)m->base.lo->sizes[0], total = dim * (cl_uint)m->data.ask.batch;
  ARG(o, K_GATHER, 0, m->data.pix);
  ARG(o, K_GATHER, 1, m->data.lab);
  ARG(o, K_GATHER, 2, m->data.order);
  ARG(o, K_GATHER, 3, m->data.ask.first);
  ARG(o, K_GATHER, 4, m->data.ask.stride);
  ARG(o, K_GATHER, 5, dim);
  ARG(o, K_GATHER, 6, m->data.lut);
  ARG(o, K_GATHER, 7, total);
  ARG(o, K_GATHER, 8, x);
  ARG(o, K_GATHER, 9, y);
  ARG(o, K_GATHER, 10, row0);
  return launch(o, K_GATHER, total, -1);
}

/* rlx_model_totals: what add_totals summed since the last call (a wait
 * for every step queued), then zero. */
static int ocl_totals(struct rlx__backend *b, double *loss_sum, long *correct) {
  struct ocl *o = ocl_of(b);
  float t[4] = {0, 0, 0, 0};
  CL_TRY(o, "read the totals",
         clEnqueueReadBuffer(o->q, o->totals, CL_TRUE, 0, sizeof t, t, 0, NULL, NULL));
  float zero = 0.0f;
  CL_TRY(o, "clear the totals",
         clEnqueueFillBuffer(o->q, o->totals, &zero, sizeof zero, 0, sizeof t, 0, NULL, NULL));
  *loss_sum = (double)t[0];
  *correct = (long)t[1];
  return RLX_OK;
}

static const struct rlx__backend_ops ocl_ops = {
    .destroy = ocl_destroy,
    .set_params = ocl_set_params,
    .get_params = ocl_get_params,
    .velocity = ocl_velocity,
    .grad_half = ocl_grad_half,
    .apply_half = ocl_apply_half,
    .grad_layers = ocl_grad_layers,
    .apply_range = ocl_apply_range,
    .prefetch = ocl_prefetch,
    .grad = ocl_grad,
    .apply = ocl_apply,
    .step = ocl_step,
    .eval = ocl_eval,
    .host_alloc = ocl_host_alloc,
    .host_free = ocl_host_free,
    .data_attach = ocl_data_attach,
    .data_order = ocl_data_order,
    .data_batch = ocl_data_batch,
    .totals = ocl_totals,
    .step_shared = ocl_step_shared,
};

/* Choose the device: index given, or GPUs (nearest this process's cores
 * first), or the first other device. */
static int choose(const struct rlx__cl_device *devs, int n, int index, int local_rank, char *why,
                  size_t whylen, char *note, size_t notelen) {
  if (index >= 0) {
    if (index >= n) {
      snprintf(why, whylen, "device opencl:%d asked for, but only %d OpenCL device(s)", index, n);
      return -1;
    }
    return index;
  }
  int ngpu = 0;
  while (ngpu < n && devs[ngpu].is_gpu)
    ngpu++;
  char lib[256], hint[512] = "";
  if (ngpu == 0 && rlx__cl_gpu_library(lib, sizeof lib))
    snprintf(hint, sizeof hint,
             "%s is installed but not registered with the OpenCL ICD loader: name it in a .icd "
             "file in /etc/OpenCL/vendors, or in one in a folder OCL_ICD_VENDORS points to",
             lib);
  if (ngpu == 0 && index == RLX__DEV_GPU_ONLY) {
    size_t used = (size_t)snprintf(why, whylen, "no OpenCL GPU device (devices here:");
    for (int i = 0; i < n && used < whylen; i++)
      used += (size_t)snprintf(why + used, whylen - used, "%s %s", i ? "," : "", devs[i].name);
    if (used < whylen)
      snprintf(why + used, whylen - used, "%s)%s%s", n ? "" : " none", hint[0] ? "; " : "", hint);
    return -1;
  }
  if (ngpu == 0) {
    if (hint[0] && note)
      snprintf(note, notelen, "OpenCL device \"%s\" is a CPU, but %s", devs[0].name, hint);
    return 0;
  }
  hwloc_topology_t topo;
  hwloc_bitmap_t sets[RLX__CL_MAX_DEVICES] = {0}, mine = hwloc_bitmap_alloc();
  int pick = local_rank % ngpu;
  if (hwloc_topology_init(&topo) == 0) {
    if (hwloc_topology_load(topo) == 0 && mine &&
        hwloc_get_cpubind(topo, mine, HWLOC_CPUBIND_PROCESS) == 0) {
      for (int i = 0; i < ngpu; i++)
        if ((sets[i] = hwloc_bitmap_alloc()) &&
            hwloc_opencl_get_device_cpuset(topo, devs[i].id, sets[i]) != 0) {
          hwloc_bitmap_free(sets[i]);
          sets[i] = NULL;
        }
      pick = rlx__cl_pick_near((hwloc_const_bitmap_t const *)sets, ngpu, mine, local_rank);
      for (int i = 0; i < ngpu; i++)
        hwloc_bitmap_free(sets[i]);
    }
    hwloc_topology_destroy(topo);
  }
  hwloc_bitmap_free(mine);
  return pick;
}

static int build(struct ocl *o, cl_device_id dev, char *why, size_t whylen) {
  cl_int e;
  const char *src = rlx__kernels_cl;
  o->prog = clCreateProgramWithSource(o->ctx, 1, &src, NULL, &e);
  if (e != CL_SUCCESS) {
    snprintf(why, whylen, "%s: clCreateProgramWithSource: %s", o->base.name, rlx__cl_errname(e));
    return -1;
  }
  char opts[160], shape[96];
  rlx__gemm_shape_options(&o->gs, shape, sizeof shape);
  snprintf(opts, sizeof opts, "-cl-std=CL1.2 -DSMALL_OUT=%d %s", SMALL_OUT, shape);
  e = clBuildProgram(o->prog, 1, &dev, opts, NULL, NULL);
  if (e != CL_SUCCESS) {
    char log[256] = "";
    clGetProgramBuildInfo(o->prog, dev, CL_PROGRAM_BUILD_LOG, sizeof log - 1, log, NULL);
    log[sizeof log - 1] = '\0';
    for (char *c = log; *c; c++)
      if (*c == '\n')
        *c = ' ';
    snprintf(why, whylen, "%s: kernel build failed: %s: %s", o->base.name, rlx__cl_errname(e), log);
    return -1;
  }
  for (int i = 0; i < K_COUNT; i++) {
    o->k[i] = clCreateKernel(o->prog, kernel_names[i], &e);
    if (e != CL_SUCCESS) {
      snprintf(why, whylen, "%s: clCreateKernel(%s): %s", o->base.name, kernel_names[i],
               rlx__cl_errname(e));
      return -1;
    }
  }
  return 0;
}

/* RLX_GEMM: the step's matrix products by gemm_tiles (auto, unset: on a
 * GPU that runs it; tiles: on any device that does, or fail) or by CLBlast
 * (clblast). 0 auto, 1 clblast, 2 tiles, -1 (why filled) a bad value. */
static int gemm_wanted(char *why, size_t whylen) {
  const char *s = getenv("RLX_GEMM");
  if (s == NULL || *s == '\0' || strcmp(s, "auto") == 0)
    return 0;
  if (strcmp(s, "clblast") == 0)
    return 1;
  if (strcmp(s, "tiles") == 0)
    return 2;
  snprintf(why, whylen, "RLX_GEMM=\"%.40s\": expected auto, tiles or clblast", s);
  return -1;
}

/* RLX_JOINT_STEP: auto (unset) or 1: shared steps joint where they can
 * be, 0: never. 1 on, 0 off, -1 (why filled) a bad value. */
static int joint_wanted(char *why, size_t whylen) {
  const char *s = getenv("RLX_JOINT_STEP");
  if (s == NULL || strcmp(s, "auto") == 0 || strcmp(s, "1") == 0)
    return 1;
  if (strcmp(s, "0") == 0)
    return 0;
  snprintf(why, whylen, "RLX_JOINT_STEP=\"%.40s\": expected auto, 0 or 1", s);
  return -1;
}

static cl_mem alloc(struct ocl *o, size_t bytes, int *fail) {
  cl_int e;
  cl_mem m = clCreateBuffer(o->ctx, CL_MEM_READ_WRITE, bytes ? bytes : 4, NULL, &e);
  if (e != CL_SUCCESS)
    *fail = 1;
  return e == CL_SUCCESS ? m : NULL;
}

static int create_at(const struct rlx__layout *lo, float momentum, const struct rlx__cl_device *dv,
                     int d, const char *note, struct rlx__backend **out, char *why, size_t whylen);

int rlx__opencl_create(const struct rlx__layout *lo, float momentum, int index, int local_rank,
                       struct rlx__backend **out, char *why, size_t whylen) {
  struct rlx__cl_device devs[RLX__CL_MAX_DEVICES];
  int n = rlx__cl_list(devs, RLX__CL_MAX_DEVICES, why, whylen);
  if (n < 0)
    return RLX_ERR_DEVICE;
  char note[512] = "";
  int d = choose(devs, n, index, local_rank, why, whylen, note, sizeof note);
  if (d < 0)
    return RLX_ERR_DEVICE;
  rlx__info("compute: local rank %d takes OpenCL device %d of %d (%s)", local_rank, d, n,
            devs[d].name);
  int rc = rlx__share_join(d, devs[d].name, devs[d].is_gpu, lo, momentum, out, why, whylen);
  if (rc != RLX__SHARE_SELF)
    return rc;
  return create_at(lo, momentum, &devs[d], d, note, out, why, whylen);
}

int rlx__opencl_create_on(const struct rlx__layout *lo, float momentum, int d,
                          struct rlx__backend **out, char *why, size_t whylen) {
  struct rlx__cl_device devs[RLX__CL_MAX_DEVICES];
  int n = rlx__cl_list(devs, RLX__CL_MAX_DEVICES, why, whylen);
  if (n < 0)
    return RLX_ERR_DEVICE;
  if (d < 0 || d >= n) {
    snprintf(why, whylen, "device opencl:%d asked for, but only %d OpenCL device(s)", d, n);
    return RLX_ERR_DEVICE;
  }
  return create_at(lo, momentum, &devs[d], d, "", out, why, whylen);
}

int rlx__opencl_finish(struct rlx__backend *b) {
  struct ocl *o = ocl_of(b);
  CL_TRY(o, "clFinish", clFinish(o->tq));
  CL_TRY(o, "clFinish", clFinish(o->q));
  return RLX_OK;
}

/* Host memory the driver pins for as long as the handle lives: a
 * CL_MEM_USE_HOST_PTR buffer over it, mapped once. On the H200 a read into
 * a shared memfd so wrapped runs at 32-51 GB/s, against 7-11 unwrapped
 * (bench/cl_hostmem.c). */
void *rlx__opencl_host_pin(struct rlx__backend *b, void *p, size_t bytes) {
  struct ocl *o = ocl_of(b);
  cl_int e;
  cl_mem m = clCreateBuffer(o->ctx, CL_MEM_READ_WRITE | CL_MEM_USE_HOST_PTR, bytes, p, &e);
  if (e != CL_SUCCESS)
    return NULL;
  void *at = clEnqueueMapBuffer(o->q, m, CL_TRUE, CL_MAP_READ | CL_MAP_WRITE, 0, bytes, 0, NULL,
                                NULL, &e);
  if (e == CL_SUCCESS)
    e = clEnqueueUnmapMemObject(o->q, m, at, 0, NULL, NULL);
  if (e == CL_SUCCESS)
    e = clFinish(o->q);
  if (e != CL_SUCCESS) {
    clReleaseMemObject(m);
    return NULL;
  }
  return m;
}

void rlx__opencl_host_unpin(void *pin) {
  if (pin)
    clReleaseMemObject((cl_mem)pin);
}

/* Made one at a time in a process (a serving thread and the rank's own
 * may both be at it): CLBlast's tuning is process-wide. */
static pthread_mutex_t creating = PTHREAD_MUTEX_INITIALIZER;
static int create_locked(const struct rlx__layout *lo, float momentum,
                         const struct rlx__cl_device *dv, const char *note,
                         struct rlx__backend **out, char *why, size_t whylen);

static int create_at(const struct rlx__layout *lo, float momentum, const struct rlx__cl_device *dv,
                     int d, const char *note, struct rlx__backend **out, char *why,
                     size_t whylen) {
  pthread_mutex_lock(&creating);
  int rc = create_locked(lo, momentum, dv, note, out, why, whylen);
  if (rc == RLX_OK) /* models of this process on device d share its context */
    (*out)->share_key = (uint64_t)getpid() << 8 | (uint64_t)(d & 0xff);
  pthread_mutex_unlock(&creating);
  return rc;
}

static int create_locked(const struct rlx__layout *lo, float momentum,
                         const struct rlx__cl_device *dv, const char *note,
                         struct rlx__backend **out, char *why, size_t whylen) {
  struct ocl *o = calloc(1, sizeof *o);
  if (!o) {
    snprintf(why, whylen, "out of memory");
    return RLX_ERR_NOMEM;
  }
  snprintf(o->base.note, sizeof o->base.note, "%s", note);
  o->base.ops = &ocl_ops;
  o->base.lo = lo;
  o->base.momentum = momentum;
  snprintf(o->base.name, sizeof o->base.name, "opencl: %s", dv->name);
  o->dev = dv->id;
  static unsigned long made; /* (under creating) */
  o->id = ++made;
  cl_int e;
  int profile = rlx__cl_prof_wanted(why, whylen), gemm_choice = gemm_wanted(why, whylen);
  int joint = joint_wanted(why, whylen);
  o->joint_off = joint == 0;
  if (profile < 0 || gemm_choice < 0 || joint < 0 ||
      rlx__gemm_shape_wanted(dv->name, lo->max_width, &o->gs, why, whylen) < 0)
    goto fail;
  if (profile == 1 && (o->prof = rlx__cl_prof_new()) == NULL) {
    snprintf(why, whylen, "out of memory");
    goto fail;
  }
  cl_command_queue_properties qp = profile == 1 ? CL_QUEUE_PROFILING_ENABLE : 0;
  o->ctx = rlx__cl_ctx_take(dv->platform, dv->id, &e, &o->grp);
  if (e == CL_SUCCESS)
    o->q = clCreateCommandQueue(o->ctx, dv->id, qp, &e);
  if (e == CL_SUCCESS)
    o->tq = clCreateCommandQueue(o->ctx, dv->id, qp, &e);
  if (e != CL_SUCCESS) {
    snprintf(why, whylen, "%s: no context or queue: %s", o->base.name, rlx__cl_errname(e));
    goto fail;
  }
  /* RLX_CLBLAST_TUNING wins (empty: CLBlast's own defaults); else ours. */
  const char *tuning = getenv("RLX_CLBLAST_TUNING");
  if (!tuning && (tuning = rlx__clblast_known(dv->name)))
    rlx__info("compute: %s: using rlxcoll's CLBlast tuning for it", o->base.name);
  if (build(o, dv->id, why, whylen) || rlx__clblast_tune(dv->id, tuning, why, whylen))
    goto fail;
  /* The largest power of two the device and our kernels allow, up to 256. */
  size_t maxwg = 1, kwg = 1;
  clGetDeviceInfo(dv->id, CL_DEVICE_MAX_WORK_GROUP_SIZE, sizeof maxwg, &maxwg, NULL);
  for (int i = 0; i < K_GEMM_TILES; i++)
    if (clGetKernelWorkGroupInfo(o->k[i], dv->id, CL_KERNEL_WORK_GROUP_SIZE, sizeof kwg, &kwg,
                                 NULL) == CL_SUCCESS && kwg < maxwg)
      maxwg = kwg;
  o->tiles_ok = clGetKernelWorkGroupInfo(o->k[K_GEMM_TILES], dv->id,
                                         CL_KERNEL_WORK_GROUP_SIZE, sizeof kwg, &kwg,
                                         NULL) == CL_SUCCESS && kwg >= (size_t)(16 * o->gs.wy);
  if (gemm_choice == 1)
    o->tiles_ok = 0;
  if (gemm_choice == 2 && !o->tiles_ok) {
    snprintf(why, whylen, "%s: RLX_GEMM=tiles: the device cannot run gemm_tiles' %d work-items",
             o->base.name, 16 * o->gs.wy);
    goto fail;
  }
  for (o->wg = 1; o->wg * 2 <= maxwg && o->wg < 256; o->wg *= 2)
    ;
  size_t B = (size_t)lo->max_batch, P = sizeof(float) * lo->nparams;
  int bad = 0;
  o->params = alloc(o, P, &bad);
  o->velocity = alloc(o, P, &bad);
  o->grad = alloc(o, P, &bad);
  o->xin[0] = alloc(o, sizeof(float) * B * lo->sizes[0], &bad);
  o->yin[0] = alloc(o, sizeof(int32_t) * B, &bad);
  o->dz = alloc(o, sizeof(float) * B * lo->max_width, &bad);
  o->dz2 = alloc(o, sizeof(float) * B * lo->max_width, &bad);
  o->row_stats = alloc(o, 2 * sizeof(float) * B, &bad);
  o->stats = alloc(o, 2 * sizeof(float), &bad);
  o->totals = alloc(o, 4 * sizeof(float), &bad);
  for (int l = 1; l <= lo->nlayers; l++)
    o->act[l] = alloc(o, sizeof(float) * B * lo->sizes[l], &bad);
  o->act[0] = o->xin[0];
  o->ycur = o->yin[0];
  if (!bad && (o->gemm_tmp_bytes = gemm_scratch(o)) > 0)
    o->gemm_tmp = alloc(o, o->gemm_tmp_bytes, &bad);
  if (bad) {
    snprintf(why, whylen, "%s: cannot allocate device memory for %zu parameters and batch %zu",
             o->base.name, lo->nparams, B);
    goto fail;
  }
  /* Zero every buffer. CLBlast computes beta * C even when beta is 0, so a
   * NaN in fresh device memory would survive into C (seen on PoCL in a
   * forked process: validation caught it as an infinite bias gradient). */
  float zero = 0.0f;
  cl_mem all[] = {o->params, o->velocity, o->grad, o->xin[0], o->dz, o->dz2, o->row_stats,
                  o->totals};
  size_t sizes[] = {P, P, P, sizeof(float) * B * lo->sizes[0], sizeof(float) * B * lo->max_width,
                    sizeof(float) * B * lo->max_width, 2 * sizeof(float) * B, 4 * sizeof(float)};
  e = CL_SUCCESS;
  for (size_t i = 0; e == CL_SUCCESS && i < RLX__ARRAY_SIZE(all); i++)
    e = clEnqueueFillBuffer(o->q, all[i], &zero, sizeof zero, 0, sizes[i], 0, NULL, NULL);
  for (int l = 1; e == CL_SUCCESS && l <= lo->nlayers; l++)
    e = clEnqueueFillBuffer(o->q, o->act[l], &zero, sizeof zero, 0,
                            sizeof(float) * B * lo->sizes[l], 0, NULL, NULL);
  if (e == CL_SUCCESS)
    e = clFinish(o->q);
  if (e != CL_SUCCESS) {
    snprintf(why, whylen, "%s: cannot initialise buffers: %s", o->base.name, rlx__cl_errname(e));
    goto fail;
  }
  /* RLX_GEMM=auto: gemm_tiles on a GPU, CLBlast on a CPU device. Chosen
   * by the device's kind, not timed here, so that every model on a device
   * computes alike (two runs compared bit for bit, ranks of one job).
   * Measured: the H200's step 1.2-1.7x shorter with gemm_tiles (README);
   * PoCL's CPU device 784-256-10 at 256: 7.8 ms by CLBlast against 18.7-18.9
   * (bench/results/gemm-choice-pocl-2core-2026-12-01.txt). */
  cl_device_type type = 0;
  clGetDeviceInfo(dv->id, CL_DEVICE_TYPE, sizeof type, &type, NULL);
  if (gemm_choice == 0 && !(type & CL_DEVICE_TYPE_GPU))
    o->tiles_ok = 0;
  rlx__info("compute: %s: matrix products by %s", o->base.name,
            o->tiles_ok ? "gemm_tiles" : "CLBlast");
  *out = &o->base;
  return RLX_OK;
fail:
  o->act[0] = NULL;
  ocl_destroy(&o->base);
  return RLX_ERR_DEVICE;
}
