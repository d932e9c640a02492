/* One OpenCL context per device in a process, and the models of it that
 * step together (rlx_model_step_shared): kernels of one context run side
 * by side on a GPU, two contexts' time-sliced, and the models of ranks
 * sharing a device (share.h) all live in the serving process. */
#ifndef RLX_COMPUTE_CL_CONTEXT_H
#define RLX_COMPUTE_CL_CONTEXT_H

#include <CL/cl.h>
#include <stddef.h>

struct rlx__cl_group;

/* The process's context for dev (made at its first model), and its group;
 * counted by models, so none outlives them (a forked child must not
 * inherit one). */
cl_context rlx__cl_ctx_take(cl_platform_id platform, cl_device_id dev, cl_int *e,
                            struct rlx__cl_group **grp);
void rlx__cl_ctx_drop(cl_context ctx);

/* A model of the group, as its step sees it: who it is, the step's
 * arguments, and its part of the step, which the member arriving last
 * queues for it. */
struct rlx__cl_member {
  const void *self;  /* identity */
  const char *name;  /* for messages: the backend's */
  const char *owner; /* whose model: "pid N", or "" for this process's */
  cl_context ctx;
  cl_mem grad;       /* its gradient, computed once ready completes */
  size_t n;          /* parameters */
  const float *x;    /* the step's batch (NULL: gathered on the device), */
  const int32_t *y;  /* labels, size and learning rate */
  int batch;
  float lr;
  /* its gradient on its own queue; *ready: when it is computed */
  int (*gradient)(const struct rlx__cl_member *me, cl_event *ready);
  /* its update from avg once done completes, on its own queue */
  int (*update)(const struct rlx__cl_member *me, cl_mem avg, cl_event done);
  /* NULL, or for a step of two members queued by me: the average and both
   * updates at once, after both ready events (in place of the average
   * and each update; the same results) */
  int (*pair)(const struct rlx__cl_member *me, const struct rlx__cl_member *at,
              const cl_event ready[2]);
  /* NULL, or for a step of two members queued by me: the whole step at
   * once, one pass over both batches when the members hold the same
   * parameters (the same results as their gradients and pair); it
   * answers RLX__CL_NOT_JOINT, having queued nothing, where it cannot */
  int (*joint)(const struct rlx__cl_member *me, const struct rlx__cl_member *at);
};
#define RLX__CL_NOT_JOINT 1

/* The average, into avg on me's queue after every ready event,
 * ((grads[0] + grads[1]) + ...) / members; *done: when it is there. */
typedef int (*rlx__cl_average_fn)(const struct rlx__cl_member *me, cl_mem avg, int members,
                                  const cl_mem *grads, const cl_event *ready, cl_event *done);

/* Arrive as member index of members for a step (me is copied). The member
 * arriving last queues the whole step on its thread: every member's
 * gradient in index order, the average on its own queue, every member's
 * update; the others wait for it. One thread queuing: on the H200, two
 * models stepping each from a thread of its own took 1.0-1.4x the time
 * one thread took to step both in turn (NVIDIA's driver takes the
 * threads' calls one at a time; bench/step_shared.c, --own against
 * --serial).
 * RLX_OK once this member's update is queued. A member gone: RLX_ERR_PEER_LOST
 * naming its owner, now and in every later step until all have left;
 * members, index or sizes that disagree: RLX_ERR_MISMATCH; a member's
 * part failing fails the step for every member, and every later one. */
int rlx__cl_group_step(struct rlx__cl_group *g, const struct rlx__cl_member *me, int index,
                       int members, rlx__cl_average_fn average);
/* Shared steps this process ran joint (tests). */
long rlx__cl_joint_steps(void);
/* me leaves for good (its model is freed). */
void rlx__cl_group_leave(struct rlx__cl_group *g, const struct rlx__cl_member *me);

#endif
