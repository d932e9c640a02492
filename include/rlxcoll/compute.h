/* librlxcompute, the rlxcoll compute layer: a multi-layer perceptron
 * classifier whose training step runs on an OpenCL device (any vendor,
 * through the ICD loader) or in plain C, proven sane on a probe batch
 * before it is trusted, and the datasets to feed it. Its own library
 * (pkg-config rlxcompute): nothing here talks to other ranks, and a
 * program that only communicates never links OpenCL. A data-parallel
 * program moves the flat gradient with rlx_allreduce (<rlxcoll/rlxcoll.h>)
 * itself. */
#ifndef RLXCOLL_COMPUTE_H
#define RLXCOLL_COMPUTE_H

#include <stddef.h>
#include <stdint.h>
#include <rlxcoll/errors.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct rlx_model rlx_model_t;

/* What to build. sizes[0] is the input width, sizes[nsizes-1] the number of
 * classes, the ones between are hidden ReLU layers. */
typedef struct rlx_model_desc {
  int nsizes;          /* 2 .. 16 */
  const int *sizes;    /* each 1 .. 65536 */
  int max_batch;       /* largest batch given to rlx_model_grad/eval */
  uint64_t seed;       /* parameter initialisation */
  float momentum;      /* SGD momentum, 0 for plain SGD, [0, 1) */
  const char *device;  /* "auto", "cpu", "gpu", "opencl", "opencl:N"; NULL: $RLX_DEVICE, else auto */
  int local_rank;      /* picks among several GPUs; -1: $RLX_LOCAL_RANK, else 0 */
} rlx_model_desc_t;

RLX_API int rlx_model_create(const rlx_model_desc_t *desc, rlx_model_t **out);
RLX_API int rlx_model_free(rlx_model_t **m);
RLX_API size_t rlx_model_nparams(const rlx_model_t *m);
/* "cpu" or "opencl: <device name>". */
RLX_API const char *rlx_model_backend(const rlx_model_t *m);
/* Why a device was not used ("opencl: NVIDIA H200: ... — using cpu"), or
 * NULL when the backend asked for (or the first one auto tried) is in use. */
RLX_API const char *rlx_model_fallback(const rlx_model_t *m);

/* Parameters as one flat float32 buffer of rlx_model_nparams() values:
 * for each layer its weights (out x in, row-major), then its biases. */
RLX_API int rlx_model_get_params(rlx_model_t *m, float *params);
RLX_API int rlx_model_set_params(rlx_model_t *m, const float *params);
/* The optimizer's state, the momentum buffer v (as the parameters): what a
 * rank joining a run needs besides the parameters. set_params clears it,
 * so set it after them. */
RLX_API int rlx_model_get_momentum(rlx_model_t *m, float *v);
RLX_API int rlx_model_set_momentum(rlx_model_t *m, const float *v);
/* The parameters and the momentum themselves, laid out as above, where the
 * backend computes from host memory (cpu): read and written in place, no
 * copy (a joining rank receives the leader's straight into them; writing
 * the parameters here leaves the momentum as it is). Valid until the model
 * is freed. NULL where a device holds them: get and set them then. */
RLX_API float *rlx_model_params_buffer(rlx_model_t *m);
RLX_API float *rlx_model_momentum_buffer(rlx_model_t *m);

/* Host buffers owned by the model, freed with it: room for max_batch
 * input rows, and for one flat gradient. Pinned (page-locked) on devices
 * that offer it, so a batch or gradient passed from them moves by DMA with
 * no staging copy; any other buffer works too, only slower. NULL when out
 * of memory. */
RLX_API float *rlx_model_input_buffer(rlx_model_t *m);
/* A second such buffer: the next batch fills it (rlx_model_prefetch)
 * while a step computes on the first. */
RLX_API float *rlx_model_next_input_buffer(rlx_model_t *m);
RLX_API float *rlx_model_grad_buffer(rlx_model_t *m);
/* Room for one 16-bit gradient (rlx_model_grad_half), pinned as well. */
RLX_API uint16_t *rlx_model_grad16_buffer(rlx_model_t *m);

