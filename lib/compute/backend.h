/* The compute layer's inside: the MLP's shape (layout.c), the backend
 * interface both cpu.c and opencl.c implement, and validation. */
#ifndef RLX_COMPUTE_BACKEND_H
#define RLX_COMPUTE_BACKEND_H

#include <stddef.h>
#include <stdint.h>
#include <rlxcoll/compute.h>

#define RLX__MAX_LAYERS 15

/* Where each layer's weights and biases sit in the flat parameter buffer. */
struct rlx__layout {
  int nlayers;                     /* weight layers = nsizes - 1 */
  int sizes[RLX__MAX_LAYERS + 1];
  size_t w_off[RLX__MAX_LAYERS];   /* weights, out x in, row-major */
  size_t b_off[RLX__MAX_LAYERS];   /* biases, out */
  size_t nparams;
  int max_batch;
  int max_width;                   /* widest layer, for scratch sizing */
};

int rlx__layout_init(struct rlx__layout *lo, const rlx_model_desc_t *d);
/* He-uniform weights for the ReLU layers, a smaller scale for the output
 * layer so a fresh model's loss sits near ln(classes); zero biases. */
void rlx__layout_init_params(const struct rlx__layout *lo, uint64_t seed, float *params);
/* A probe batch of rows examples: inputs uniform in [-1, 1) from seed,
 * labels cycling through the classes (validation and step timing). */
void rlx__probe_batch(const struct rlx__layout *lo, int rows, uint64_t seed, float *x, int32_t *y);

/* A backend instance. Every call returns RLX_OK or an RLX_ERR_* with the
 * detail set through rlx__err. */
struct rlx__backend {
  const struct rlx__backend_ops *ops;
  const struct rlx__layout *lo;
  float momentum;
  char name[160];                  /* "cpu", "opencl: <device>" */
  char note[512]; /* why it is not a GPU where one may be (an unregistered GPU library), or "" */
  /* rlx_model_grad_buffer, once made: an update from it may return before
   * the device has read it, since the model's next write to it (a
   * gradient's download) is ordered after that read */
  const float *own_grad;
  /* Equal for models computing in one context (rlx_model_share_key): the
   * process holding it and the device; 0 where none is shared (C). */
  uint64_t share_key;
  char owner[48]; /* whose model, where another process's: "pid N" */
};

struct rlx__backend_ops {
  void (*destroy)(struct rlx__backend *b);
  int (*set_params)(struct rlx__backend *b, const float *p);
  int (*get_params)(struct rlx__backend *b, float *p);
  int (*grad)(struct rlx__backend *b, const float *x, const int32_t *y, int batch, float *g,
              float *loss, int *correct);
  int (*apply)(struct rlx__backend *b, const float *g, float lr);
  int (*eval)(struct rlx__backend *b, const float *x, const int32_t *y, int batch,
              double *loss_sum, long *correct);
  /* Pinned host memory, or NULL (the caller then uses malloc); host_free
   * returns 0 for a pointer host_alloc did not give. */
  float *(*host_alloc)(struct rlx__backend *b, size_t nfloats);
  int (*host_free)(struct rlx__backend *b, float *p);
  /* grad then apply with the gradient left in place (NULL: model.c does
   * both through a host buffer) */
  int (*step)(struct rlx__backend *b, const float *x, const int32_t *y, int batch, float lr,
              float *loss, int *correct);
  /* the momentum buffer: read into v (set 0), or written from it (set 1) */
  int (*velocity)(struct rlx__backend *b, float *v, int set);
  /* the parameters (which 0) or momentum (1) themselves, where they live
   * in host memory; NULL: a device holds them */
  float *(*host_state)(struct rlx__backend *b, int which);
  /* grad and apply with a 16-bit gradient (bf16 0: float16, 1: bfloat16),
   * rounded where it is computed; NULL: model.c rounds on the host */
  int (*grad_half)(struct rlx__backend *b, const float *x, const int32_t *y, int batch,
                   uint16_t *g, int bf16, float *loss, int *correct);
  int (*apply_half)(struct rlx__backend *b, const uint16_t *g, int bf16, float lr);
  /* grad, calling done(l, arg) as soon as layer l's part of g is final on
   * the host (last layer first); a nonzero return stops and is returned.
   * NULL: model.c calls done for every layer after grad. */
  int (*grad_layers)(struct rlx__backend *b, const float *x, const int32_t *y, int batch,
                     float *g, int (*done)(int l, void *arg), void *arg, float *loss,
                     int *correct);
  /* apply on g[off, off + n) only */
  int (*apply_range)(struct rlx__backend *b, const float *g, size_t off, size_t n, float lr);
  /* start moving a later step's batch where it is computed (x NULL: drop
   * what was started); NULL: nothing to move */
  int (*prefetch)(struct rlx__backend *b, const float *x, const int32_t *y, int batch);
  /* The training set kept where the model computes (NULL: the backend
   * computes from host memory, nothing to keep): attach count examples
   * (bytes, labels; lut widens a byte as rlx_dataset_batch does; limit:
   * the bytes it may take, 0 the backend's own rule), an epoch's order,
   * and a batch gathered from it that a step given x and y NULL computes
   * on. */
  int (*data_attach)(struct rlx__backend *b, const uint8_t *pix, const uint8_t *lab, size_t count,
                     const float lut[256], size_t limit);
  int (*data_order)(struct rlx__backend *b, const uint32_t *order, size_t n);
  int (*data_batch)(struct rlx__backend *b, size_t first, size_t stride, int batch);
  /* Steps given loss and correct NULL add them to totals kept here; read
   * and zero them (NULL: model.c keeps the totals on the host). */
  int (*totals)(struct rlx__backend *b, double *loss_sum, long *correct);
  /* rlx_model_step_shared: a step whose gradient is averaged on the
   * device with the other members' of one context (NULL: not offered). */
  int (*step_shared)(struct rlx__backend *b, const float *x, const int32_t *y, int batch,
                     int index, int members, float lr, float *loss, int *correct);
};

