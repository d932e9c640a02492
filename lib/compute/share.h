/* Ranks that share one OpenCL device share one context (issue 36): a GPU
 * runs two processes' contexts time-sliced, and every switch between them
 * costs ~140 us even when the other has no work queued (bench/cl_share.c),
 * so two ranks on one GPU paid one or two switches each per step. Instead
 * the first rank of a job to take a device serves it: it listens on a Unix
 * socket in the job's run directory ($RLX_RUNDIR/compute-D), and every
 * later rank of the job on that host that takes device D computes there
 * through a remote backend (share_client.c): each call a request on the
 * socket, its host buffers memory both processes map (memfds passed with
 * SCM_RIGHTS), run in the serving process by a thread of its own with an
 * OpenCL backend in that process's one context (share_serve.c).
 *
 * One context also lets the ranks on a device average their gradients
 * there (rlx_model_step_shared) instead of through the host, where two
 * ranks' step on the H200 was the gradient's allreduce (1.7 ms for 7.5 MB)
 * and its trips.
 *
 * RLX_DEVICE_SHARE: auto (the default: GPUs, for ranks started by rlxrun),
 * 1 (any OpenCL device, PoCL's too: tests), 0 (a context per process). */
#ifndef RLX_COMPUTE_SHARE_H
#define RLX_COMPUTE_SHARE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include "compute/backend.h"

/* rlx__share_join's answer when this process computes on the device
 * itself (it serves the device, or nothing is shared). */
#define RLX__SHARE_SELF 1

/* Device d (named name, a GPU when is_gpu) was chosen for a model of
 * layout lo: RLX_OK with *out a backend computing in the process that
 * serves d, or RLX__SHARE_SELF (this process serves it now, or sharing is
 * off), or an error with the reason in why. */
int rlx__share_join(int d, const char *name, int is_gpu, const struct rlx__layout *lo,
                    float momentum, struct rlx__backend **out, char *why, size_t whylen);

/* The remote backend on fd, a socket connected to path, which serves
 * device d (share_client.c): the server checked to be this user's, the
 * model made there. RLX_OK with *out; else the reason in why (fd closed). */
int rlx__share_remote(int fd, const char *path, int d, const char *name,
                      const struct rlx__layout *lo, float momentum, struct rlx__backend **out,
                      char *why, size_t whylen);

/* Before a blocking receive on fd: poll it for a while first where cores
 * allow (a thread woken from a socket read costs 35-60 us on these
 * virtual machines, twice a request). RLX_SPIN_US sets the budget;
 * unset: 50 us where the host has twice as many CPUs as the job has ranks
 * on it (RLX_LOCAL_SIZE), else none. */
void rlx__share_spin(int fd);
/* That budget, in microseconds (0: block at once); also what a member
 * of a shared step spins for before it sleeps (cl_context.c). */
long rlx__share_spin_us(void);

/* One message on s, with the descriptor fd (SCM_RIGHTS) if fd >= 0:
 * sendmsg's answer. */
ssize_t rlx__share_send(int s, const void *msg, size_t len, int fd);

/* Start serving device d on the socket bound to fd (share_serve.c). */
int rlx__share_serve(int fd, int d, char *why, size_t whylen);

/* opencl.c, for the serving side: a backend on device d exactly (no
 * sharing asked), and a wait for everything it has queued. */
int rlx__opencl_create_on(const struct rlx__layout *lo, float momentum, int d,
                          struct rlx__backend **out, char *why, size_t whylen);
int rlx__opencl_finish(struct rlx__backend *b);
/* Pin p's bytes for transfers of b's device (a handle, NULL if it could
 * not), and let them go. */
void *rlx__opencl_host_pin(struct rlx__backend *b, void *p, size_t bytes);
void rlx__opencl_host_unpin(void *pin);

/* ---- the wire (a SOCK_SEQPACKET socket: one message a request, one a reply) */

enum rlx__share_op {
  RLX__SH_CREATE = 1, /* the model's shape; answered with the backend's name and note */
  RLX__SH_MAP,        /* region i: a memfd (SCM_RIGHTS) of u[0] bytes */
  RLX__SH_UNMAP,      /* region i */
  RLX__SH_SET_PARAMS,
  RLX__SH_GET_PARAMS,
  RLX__SH_VELOCITY,   /* i = set */
  RLX__SH_GRAD,       /* i = batch, j = bit 0: loss and correct wanted, bit 1: 16 bits, bit 2: bf16 */
  RLX__SH_APPLY,      /* f = lr, j = as for GRAD (bits 1, 2), bit 3: the model's own gradient buffer */
  RLX__SH_APPLY_RANGE, /* u[0] offset, u[1] count */
  RLX__SH_STEP,       /* i = batch, f = lr, j bit 0 */
  RLX__SH_EVAL,       /* i = batch */
  RLX__SH_PREFETCH,   /* i = batch; no refs: drop */
  RLX__SH_DATA_ATTACH, /* u[0] count, u[1] limit */
  RLX__SH_DATA_ORDER, /* u[0] n */
  RLX__SH_DATA_BATCH, /* u[0] first, u[1] stride, i = batch */
  RLX__SH_TOTALS,
  RLX__SH_STEP_SHARED, /* as STEP, u[0] index, u[1] members */
  RLX__SH_OPS
};

#define RLX__SH_REGIONS 8 /* region 0 is the client's staging area */
#define RLX__SH_REFS 3

/* Where a buffer is: region < 0 for none (NULL). */
struct rlx__share_ref {
  int32_t region;
  uint32_t pad;
  uint64_t off;
};

struct rlx__share_req {
  uint32_t op;
  int32_t i, j;
  float f;
  uint64_t u[2];
  struct rlx__share_ref ref[RLX__SH_REFS];
  /* GRAD, STEP, STEP_SHARED on a batch gathered on the device (batch >
   * 0): rlx_model_data_batch's gather, deferred by the client to come
   * with the step and run before it (one request a step, not two) */
  struct {
    int32_t batch;
    uint32_t pad;
    uint64_t first, stride;
  } gather;
  /* RLX__SH_CREATE */
  int32_t nsizes, max_batch, device;
  float momentum;
  int32_t sizes[RLX__MAX_LAYERS + 1];
};

struct rlx__share_rep {
  int32_t rc, correct;
  float loss;
  uint32_t pad;
  double loss_sum;
  int64_t correct_sum;
  char msg[1024]; /* the error's detail, or (CREATE) the backend's name */
  char note[512]; /* CREATE: the backend's note */
};

#endif