/* Forward and backward on one batch: x is batch x sizes[0] floats,
 * labels are class indices. The mean-loss gradient lands in grad (flat, as
 * the parameters); *loss gets the mean loss, *correct the number of rows
 * predicted right (either may be NULL). */
RLX_API int rlx_model_grad(rlx_model_t *m, const float *x, const int32_t *labels, int batch,
                           float *grad, float *loss, int *correct);
/* SGD step with the given (usually averaged) gradient:
 * v = momentum * v + grad; params -= lr * v. */
RLX_API int rlx_model_apply(rlx_model_t *m, const float *grad, float lr);
/* Backward with the gradient handed over in buckets as backward makes it
 * (the last layer first): once grad[off, off + n) is final on the host,
 * ready(off, n, arg) is called on this thread (start its allreduce
 * there). A bucket is whole layers, at least bucket_floats values (0: a
 * layer each); the buckets cover the gradient, each once. A nonzero
 * return from ready stops the backward pass and is returned. On OpenCL
 * later layers compute while earlier buckets are handed over. */
typedef int (*rlx_grad_ready_fn)(size_t off, size_t n, void *arg);
RLX_API int rlx_model_grad_buckets(rlx_model_t *m, const float *x, const int32_t *labels,
                                   int batch, float *grad, size_t bucket_floats,
                                   rlx_grad_ready_fn ready, void *arg, float *loss, int *correct);
/* rlx_model_apply on parameters [off, off + n) only (a bucket's). */
RLX_API int rlx_model_apply_range(rlx_model_t *m, const float *grad, size_t off, size_t n,
                                  float lr);
/* rlx_model_grad_buffer's spare room: this many floats after the
 * gradient, the program's own (values that ride in the same allreduce). */
#define RLX_MODEL_GRAD_SPARE 16
/* The same with a 16-bit gradient (bf16 0: IEEE float16, 1: bfloat16),
 * rounded to nearest even from the float32 one, bit for bit alike on
 * every backend; on OpenCL the rounding and the widening run on the
 * device, so half the bytes cross the bus. For RLX_FLOAT16/RLX_BFLOAT16
 * allreduces (half the bytes on the wire too). */
RLX_API int rlx_model_grad_half(rlx_model_t *m, const float *x, const int32_t *labels, int batch,
                                uint16_t *grad, int bf16, float *loss, int *correct);
RLX_API int rlx_model_apply_half(rlx_model_t *m, const uint16_t *grad, int bf16, float lr);
/* One rank's whole step, rlx_model_grad then rlx_model_apply, with the
 * gradient kept where it is computed: on an OpenCL device nothing goes
 * back to the host but the loss and the count. */
RLX_API int rlx_model_step(rlx_model_t *m, const float *x, const int32_t *labels, int batch,
                           float lr, float *loss, int *correct);
/* Models computing in one context (ranks sharing a device with
 * RLX_DEVICE_SHARE=1) have the same key; any other model a key of its
 * own. */
RLX_API int rlx_model_share_key(rlx_model_t *m, uint64_t *key);
/* A data-parallel step among the members models of one context, each
 * called once a step with its own index 0 .. members-1: each computes its
 * gradient, the gradients are averaged on the device once all have
 * arrived ((g0 + g1 + ...) / members, in index order) and each applies
 * the average. Returns once its update is queued. A member gone fails the
 * others with RLX_ERR_PEER_LOST; members or index that disagree,
 * RLX_ERR_MISMATCH; a model whose context is its own, RLX_ERR_STATE. */
RLX_API int rlx_model_step_shared(rlx_model_t *m, const float *x, const int32_t *labels,
                                  int batch, int index, int members, float lr, float *loss,
                                  int *correct);
/* Start moving a later step's batch to the device now, while this step
 * runs (the OpenCL backend: on its transfer queue, into a second input
 * buffer). The next rlx_model_step, _grad, _grad_half or _eval called with
 * the same x, labels and batch computes on the moved copy instead of
 * uploading it then. x and labels must stay unchanged until that call
 * returns; at most two batches wait; x NULL drops them. The C backend
 * reads the host's memory and has nothing to move: RLX_OK. */
