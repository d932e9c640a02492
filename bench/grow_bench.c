/* grow_bench: what a joining rank costs a running job.
 *   members: grow_bench SECONDS PARAMS        (rlxrun -n N --max-np M ...)
 *   joiner:  grow_bench SECONDS PARAMS T0_NS  (rlxrun --join FILE -n 1 ...)
 * The job runs SECONDS after the joiner came (the leader decides when to
 * stop, in the control allreduce).
 * Every step is one allreduce of PARAMS floats (a model's gradient) and
 * the once-per-step control allreduce (whether ranks wait to join), as in
 * train --elastic. When ranks wait, every rank calls rlx_comm_grow and the
 * leader broadcasts the state a joiner needs (position, parameters and
 * momentum: 2 x PARAMS floats). The leader prints the median step and the
 * step that admitted the joiner (the pause is the difference); the joiner
 * prints the time from T0_NS (CLOCK_REALTIME when it was launched) to its
 * rlx_init returning and to the end of its first step. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <rlxcoll/rlxcoll.h>

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

/* The leader's state to every rank: position, parameters, momentum. */
static void share(rlx_comm_t *c, long *step, float *params, float *mom, size_t n) {
  int leader = rlx_comm_leader(c);
  int64_t pos = *step;
  check(rlx_bcast(&pos, 1, RLX_INT64, leader, c), "bcast (position)");
  check(rlx_bcast(params, n, RLX_FLOAT32, leader, c), "bcast (parameters)");
  check(rlx_bcast(mom, n, RLX_FLOAT32, leader, c), "bcast (momentum)");
  *step = (long)pos;
}

int main(int argc, char **argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: grow_bench SECONDS PARAMS [T0_NS]\n");
    return 2;
  }
  double secs = atof(argv[1]);
  long steps = 1 << 22;
  size_t n = (size_t)atol(argv[2]);
  int64_t t0 = argc > 3 ? atoll(argv[3]) : 0;
  check(rlx_init(&argc, &argv), "rlx_init");
  double t_init = t0 ? since_launch(t0) : 0;
  float *g = calloc(n, sizeof(float)), *p = calloc(n, sizeof(float)), *m = calloc(n, sizeof(float));
  double *times = calloc((size_t)steps, sizeof(double)), t_start = now_s(), t_grew = 0;
  double t_admit = 0, t_state = 0;
  rlx_comm_t *c = rlx_comm_world();
  long step = 0, grew_at = -1;
  int joined = rlx_joined();
  if (joined)
    share(c, &step, p, m, n);
  for (; step < steps; step++) {
    double ts = now_s();
    check(rlx_allreduce(RLX_IN_PLACE, g, n, RLX_FLOAT32, RLX_AVG, c), "allreduce");
    int lead = rlx_comm_rank(c) == rlx_comm_leader(c);
    double t = now_s();
    int64_t ctl[2] = {rlx_comm_joiners(c),
                      lead && ((t_grew > 0 && t - t_grew > secs) || t - t_start > 60)};
    check(rlx_allreduce(RLX_IN_PLACE, ctl, 2, RLX_INT64, RLX_MAX, c), "allreduce (control)");
    if (ctl[1] || step + 1 >= steps) {
      times[step] = now_s() - ts;
      steps = step + 1;
      break;
    }
    if (ctl[0] > 0) {
      rlx_comm_t *grown = NULL;
      double tg = now_s();
      check(rlx_comm_grow(c, &grown), "rlx_comm_grow");
      t_admit = now_s() - tg;
      if (c != rlx_comm_world())
        rlx_comm_free(&c);
      c = grown;
      long at = step;
      tg = now_s();
      share(c, &step, p, m, n);
      t_state = now_s() - tg;
      grew_at = at;
      t_grew = now_s();
    }
    times[step] = now_s() - ts;
    if (joined) { /* its first step in the job */
      printf("grow_bench: joiner: rlx_init returned %.3f s after launch, first step done %.3f s "
             "after launch\n", t_init, since_launch(t0));
      joined = 0;
    }
  }
  if (rlx_comm_rank(c) == rlx_comm_leader(c) && grew_at >= 0 && !rlx_joined()) {
    double grow_step = times[grew_at];
    times[grew_at] = times[steps - 1];
    qsort(times, (size_t)steps - 1, sizeof(double), cmp);
    double med = times[(steps - 1) / 2];
    printf("grow_bench: %d ranks after growing: median step %.1f us, the step that admitted "
           "the joiner %.1f us: pause %.1f us (%.2f steps; rlx_comm_grow %.1f us, the state %.1f us)\n",
           rlx_comm_size(c), med * 1e6, grow_step * 1e6, (grow_step - med) * 1e6,
           (grow_step - med) / med, t_admit * 1e6, t_state * 1e6);
  }
  if (c != rlx_comm_world())
    rlx_comm_free(&c);
  free(g);
  free(p);
  free(m);
  free(times);
  return rlx_finalize() == RLX_OK ? 0 : 1;
}
