/* The process's OpenCL contexts, one per device, and the group of each
 * context's models that step together (cl_context.h): a barrier in host
 * memory that the last member to arrive ends by queuing the average. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include "compute/cl_context.h"
#include "compute/cl_devices.h"
#include "compute/cl_profile.h"
#include "compute/host_span.h"
#include "base/internal.h"
#include "compute/share.h"

#define GROUP_MAX 64

struct rlx__cl_group {
  pthread_mutex_t mu;
  pthread_cond_t cv;
  int members, arrived;            /* of the step being gathered */
  _Atomic unsigned long gen;       /* steps run (read unlocked by a spinning member) */
  struct rlx__cl_member at[GROUP_MAX]; /* by index, this step (self NULL: not arrived) */
  int rc[GROUP_MAX];               /* the last step's outcome for each */
  char why[GROUP_MAX][320];        /* and its message */
  cl_mem avg;
  size_t n;
  const void *joined[GROUP_MAX];   /* every model that took part */
  int njoined;
  char lost[96];                   /* who left, once one did */
  struct {                         /* RLX_COMPUTE_PROFILE=1 or host: where the host's time goes */
    int on;
    uint64_t first_at;             /* this step's first arrival */
    struct rlx__host_span wait;    /* from it to the last arrival */
    struct rlx__host_turns queue;  /* the last's queuing (in), and from one to the next (out) */
    long last[GROUP_MAX];          /* steps each member arrived last */
    long joint;                    /* steps of two members joint (one pass) */
  } prof;
};

static _Atomic long joint_steps; /* the process's, for rlx__cl_joint_steps */

static struct {
  pthread_mutex_t mu;
  struct {
    cl_device_id dev;
    cl_context ctx;
    int users;
    struct rlx__cl_group *grp;
  } at[RLX__CL_MAX_DEVICES];
} contexts = {.mu = PTHREAD_MUTEX_INITIALIZER};

static struct rlx__cl_group *group_new(void) {
  struct rlx__cl_group *g = calloc(1, sizeof *g);
  char why[96];
  if (g) {
    pthread_mutex_init(&g->mu, NULL);
    pthread_cond_init(&g->cv, NULL);
    g->prof.on = rlx__cl_prof_wanted(why, sizeof why) > 0;
  }
  return g;
}

/* The shared steps' host side, for RLX_COMPUTE_PROFILE (1 or host): how
 * long the first member waited for the last, the last's queuing of the whole step,
 * and the time from one step's queuing to the next's (the queuing thread
 * doing anything else: its own loop, waiting for a member's request). */
static void group_report(const struct rlx__cl_group *g) {
  if (!g->prof.on || g->prof.queue.in.n == 0)
    return;
  fprintf(stderr, "rlx: shared steps: %ld; the first member waited %.1f us (mean) for the last; "
          "the last queued the step in %.1f us (max %.1f); %.1f us from one step's queuing to "
          "the next's; %ld joint (one pass over both batches); arrived last:",
          g->prof.queue.in.n, rlx__host_span_us(&g->prof.wait),
          rlx__host_span_us(&g->prof.queue.in), g->prof.queue.in.max_ns / 1e3,
          rlx__host_span_us(&g->prof.queue.out), g->prof.joint);
  for (int j = 0; j < g->members && j < GROUP_MAX; j++)
    fprintf(stderr, " member %d %ld", j, g->prof.last[j]);
  fputc('\n', stderr);
}

static void group_free(struct rlx__cl_group *g) {
  if (!g)
    return;
  group_report(g);
  if (g->avg)
    clReleaseMemObject(g->avg);
  pthread_mutex_destroy(&g->mu);
  pthread_cond_destroy(&g->cv);
  free(g);
}

cl_context rlx__cl_ctx_take(cl_platform_id platform, cl_device_id dev, cl_int *e,
                            struct rlx__cl_group **grp) {
  cl_context ctx = NULL;
  *grp = NULL;
  *e = CL_SUCCESS;
  pthread_mutex_lock(&contexts.mu);
  int free_slot = -1;
  for (int i = 0; i < RLX__CL_MAX_DEVICES && !ctx; i++) {
    if (contexts.at[i].users > 0 && contexts.at[i].dev == dev) {
      ctx = contexts.at[i].ctx;
      *grp = contexts.at[i].grp;
      contexts.at[i].users++;
    } else if (contexts.at[i].users == 0 && free_slot < 0) {
      free_slot = i;
    }
  }
  if (!ctx) {
    cl_context_properties props[] = {CL_CONTEXT_PLATFORM, (cl_context_properties)platform, 0};
    ctx = clCreateContext(props, 1, &dev, NULL, NULL, e);
    if (*e == CL_SUCCESS && free_slot >= 0) {
      contexts.at[free_slot].dev = dev;
      contexts.at[free_slot].ctx = ctx;
      contexts.at[free_slot].users = 1;
      contexts.at[free_slot].grp = *grp = group_new();
    } /* (no slot free: this model's own, released by rlx__cl_ctx_drop as one) */
  }
  pthread_mutex_unlock(&contexts.mu);
  return ctx;
}