RLX_API int rlx_model_prefetch(rlx_model_t *m, const float *x, const int32_t *labels, int batch);
/* Forward only: adds the summed loss of the batch to *loss_sum and the
 * number of right predictions to *correct. */
RLX_API int rlx_model_eval(rlx_model_t *m, const float *x, const int32_t *labels, int batch,
                           double *loss_sum, long *correct);

/* ---- datasets ----------------------------------------------------------- */

/* Images as bytes (0..255, one row of dim per example) and labels. */
typedef struct rlx_dataset {
  size_t count;
  int dim;
  int classes;
  uint8_t *pixels;   /* count x dim */
  uint8_t *labels;   /* count */
  int synthetic;     /* 1 when generated, not read */
  char origin[256];  /* the file read, or "synthetic (seed N)" */
} rlx_dataset_t;

/* Read <dir>/<split>-images-idx3-ubyte[.gz] and the matching labels file
 * (split "train" or "t10k"); gzip through zlib. */
RLX_API int rlx_dataset_load(const char *dir, const char *split, rlx_dataset_t **out);
/* A seeded, learnable stand-in: one noisy prototype per class. The
 * prototypes depend on seed alone; split ("train" or "t10k") picks the
 * stream of examples, so a test split is drawn from the same classes. */
RLX_API int rlx_dataset_synthetic(size_t count, int dim, int classes, uint64_t seed,
                                  const char *split, rlx_dataset_t **out);
RLX_API int rlx_dataset_free(rlx_dataset_t **d);
/* Gather examples idx[0..n) as normalised floats ((p/255 - 0.2860)/0.3530,
 * the Fashion-MNIST mean and deviation) and int32 labels. */
RLX_API int rlx_dataset_batch(const rlx_dataset_t *d, const uint32_t *idx, int n, float *x,
                              int32_t *labels);
/* The epoch's order: a permutation of 0..n-1 that depends only on seed and
 * epoch, so every rank computes the same one. */
RLX_API int rlx_dataset_shuffle(uint32_t *perm, size_t n, uint64_t seed, uint64_t epoch);
/* The same order one position at a time: idx[j] gets the example at
 * position first + j * stride (j < count), so a rank computes only its
 * own batch's (rank r of N at offset off: first off + r, stride N). */
RLX_API int rlx_dataset_order(uint32_t *idx, size_t count, size_t n, uint64_t seed,
                              uint64_t epoch, size_t first, size_t stride);

/* ---- the training set where the model computes ------------------------- */

/* Keep the first count examples of d where the model computes (an OpenCL
 * device's memory), uploaded once, so that a step's batch is gathered
 * there instead of built and uploaded by the host. RLX_ERR_NOMEM (nothing
 * kept) when they would take more than half the device's memory or
 * $RLX_DEVICE_DATA_MAX bytes (0: never); RLX_ERR_STATE on a backend that
 * computes from host memory (cpu): there the host's batch is the data. */
RLX_API int rlx_model_data_attach(rlx_model_t *m, const rlx_dataset_t *d, size_t count);
/* The epoch's order, n positions (rlx_dataset_shuffle's permutation),
 * each an example index below count. */
RLX_API int rlx_model_data_order(rlx_model_t *m, const uint32_t *order, size_t n);
/* Gather the batch of positions first, first + stride, ... (batch of them)
 * of the order, exactly the rows and labels rlx_dataset_batch would give
 * for the same indices; the next rlx_model_step, _grad, _grad_buckets,
 * _grad_half or _eval called with x and labels NULL and this batch size
 * computes on it. */
RLX_API int rlx_model_data_batch(rlx_model_t *m, size_t first, size_t stride, int batch);
/* Steps given loss and correct both NULL do not wait to report them: they
 * add the batch's summed loss and right answers to totals kept where the
 * model computes. Read those (a wait for every step queued) and set them
 * to zero. On a device, a step with neither and a gathered batch returns
 * as soon as it is queued. */
RLX_API int rlx_model_totals(rlx_model_t *m, double *loss_sum, long *correct);

#ifdef __cplusplus
}
#endif
#endif
