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

/* A model of the group, as its step sees it. */
struct rlx__cl_member {
  const void *self;  /* identity */
  const char *name;  /* for messages: the backend's */
  const char *owner; /* whose model: "pid N", or "" for this process's */
  cl_context ctx;
  cl_mem grad;       /* its gradient, computed once ready completes */
  size_t n;          /* parameters */
};

/* The last member to arrive averages: into avg, on its own queue, after
 * every ready event, ((grads[0] + grads[1]) + ...) / members; *done: when
 * it is there. */
typedef int (*rlx__cl_average_fn)(const struct rlx__cl_member *me, cl_mem avg, int members,
                                  const cl_mem *grads, const cl_event *ready, cl_event *done);

/* Arrive as member index of members with this step's gradient computed
 * once ready completes (the group releases ready); once every member has,
 * RLX_OK with the average's buffer in *avg and its event, retained, in
 * *done. A member gone: RLX_ERR_PEER_LOST naming its owner, now and in
 * every later step until all have left; members, index or sizes that
 * disagree: RLX_ERR_MISMATCH. */
int rlx__cl_group_meet(struct rlx__cl_group *g, const struct rlx__cl_member *me, int index,
                       int members, cl_event ready, rlx__cl_average_fn average, cl_mem *avg,
                       cl_event *done);
/* me leaves for good (its model is freed). */
void rlx__cl_group_leave(struct rlx__cl_group *g, const struct rlx__cl_member *me);

#endif