void rlx__cl_ctx_drop(cl_context ctx) {
  pthread_mutex_lock(&contexts.mu);
  for (int i = 0; i < RLX__CL_MAX_DEVICES; i++)
    if (contexts.at[i].users > 0 && contexts.at[i].ctx == ctx) {
      if (--contexts.at[i].users == 0) {
        group_free(contexts.at[i].grp);
        contexts.at[i].grp = NULL;
        clReleaseContext(ctx);
      }
      pthread_mutex_unlock(&contexts.mu);
      return;
    }
  pthread_mutex_unlock(&contexts.mu);
  clReleaseContext(ctx);
}

static const char *whose(const struct rlx__cl_member *me) {
  return me->owner[0] ? me->owner : "this process's own";
}

void rlx__cl_group_leave(struct rlx__cl_group *g, const struct rlx__cl_member *me) {
  if (!g)
    return;
  pthread_mutex_lock(&g->mu);
  for (int i = 0; i < g->njoined; i++)
    if (g->joined[i] == me->self) {
      g->joined[i] = g->joined[--g->njoined];
      if (g->njoined == 0)
        g->lost[0] = '\0'; /* nobody left to tell: a fresh start */
      else if (!g->lost[0])
        snprintf(g->lost, sizeof g->lost, "%s", whose(me));
      pthread_cond_broadcast(&g->cv);
      break;
    }
  pthread_mutex_unlock(&g->mu);
}

/* Member j's outcome: rc, and the message its thread will raise. */
static void outcome(struct rlx__cl_group *g, int j, int rc, const char *why) {
  g->rc[j] = rc;
  snprintf(g->why[j], sizeof g->why[j], "%.319s", rc == RLX_OK ? "" : why);
}

/* A part queued for every member (what) failed on me's queue: the step
 * fails for all with its error, and the group ends. */
static void fail_all(struct rlx__cl_group *g, int rc, const char *what,
                     const struct rlx__cl_member *me) {
  snprintf(g->lost, sizeof g->lost, "%s failed on %s model", what, whose(me));
  for (int j = 0; j < g->members; j++)
    outcome(g, j, rc, rlx_errmsg());
}

/* The step by parts, queued by the last to arrive (me): every member's
 * gradient, the average (its buffer made at the first step), every
 * member's update. A part that fails ends the group (lost): its member's
 * model is left between two states. */
static void run_parts(struct rlx__cl_group *g, const struct rlx__cl_member *me,
                      rlx__cl_average_fn average) {
  int m = g->members, got = 0, rc = RLX_OK;
  cl_event ready[GROUP_MAX], done = NULL;
  cl_mem grads[GROUP_MAX];
  for (; got < m && rc == RLX_OK; got++) {
    grads[got] = g->at[got].grad;
    if ((rc = g->at[got].gradient(&g->at[got], &ready[got])) != RLX_OK)
      break;
  }
  char why[512];
  if (rc != RLX_OK) {
    outcome(g, got, rc, rlx_errmsg());
    snprintf(why, sizeof why, "rlx_model_step_shared: the gradient of member %d (%s model) "
             "failed: %.150s", got, whose(&g->at[got]), rlx_errmsg());
    snprintf(g->lost, sizeof g->lost, "member %d's gradient failed", got);
    for (int j = 0; j < m; j++)
      if (j != got)
        outcome(g, j, RLX_ERR_DEVICE, why);
  }
  /* two members: the average and both updates in one (no average buffer,
   * no marker); otherwise the average, then each member's update */
  int paired = rc == RLX_OK && m == 2 && me->pair;
  if (paired && (rc = me->pair(me, g->at, ready)) != RLX_OK)
    fail_all(g, rc, "the members' update", me);
  if (rc == RLX_OK && !paired && !g->avg) {
    cl_int e;
    g->avg = clCreateBuffer(me->ctx, CL_MEM_READ_WRITE, sizeof(float) * me->n, NULL, &e);
    if (e != CL_SUCCESS)
      rc = rlx__err(RLX_ERR_DEVICE, "%s: no device memory for the members' average (%d)",
                    me->name, (int)e);
  }
  if (rc == RLX_OK && !paired && (rc = average(me, g->avg, m, grads, ready, &done)) != RLX_OK)
    fail_all(g, rc, "the average", me);
  for (int j = 0; j < got; j++)
    clReleaseEvent(ready[j]);
  for (int j = 0; rc == RLX_OK && !paired && j < m; j++) /* (each its own: the others' queued) */
    if (g->at[j].update(&g->at[j], g->avg, done) != RLX_OK) {
      outcome(g, j, RLX_ERR_DEVICE, rlx_errmsg());
      if (!g->lost[0])
        snprintf(g->lost, sizeof g->lost, "member %d's update failed", j);
    }
  if (done)
    clReleaseEvent(done);
}

