/* A scripted job for the trace, flight-recorder and statistics tests.
 *   observe_check script     a known sequence of calls (see below); prints
 *                            what it called, so a test can compare
 *   observe_check skip R K   K allreduces, but rank R skips the last one and
 *                            then sleeps (a hang on purpose); the others
 *                            fail at RLX_TIMEOUT
 *   observe_check sleep S    one allreduce, then every rank sleeps S seconds
 *                            inside nothing (for rlxrun --dump) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <rlxcoll/rlxcoll.h>

/* Sleep s seconds even if a signal (SIGUSR1 for the flight recorder)
 * interrupts: a handled signal ends sleep(3) early, as in any program. */
static void nap(double s) {
  struct timespec now, end;
  clock_gettime(CLOCK_MONOTONIC, &end);
  end.tv_sec += (time_t)s;
  do {
    clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &end, NULL);
    clock_gettime(CLOCK_MONOTONIC, &now);
  } while (now.tv_sec < end.tv_sec || (now.tv_sec == end.tv_sec && now.tv_nsec < end.tv_nsec));
}

static int check(int rc, const char *what) {
  if (rc != RLX_OK) {
    /* The message first: rlx_comm_rank on a world that never came up
     * would replace it. */
    char msg[512];
    snprintf(msg, sizeof msg, "%s", rlx_errmsg());
    fprintf(stderr, "observe_check: rank %d: %s: %s: %s\n",
            rlx_initialized() ? rlx_comm_rank(rlx_comm_world()) : -1, what, rlx_strerror(rc), msg);
    rlx_finalize();
    exit(1);
  }
  return rc;
}

/* 5 small allreduces (8 floats), 3 of 1 MiB, 2 bcasts of 100 ints,
 * 4 barriers, 1 allgather of 16 floats per rank. */
static void script(rlx_comm_t *w) {
  int n = rlx_comm_size(w);
  float *big = calloc(1 << 18, sizeof(float)), small[8] = {1, 2, 3, 4, 5, 6, 7, 8};
  float *gath = calloc((size_t)n * 16, sizeof(float)), mine[16] = {0};
  int ints[100] = {0};
  for (int i = 0; i < 5; i++)
    check(rlx_allreduce(RLX_IN_PLACE, small, 8, RLX_FLOAT32, RLX_SUM, w), "small allreduce");
  for (int i = 0; i < 3; i++)
    check(rlx_allreduce(RLX_IN_PLACE, big, 1 << 18, RLX_FLOAT32, RLX_SUM, w), "big allreduce");
  for (int i = 0; i < 2; i++)
    check(rlx_bcast(ints, 100, RLX_INT32, 0, w), "bcast");
  for (int i = 0; i < 4; i++)
    check(rlx_barrier(w), "barrier");
  check(rlx_allgather(mine, gath, 16, RLX_FLOAT32, w), "allgather");
  printf("rank %d: script done: allreduce 8 (bytes %d), bcast 2 (bytes %d), barrier 4, "
         "allgather 1 (bytes %d)\n",
         rlx_comm_rank(w), 5 * 32 + 3 * (1 << 20), 2 * 400, 16 * 4);
  free(big);
  free(gath);
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: observe_check script | skip R K | sleep S [CALLS]\n");
    return 2;
  }
  check(rlx_init(&argc, &argv), "rlx_init");
  rlx_comm_t *w = rlx_comm_world();
  int me = rlx_comm_rank(w);
  if (strcmp(argv[1], "script") == 0) {
    script(w);
  } else if (strcmp(argv[1], "skip") == 0 && argc == 4) {
    int skipper = atoi(argv[2]), k = atoi(argv[3]);
    float v = 1;
    for (int i = 0; i < k; i++) {
      if (me == skipper && i == k - 1) {
        fprintf(stderr, "observe_check: rank %d skips allreduce %d and sleeps\n", me, i);
        nap(60);
        return 3;
      }
      check(rlx_allreduce(RLX_IN_PLACE, &v, 1, RLX_FLOAT32, RLX_SUM, w), "allreduce");
    }
  } else if (strcmp(argv[1], "sleep") == 0 && (argc == 3 || argc == 4)) {
    float v = 1;
    for (int i = 0, calls = argc == 4 ? atoi(argv[3]) : 1; i < calls; i++)
      check(rlx_allreduce(RLX_IN_PLACE, &v, 1, RLX_FLOAT32, RLX_SUM, w), "allreduce");
    printf("rank %d: sleeping\n", me);
    fflush(stdout);
    nap(atof(argv[2]));
  } else {
    fprintf(stderr, "observe_check: bad arguments\n");
    return 2;
  }
  check(rlx_finalize(), "rlx_finalize");
  return 0;
}
