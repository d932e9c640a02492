/* grow_bench: what a joining rank costs a running job.
 *   members: grow_bench SECONDS PARAMS        (rlxrun -n N --max-np M ...)
 *   joiner:  grow_bench SECONDS PARAMS T0_NS  (rlxrun --join FILE -n 1 ...)
 * The job runs SECONDS after the joiner caught up (the leader decides when
 * to stop, in the control allreduce).
 *
 * A step is a data-parallel training step without the model: an
 * allreduce (average) of PARAMS floats of gradient, the SGD update with
 * momentum of PARAMS parameters, and the once-per-step control allreduce
 * (whether ranks wait to join, whether to stop, how many ranks are still
 * catching up), as in train --elastic.
 *
 * Growing takes no step of its own: rlx_comm_grow welcomes the joiner
 * (the job goes on while it connects) and, a few steps later, admits it.
 * The joiner then takes part at once, giving zeros (the average is over
 * the ranks that give gradients), while the state it needs (position,
 * parameters, momentum) comes from the leader in the background: a
 * nonblocking broadcast on a communicator of the leader and the joiners,
 * straight from the leader's memory (it waits for it to end before its
 * next update, while the next allreduce runs). The joiner keeps the
 * averaged gradients of the steps meanwhile and replays them on the state
 * when it arrives (the update is elementwise and the same code on every
 * rank: its parameters are then bit for bit the others'), and gives
 * gradients from then on. At the end every rank's parameters and momentum
 * are compared (a hash): the run fails if they differ.
 * (GROW_BENCH_SHARE=sync: the state goes by a blocking broadcast at the
 * admission instead, for comparison; GROW_BENCH_STEPS=1: each step of the
 * window, and the admission's parts.)
 *
 * The leader prints the median step before and after growing and the
 * pause: what the steps from the welcome to two steps after the joiner
 * caught up took beyond the median step of their size, and the same sum
 * over as many steps before the welcome (nobody joining: the reading's
 * noise). The joiner prints
 * the time from T0_NS (CLOCK_REALTIME when it was launched) to its
 * rlx_init returning, to its first step in the job and to catching up. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* RUSAGE_THREAD */
#endif
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <rlxcoll/rlxcoll.h>

#define MAX_STEPS (1 << 22)
#define MAX_LOG 512   /* steps a joiner may take to catch up */
#define STRIDE 61     /* the gradient's nonzero elements (the rest stay 0) */

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec / 1e9;
}

static double since_launch(int64_t t0_ns) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return ((double)ts.tv_sec * 1e9 + (double)ts.tv_nsec - (double)t0_ns) / 1e9;
}

static int cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static void check(int rc, const char *what) {
  if (rc != RLX_OK) {
    fprintf(stderr, "grow_bench: %s: %s: %s\n", what, rlx_strerror(rc), rlx_errmsg());
    exit(1);
  }
}

static void sgd(float *p, float *m, const float *g, size_t n) {
  for (size_t i = 0; i < n; i++) {
    m[i] = 0.9f * m[i] + g[i];
    p[i] -= 0.01f * m[i];
  }
}

static uint64_t fnv(const void *buf, size_t len, uint64_t h) {
  const unsigned char *b = buf;
  for (size_t i = 0; i < len; i++)
    h = (h ^ b[i]) * 0x100000001b3ull;
  return h;
}

/* The model and, on a joiner, its catching up. The state a joiner needs
 * is one buffer: the position, the parameters, the momentum. */
struct run {
  size_t n;
  float *g, *p, *m;      /* p and m: in state */
  unsigned char *state;
  long step;             /* the job's step (a joiner: known once caught up) */
  int catching;          /* a joiner still without the state */
  float *log[MAX_LOG];   /* the averaged gradients meanwhile */
  int nlog;
  int nready;            /* log[0..nready) made and touched before joining */
  rlx_comm_t *h;         /* the leader and the joiners */
  rlx_request_t *req;
};

static size_t state_len(size_t n) { return 8 + 8 * n; }

static void set_step(struct run *r, long step) {
  int64_t pos = step;
  r->step = step;
  memcpy(r->state, &pos, 8);
}

/* After an admission (c grew): the leader and the joiners make h, and the
 * leader's state goes to them by a nonblocking broadcast straight from
 * where it lives (no copy: the leader waits for it before its next
 * update, while the next allreduce runs, and a joiner's progress thread
 * reads it from the leader's memory). */