int rlx__cpu_create(const struct rlx__layout *lo, float momentum, struct rlx__backend **out);

/* OpenCL: which device. */
enum rlx__device_kind { RLX__DEV_AUTO, RLX__DEV_CPU, RLX__DEV_OPENCL, RLX__DEV_GPU };
/* index of rlx__device_choice: opencl:N, or one of these */
#define RLX__DEV_PICK (-1)     /* GPUs first, else the first device */
#define RLX__DEV_GPU_ONLY (-2) /* a GPU, or an error */
struct rlx__device_choice {
  int kind;
  int index;          /* opencl:N, RLX__DEV_PICK or RLX__DEV_GPU_ONLY */
};
int rlx__device_parse(const char *s, struct rlx__device_choice *out);

/* Create on the chosen OpenCL device (index RLX__DEV_PICK: GPUs first,
 * the one nearest this process among them, local_rank mod count;
 * RLX__DEV_GPU_ONLY: the same among GPUs, none is an error). On failure
 * returns an error and leaves the reason in why. */
int rlx__opencl_create(const struct rlx__layout *lo, float momentum, int index, int local_rank,
                       struct rlx__backend **out, char *why, size_t whylen);

/* Prove b sane against the C backend on a fixed probe batch; on failure
 * writes the reason to why and returns RLX_ERR_DEVICE. */
int rlx__validate(struct rlx__backend *b, char *why, size_t whylen);

/* The best of a few timed training steps (gradient and update) of b at
 * its model's batch, after one to warm up, in milliseconds. Changes b's
 * parameters: the caller sets them afterwards. */
int rlx__step_time(struct rlx__backend *b, double *ms);

/* Test builds only (--enable-fault-injection): 1 when RLX_FAULT_COMPUTE is
 * what. "zeros": the OpenCL backend reports success and returns zeros;
 * "nomem": rlx_model_create's parameters cannot be allocated. */
int rlx__fault_compute(const char *what);

/* Deterministic generator shared by initialisation, synthetic data and
 * the shuffle (splitmix64). */
static inline uint64_t rlx__splitmix64(uint64_t *s) {
  uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}
/* An image byte as the model's input: Fashion-MNIST's mean and deviation
 * taken out (rlx_dataset_batch, and the table a device gathers by). */
static inline float rlx__pixel(uint8_t p) {
  const float scale = 1.0f / (255.0f * 0.3530f), shift = 0.2860f / 0.3530f;
  return (float)p * scale - shift;
}

/* Uniform in [0, 1). */
static inline double rlx__uniform(uint64_t *s) {
  return (double)(rlx__splitmix64(s) >> 11) * (1.0 / 9007199254740992.0);
}

#endif
