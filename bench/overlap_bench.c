/* overlap_bench: how much of a nonblocking allreduce hides behind the
 * caller's own work, as a data-parallel step overlaps the gradients'
 * allreduce with the rest of its backward pass.
 *   overlap_bench [floats, default 4194304] [work_us, default: the allreduce's time] [iters]
 * Per rank, medians over iters: comm (a blocking rlx_allreduce), work (a
 * loop of floating-point updates on a private array, work_us long, alone)
 * and both (rlx_iallreduce, the same work, then rlx_test and, if it was
 * not done, rlx_wait). Rank 0 prints
 *   comm_us work_us both_us hidden done-before-wait K/iters
 * where hidden = (comm + work - both) / min(comm, work): 1 when the
 * allreduce moved entirely while the caller worked, 0 when it moved only
 * once the caller waited; K: how often rank 0's was done when the work
 * ended. Who moves it meanwhile is the progress thread (RLX_PROGRESS_BIND
 * says where it runs). */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <rlxcoll/rlxcoll.h>

static double now_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static void check(int rc, const char *what) {
  if (rc != RLX_OK) {
    fprintf(stderr, "overlap_bench: %s: %s\n", what, rlx_errmsg());
    exit(1);
  }
}

/* Work the compiler cannot drop: updates on a 64 KiB array (in L2, as a
 * GEMM tile's work is), for about us microseconds. */
static float scratch[16384];
static void work(double us) {
  double end = now_us() + us;
  do {
    for (int i = 0; i < 16384; i++)
      scratch[i] = scratch[i] * 0.999f + 0.001f;
  } while (now_us() < end);
}

static int by_value(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static double median(double *v, int n) {
  qsort(v, (size_t)n, sizeof(double), by_value);
  return v[n / 2];
}

int main(int argc, char **argv) {
  check(rlx_init(&argc, &argv), "rlx_init");
  size_t n = argc > 1 ? strtoull(argv[1], NULL, 10) : 4194304;
  double work_us = argc > 2 ? atof(argv[2]) : 0;
  int iters = argc > 3 ? atoi(argv[3]) : 30;
  if (n == 0 || iters < 1 || work_us < 0) {
    fprintf(stderr, "usage: overlap_bench [floats > 0] [work_us >= 0] [iters >= 1]\n");
    return 2;
  }
  rlx_comm_t *w = rlx_comm_world();
  float *in = malloc(n * sizeof(float)), *out = malloc(n * sizeof(float));
  double *t[3] = {malloc(iters * sizeof(double)), malloc(iters * sizeof(double)),
                  malloc(iters * sizeof(double))};
  if (in == NULL || out == NULL || !t[0] || !t[1] || !t[2]) {
    fprintf(stderr, "overlap_bench: no memory\n");
    return 1;
  }
  for (size_t i = 0; i < n; i++)
    in[i] = (float)(i % 7);
  for (int i = 0; i < 3; i++) /* warm: connections, pages */
    check(rlx_allreduce(in, out, n, RLX_FLOAT32, RLX_SUM, w), "rlx_allreduce");
  for (int i = 0; i < iters; i++) {
    check(rlx_barrier(w), "rlx_barrier");
    double t0 = now_us();
    check(rlx_allreduce(in, out, n, RLX_FLOAT32, RLX_SUM, w), "rlx_allreduce");
    t[0][i] = now_us() - t0;
  }
  double comm = median(t[0], iters);
  if (work_us == 0)
    work_us = comm;
  int early = 0;
  for (int i = 0; i < iters; i++) {
    check(rlx_barrier(w), "rlx_barrier");
    double t0 = now_us();
    work(work_us);
    t[1][i] = now_us() - t0;
    check(rlx_barrier(w), "rlx_barrier");
    t0 = now_us();
    rlx_request_t *req;
    check(rlx_iallreduce(in, out, n, RLX_FLOAT32, RLX_SUM, w, &req), "rlx_iallreduce");
    work(work_us);
    int fin = 0;
    check(rlx_test(&req, &fin), "rlx_test");
    early += fin;
    if (!fin)
      check(rlx_wait(&req), "rlx_wait");
    t[2][i] = now_us() - t0;
  }
  double busy = median(t[1], iters), both = median(t[2], iters);
  /* the slowest rank's reading, as the step's time is */
  double v[3] = {comm, busy, both}, m[3];
  for (int i = 0; i < 3; i++)
    check(rlx_allreduce(&v[i], &m[i], 1, RLX_FLOAT64, RLX_MAX, w), "rlx_allreduce (max)");
  double least = m[0] < m[1] ? m[0] : m[1];
  if (rlx_comm_rank(w) == 0)
    printf("%.1f %.1f %.1f %.2f done-before-wait %d/%d\n", m[0], m[1], m[2], (m[0] + m[1] - m[2]) / least, early, iters);
  free(in);
  free(out);
  for (int i = 0; i < 3; i++)
    free(t[i]);
  return rlx_finalize() == RLX_OK ? 0 : 1;
}