static void start_share(struct run *r, rlx_comm_t *c, int joiner) {
  int lead = rlx_comm_rank(c) == rlx_comm_leader(c);
  double t0 = now_s();
  check(rlx_comm_split(c, lead || joiner ? 0 : RLX_UNDEFINED, lead ? -1 : rlx_comm_rank(c), &r->h),
        "rlx_comm_split (state)");
  if (r->h == NULL)
    return;
  double t1 = now_s();
  check(rlx_ibcast(r->state, state_len(r->n), RLX_UINT8, 0, r->h, &r->req), "rlx_ibcast (state)");
  if (getenv("GROW_BENCH_STEPS"))
    printf("grow_bench: rlx_comm_split %.1f us, rlx_ibcast %.1f us\n", (t1 - t0) * 1e6,
           (now_s() - t1) * 1e6);
}

/* Did the communicator rlx_comm_grow returned bring new ranks in? Each of
 * its ranks says whether it is one (a joiner right after rlx_init): the
 * first half of an admission brings nobody in. */
static int newcomers(rlx_comm_t *c, int mine) {
  int64_t v = mine;
  check(rlx_allreduce(RLX_IN_PLACE, &v, 1, RLX_INT64, RLX_MAX, c), "allreduce (newcomers)");
  return v > 0;
}

/* GROW_BENCH_SHARE=sync: the state goes by a blocking broadcast on the
 * grown communicator at the admission (what train --elastic does), for
 * comparison. */
/* GROW_BENCH_STEPS=1: the page faults of this thread so far (minor and major;
 * the library's progress thread counts apart). */
static long minor_faults(void) {
  struct rusage u;
  getrusage(RUSAGE_THREAD, &u);
  return u.ru_minflt + u.ru_majflt;
}

static void share_now(struct run *r, rlx_comm_t *c) {
  check(rlx_bcast(r->state, state_len(r->n), RLX_UINT8, rlx_comm_leader(c), c), "rlx_bcast (state)");
  int64_t pos;
  memcpy(&pos, r->state, 8);
  r->step = (long)pos;
}

/* Is the state here (wait: the leader, before it changes it)? A joiner
 * then replays the steps it missed. */
static void poll_share(struct run *r, int wait) {
  int done = 0;
  if (r->req == NULL)
    return;
  if (wait)
    check(rlx_wait(&r->req), "the state's broadcast");
  else
    check(rlx_test(&r->req, &done), "the state's broadcast");
  if (!wait && !done)
    return;
  if (r->catching) {
    int64_t pos;
    memcpy(&pos, r->state, 8);
    for (int k = 0; k < r->nlog; k++) {
      sgd(r->p, r->m, r->log[k], r->n);
      if (k >= r->nready)
        free(r->log[k]);
    }
    set_step(r, (long)pos + r->nlog);
    r->catching = 0;
  }
  check(rlx_comm_free(&r->h), "rlx_comm_free (state)");
}