/* The last to arrive (me) queues the step, joint where two members allow
 * (a failure ends the group, as a part's does), else by parts; then the
 * step is over for everyone. */
static void run_step(struct rlx__cl_group *g, const struct rlx__cl_member *me,
                     rlx__cl_average_fn average) {
  int m = g->members;
  for (int j = 0; j < m; j++)
    outcome(g, j, RLX_OK, NULL);
  g->n = me->n; /* (every member's: checked as each arrived) */
  int joint = m == 2 && me->joint ? me->joint(me, g->at) : RLX__CL_NOT_JOINT;
  if (joint == RLX__CL_NOT_JOINT)
    run_parts(g, me, average);
  else if (joint == RLX_OK)
    g->prof.joint++, joint_steps++;
  else
    fail_all(g, joint, "the members' joint step", me);
  for (int j = 0; j < m; j++)
    g->at[j].self = NULL;
  g->arrived = 0;
  g->gen++;
  pthread_cond_broadcast(&g->cv);
}

/* The members' parameters: known once a step ran (n), else those of a
 * member already waiting (each checked as it arrived); 0 before any. */
static size_t members_size(const struct rlx__cl_group *g) {
  for (int j = 0; !g->n && g->arrived > 0 && j < GROUP_MAX; j++)
    if (g->at[j].self)
      return g->at[j].n;
  return g->n;
}

int rlx__cl_group_step(struct rlx__cl_group *g, const struct rlx__cl_member *me, int index,
                       int members, rlx__cl_average_fn average) {
  int rc = RLX_OK;
  pthread_mutex_lock(&g->mu);
  size_t theirs = members_size(g);
  if (g->lost[0])
    rc = rlx__err(RLX_ERR_PEER_LOST, "%s: rlx_model_step_shared: a model stepping with this one "
                  "(%s) is gone", me->name, g->lost);
  else if (members > GROUP_MAX || (g->arrived > 0 && members != g->members))
    rc = rlx__err(RLX_ERR_MISMATCH, "%s: rlx_model_step_shared: %d members, where another member "
                  "said %d", me->name, members, g->members);
  else if (g->at[index].self)
    rc = rlx__err(RLX_ERR_MISMATCH, "%s: rlx_model_step_shared: two members gave index %d",
                  me->name, index);
  else if (theirs && theirs != me->n)
    rc = rlx__err(RLX_ERR_MISMATCH, "%s: rlx_model_step_shared: a model of %zu parameters "
                  "where the others have %zu", me->name, me->n, theirs);
  if (rc != RLX_OK) {
    pthread_mutex_unlock(&g->mu);
    return rc;
  }
  int seen = 0;
  for (int i = 0; i < g->njoined; i++)
    seen |= g->joined[i] == me->self;
  if (!seen)
    g->joined[g->njoined++] = me->self;
  g->members = members;
  g->at[index] = *me;
  unsigned long gen = g->gen;
  uint64_t t0 = g->prof.on ? rlx__now_ns() : 0;
  if (g->prof.on && g->arrived == 0)
    g->prof.first_at = t0;
  if (++g->arrived == members) {
    run_step(g, me, average);
    if (g->prof.on) {
      rlx__host_span_add(&g->prof.wait, g->prof.first_at, t0);
      rlx__host_turn(&g->prof.queue, t0, rlx__now_ns());
      g->prof.last[index]++;
    }
  } else {
    /* The last member queues the whole step (a few hundred us for the
     * small model's two members); a thread woken from the condition
     * variable then costs 35-60 us on these virtual machines, on the
     * step's path: where cores allow, poll for the step's end first
     * (rlx__share_spin_us, RLX_SPIN_US). */
    long spin = rlx__share_spin_us();
    if (spin > 0) {
      pthread_mutex_unlock(&g->mu);
      uint64_t until = rlx__now_ns() + (uint64_t)spin * 1000;
      for (unsigned k = 0; atomic_load_explicit(&g->gen, memory_order_acquire) == gen; k++)
        if (k % 64 == 63 && rlx__now_ns() >= until)
          break;
      pthread_mutex_lock(&g->mu);
    }
    while (g->gen == gen && !g->lost[0])
      pthread_cond_wait(&g->cv, &g->mu);
    if (g->gen == gen) { /* a member left while this one waited */
      g->at[index].self = NULL;
      g->arrived--;
      rc = rlx__err(RLX_ERR_PEER_LOST, "%s: rlx_model_step_shared: a model stepping with this one "
                    "(%s) is gone", me->name, g->lost);
    }
  }
  if (g->gen != gen && g->rc[index] != RLX_OK)
    rc = rlx__err(g->rc[index], "%s", g->why[index]);
  pthread_mutex_unlock(&g->mu);
  return rc;
}

long rlx__cl_joint_steps(void) { return joint_steps; }