int main(int argc, char **argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: grow_bench SECONDS PARAMS [T0_NS]\n");
    return 2;
  }
  double secs = atof(argv[1]);
  struct run r;
  memset(&r, 0, sizeof(r));
  r.n = (size_t)atol(argv[2]);
  int64_t t0 = argc > 3 ? atoll(argv[3]) : 0;
  /* the model's memory first, touched (a joiner joins ready to step) */
  r.g = malloc(4 * r.n);
  r.state = malloc(state_len(r.n));
  double *times = calloc(MAX_STEPS, sizeof(double));
  double *grads = calloc(MAX_STEPS, sizeof(double)); /* each step's gradient allreduce */
  int *sizes = calloc(MAX_STEPS, sizeof(int));
  if (!r.g || !r.state || !times || !grads || !sizes) {
    fprintf(stderr, "grow_bench: no memory\n");
    return 1;
  }
  /* (zero from a volatile: a memset of a constant 0 right after malloc is
   * folded into calloc, whose pages are not touched: the joiner's first
   * step then took ~600 page faults, 0.3-0.9 ms the members waited for) */
  static volatile unsigned char zero = 0;
  memset(r.g, zero, 4 * r.n);
  memset(r.state, zero, state_len(r.n));
  /* a joiner's first steps' gradients, kept while it catches up (most
   * catch up in 1-2 steps) */
  const char *join = getenv("RLX_JOIN");
  for (; join != NULL && strcmp(join, "1") == 0 && r.nready < 4; r.nready++) {
    if ((r.log[r.nready] = malloc(4 * r.n)) == NULL) {
      fprintf(stderr, "grow_bench: no memory\n");
      return 1;
    }
    memset(r.log[r.nready], zero, 4 * r.n);
  }
  r.p = (float *)(r.state + 8);
  r.m = r.p + r.n;
  check(rlx_init(&argc, &argv), "rlx_init");
  double t_init = t0 ? since_launch(t0) : 0, t_first = 0, t_ready = 0, t_start = now_s(), t_done = 0;
  rlx_comm_t *c = rlx_comm_world();
  long k = 0, welcomed = -1, admitted = -1, caught = -1;
  int joined = rlx_joined(), catching_ranks = 0, size0 = rlx_comm_size(c);
  int verbose = getenv("GROW_BENCH_STEPS") != NULL;
  long faults[5] = {0}; /* in a joiner's first steps */
  const char *share = getenv("GROW_BENCH_SHARE");
  int sync_share = share != NULL && strcmp(share, "sync") == 0;
  double t_shared = 0;
  long f_shared = 0;
  if (joined) {
    newcomers(c, 1);
    if (sync_share) {
      double tb = now_s();
      long f0 = minor_faults();
      share_now(&r, c);
      t_shared = now_s();
      f_shared = minor_faults();
      if (getenv("GROW_BENCH_STEPS"))
        printf("grow_bench: joiner's broadcast of the state %.1f us, %ld page faults\n",
               (t_shared - tb) * 1e6, f_shared - f0);
    } else {
      r.catching = 1;
      start_share(&r, c, 1);
      catching_ranks = 1; /* (at least: every joiner of this admission) */
    }
  }
  for (; k < MAX_STEPS; k++) { /* k: this process's step count */
    double ts = now_s();
    long fs = k < 5 && joined && verbose ? minor_faults() : 0;
    int size = rlx_comm_size(c), rank = rlx_comm_rank(c);
    for (size_t i = 0; i < r.n; i += STRIDE)
      r.g[i] = r.catching ? 0.0f : 1e-3f * (float)((r.step + rank) % 7);
    if (k == 0 && t_shared > 0 && getenv("GROW_BENCH_STEPS"))
      printf("grow_bench: joiner's first allreduce called %.1f us after the broadcast returned "
             "(%ld page faults)\n", (now_s() - t_shared) * 1e6, minor_faults() - f_shared);
    check(rlx_allreduce(RLX_IN_PLACE, r.g, r.n, RLX_FLOAT32, RLX_AVG, c), "allreduce");
    grads[k] = now_s() - ts;
    if (catching_ranks > 0) { /* the average over the ranks that gave gradients */
      float f = (float)size / (float)(size - catching_ranks);
      for (size_t i = 0; i < r.n; i++)
        r.g[i] *= f;
    }
    if (r.catching) {
      if (r.nlog == MAX_LOG ||
          (r.nlog >= r.nready && (r.log[r.nlog] = malloc(4 * r.n)) == NULL))
        check(RLX_ERR_NOMEM, "catching up: too many steps");
      memcpy(r.log[r.nlog++], r.g, 4 * r.n);
    } else {
      poll_share(&r, 1); /* (the leader: the state must not change under the broadcast) */
      sgd(r.p, r.m, r.g, r.n);
      set_step(&r, r.step + 1);
    }
    poll_share(&r, 0);
    if (joined && !r.catching && t_ready == 0)
      t_ready = since_launch(t0);
    int lead = rank == rlx_comm_leader(c);
    double t = now_s();
    int64_t ctl[3] = {rlx_comm_joiners(c),
                      lead && ((t_done > 0 && t - t_done > secs) || t - t_start > 60),
                      r.catching};
    check(rlx_allreduce(RLX_IN_PLACE, ctl, 3, RLX_INT64, RLX_SUM, c), "allreduce (control)");
    catching_ranks = (int)ctl[2];
    if (admitted >= 0 && caught < 0 && catching_ranks == 0) {
      caught = k;
      t_done = now_s();
    }
    if (ctl[0] > 0 && !ctl[1]) {
      rlx_comm_t *grown = NULL;
      double tg = now_s();
      check(rlx_comm_grow(c, &grown), "rlx_comm_grow");
      if (getenv("GROW_BENCH_STEPS"))
        printf("grow_bench: rlx_comm_grow %.1f us\n", (now_s() - tg) * 1e6);
      if (c != rlx_comm_world())
        check(rlx_comm_free(&c), "rlx_comm_free");
      c = grown;
      if (welcomed < 0)
        welcomed = k;
      if (newcomers(c, 0)) {
        admitted = k;
        if (sync_share) {
          share_now(&r, c);
        } else {
          catching_ranks = rlx_comm_size(c) - size;
          start_share(&r, c, 0);
        }
      }
    }
    times[k] = now_s() - ts;
    if (k < 5 && joined && verbose)
      faults[k] = minor_faults() - fs;
    sizes[k] = size;
    if (joined && t_first == 0)
      t_first = since_launch(t0);
    if (ctl[1])
      break;
  }
  long steps = k + 1;
  /* every rank's state the same? */
  uint64_t h = fnv(r.m, 4 * r.n, fnv(r.p, 4 * r.n, 0xcbf29ce484222325ull)), lo = h, hi = h;
  check(rlx_allreduce(RLX_IN_PLACE, &lo, 1, RLX_UINT64, RLX_MIN, c), "allreduce (hash)");
  check(rlx_allreduce(RLX_IN_PLACE, &hi, 1, RLX_UINT64, RLX_MAX, c), "allreduce (hash)");
  int same = lo == hi;
  if (joined && getenv("GROW_BENCH_STEPS"))
    for (long i = 0; i < 5 && i < steps; i++)
      printf("grow_bench: joiner's step %ld: %.1f us (its gradients' allreduce %.1f us), %ld page "
             "faults\n", i, times[i] * 1e6, grads[i] * 1e6, faults[i]);
  if (joined)
    printf("grow_bench: joiner: rlx_init returned %.3f s after launch, its first step in the "
           "job done %.3f s, caught up %.3f s after launch\n", t_init, t_first, t_ready);
  if (rlx_comm_rank(c) == rlx_comm_leader(c) && admitted >= 0 && caught >= 0 && !joined) {
    /* medians by size, outside the window [welcomed, caught + 2] */
    long end = caught + 2 < steps - 1 ? caught + 2 : steps - 1;
    double *v = calloc((size_t)steps, sizeof(double)), med[2] = {0, 0};
    int sz[2] = {size0, rlx_comm_size(c)};
    for (int s = 0; s < 2; s++) {
      long nv = 0;
      for (long i = 1; i < steps - 1; i++)
        if ((i < welcomed || i > end) && sizes[i] == sz[s])
          v[nv++] = times[i];
      qsort(v, (size_t)nv, sizeof(double), cmp);
      med[s] = nv ? v[nv / 2] : 0;
    }
    free(v);
    double pause = 0, at_welcome = times[welcomed] - med[0], at_admission = times[admitted] - med[0];
    for (long i = welcomed; i <= end; i++) {
      pause += times[i] - (sizes[i] == sz[0] ? med[0] : med[1]);
      if (getenv("GROW_BENCH_STEPS")) /* each step of the window */
        printf("grow_bench: step %ld: %d ranks, %.1f us (the gradients' allreduce %.1f us)\n", i,
               sizes[i], times[i] * 1e6, grads[i] * 1e6);
    }
    /* The same sum over as many steps just before the welcome: what the
     * pause would read with nobody joining (the steps' spread; a median
     * baseline under a long tail reads above 0). */
    long len = end - welcomed + 1, from = welcomed - 8 - len;
    double control = 0;
    for (long i = from; i >= 1 && i < welcomed - 8; i++)
      control += times[i] - med[0];
    printf("grow_bench: %d -> %d ranks: median step %.1f -> %.1f us; pause %.1f us (%.2f steps): "
           "the welcome's step +%.1f us, %ld step(s) later the admission's +%.1f us, caught up "
           "%ld step(s) after; state %s on every rank; the %ld steps before: %+.1f us\n", sz[0],
           sz[1], med[0] * 1e6, med[1] * 1e6, pause * 1e6, pause / med[1], at_welcome * 1e6,
           admitted - welcomed, at_admission * 1e6, caught - admitted,
           same ? "the same" : "DIFFERENT", from >= 1 ? len : 0, control * 1e6);
  }
  if (!same && rlx_comm_rank(c) == 0)
    fprintf(stderr, "grow_bench: the ranks' parameters differ after growing\n");
  if (c != rlx_comm_world())
    rlx_comm_free(&c);
  free(r.g);
  free(r.state);
  free(times);
  free(grads);
  free(sizes);
  return rlx_finalize() == RLX_OK && same ? 0 : 1;
}
