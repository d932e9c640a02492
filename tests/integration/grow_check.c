/* grow_check PLAN: the ranks of a job (and the ranks that join it, started
 * with RLX_JOIN=1 and the same PLAN) walk through PLAN, a comma-separated
 * list of steps, checking every collective at each size:
 *   wait=PATH  every rank waits until PATH exists (a test's cue)
 *   grow=N     rlx_comm_grow until the communicator has N ranks (60 s at
 *              most); a member lost meanwhile: shrink and go on
 *   kill=R     rank R (of the communicator) dies by SIGKILL; the others
 *              see RLX_ERR_PEER_LOST and shrink
 * After every change of size the leader tells everyone (joiners too) the
 * step it is at, and all check allreduce (small and 100003 floats),
 * bcast, reduce, allgather, reduce_scatter, alltoallv (64 KiB blocks: read
 * by reference in the shared segment, from the joiners too) and barrier,
 * and agree on the leader. Prints "grow_check: rank R: PASS at size N" at the end. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <rlxcoll/rlxcoll.h>

#define BIG 100003

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec / 1e9;
}

static int me = -1; /* this rank in the current communicator, for messages */

static void die(const char *what, int rc) {
  printf("grow_check: rank %d: %s: %s: %s\ngrow_check: rank %d: FAIL\n", me, what,
         rlx_strerror(rc), rlx_errmsg(), me);
  fflush(stdout);
  exit(1);
}

static void check(int ok, const char *what) {
  if (!ok) {
    printf("grow_check: rank %d: wrong result: %s\ngrow_check: rank %d: FAIL\n", me, what, me);
    fflush(stdout);
    exit(1);
  }
}

/* Every collective, right, on c. */
static void verify(rlx_comm_t *c) {
  int n = rlx_comm_size(c), r = rlx_comm_rank(c), leader = rlx_comm_leader(c), rc;
  me = r;
  double v = r + 1;
  if ((rc = rlx_allreduce(RLX_IN_PLACE, &v, 1, RLX_FLOAT64, RLX_SUM, c)) != RLX_OK)
    die("allreduce", rc);
  check(v == (double)n * (n + 1) / 2, "allreduce");
  float *big = malloc(sizeof(float) * BIG);
  for (int i = 0; i < BIG; i++)
    big[i] = (float)(r + (i % 7));
  if ((rc = rlx_allreduce(RLX_IN_PLACE, big, BIG, RLX_FLOAT32, RLX_SUM, c)) != RLX_OK)
    die("allreduce (large)", rc);
  for (int i = 0; i < BIG; i++)
    check(big[i] == (float)(n * (n - 1) / 2 + n * (i % 7)), "allreduce (large)");
  free(big);
  int b = r == leader ? 1000 + n : -1;
  if ((rc = rlx_bcast(&b, 1, RLX_INT32, leader, c)) != RLX_OK)
    die("bcast", rc);
  check(b == 1000 + n, "bcast");
  int *all = calloc((size_t)n, sizeof(int)), *mine = malloc(sizeof(int) * (size_t)n), got = -1;
  if ((rc = rlx_allgather(&leader, all, 1, RLX_INT32, c)) != RLX_OK)
    die("allgather", rc);
  for (int i = 0; i < n; i++)
    check(all[i] == leader, "every rank names the same leader");
  if ((rc = rlx_allgather(&r, all, 1, RLX_INT32, c)) != RLX_OK)
    die("allgather", rc);
  for (int i = 0; i < n; i++) {
    check(all[i] == i, "allgather");
    mine[i] = r + i;
  }
  if ((rc = rlx_reduce_scatter(mine, &got, 1, RLX_INT32, RLX_SUM, c)) != RLX_OK)
    die("reduce_scatter", rc);
  check(got == n * (n - 1) / 2 + n * r, "reduce_scatter");
  long s = r, t = -1;
  if ((rc = rlx_reduce(&s, &t, 1, RLX_INT64, RLX_SUM, n - 1, c)) != RLX_OK)
    die("reduce", rc);
  check(r != n - 1 || t == (long)n * (n - 1) / 2, "reduce");
  size_t blk = 16384, *cnt = malloc(sizeof(size_t) * (size_t)n),
         *dsp = malloc(sizeof(size_t) * (size_t)n);
  float *in = malloc(sizeof(float) * blk * (size_t)n), *out = malloc(sizeof(float) * blk * (size_t)n);
  for (int i = 0; i < n; i++) {
    cnt[i] = blk;
    dsp[i] = blk * (size_t)i;
  }
  for (size_t i = 0; i < blk * (size_t)n; i++)
    in[i] = (float)(r * 100 + (int)(i / blk)) + (float)(i % 8) / 8;
  if ((rc = rlx_alltoallv(in, cnt, dsp, out, cnt, dsp, RLX_FLOAT32, c)) != RLX_OK)
    die("alltoallv", rc);
  for (size_t i = 0; i < blk * (size_t)n; i++)
    check(out[i] == (float)((int)(i / blk) * 100 + r) + (float)(i % 8) / 8, "alltoallv");
  free(in);
  free(out);
  free(cnt);
  free(dsp);
  if ((rc = rlx_barrier(c)) != RLX_OK)
    die("barrier", rc);
  free(all);
  free(mine);
  printf("grow_check: rank %d: size %d: collectives right\n", r, n);
  fflush(stdout);
}

static void replace(rlx_comm_t **c, rlx_comm_t *next) {
  if (*c != rlx_comm_world())
    rlx_comm_free(c);
  *c = next;
}

/* The leader tells every rank (a joiner first of all) where the plan is. */
static int tell_step(rlx_comm_t *c, int step) {
  int rc = rlx_bcast(&step, 1, RLX_INT32, rlx_comm_leader(c), c);
  if (rc != RLX_OK)
    die("bcast (step)", rc);
  verify(c);
  return step;
}

static void shrink(rlx_comm_t **c) {
  rlx_comm_t *s = NULL;
  int rc = rlx_comm_shrink(*c, &s);
  if (rc != RLX_OK)
    die("rlx_comm_shrink", rc);
  replace(c, s);
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: grow_check PLAN\n");
    return 2;
  }
  double t_start = now();
  int rc = rlx_init(&argc, &argv);
  if (rc != RLX_OK) {
    printf("grow_check: rlx_init: %s: %s\n", rlx_strerror(rc), rlx_errmsg());
    return 3;
  }
  char *steps[32];
  int nsteps = 0;
  for (char *tok = strtok(argv[1], ","); tok && nsteps < 32; tok = strtok(NULL, ","))
    steps[nsteps++] = tok;
  rlx_comm_t *c = rlx_comm_world();
  int step = 0;
  if (rlx_joined()) {
    me = rlx_comm_rank(c);
    printf("grow_check: joined as rank %d of %d after %.2f s\n", me, rlx_comm_size(c),
           now() - t_start);
    step = tell_step(c, -1);
  } else {
    printf("grow_check: rank %d (pid %d)\n", rlx_comm_rank(c), (int)getpid());
    verify(c);
  }
  for (; step < nsteps; step++) {
    if (strncmp(steps[step], "wait=", 5) == 0) {
      while (access(steps[step] + 5, F_OK) != 0)
        usleep(10000);
    } else if (strncmp(steps[step], "grow=", 5) == 0) {
      int want = atoi(steps[step] + 5);
      double t0 = now();
      while (rlx_comm_size(c) < want) {
        if (now() - t0 > 60)
          die("growing: not enough joiners within 60 s", RLX_ERR_TIMEOUT);
        rlx_comm_t *g = NULL;
        double tg = now();
        rc = rlx_comm_grow(c, &g);
        if (now() - tg > 0.5)
          printf("grow_check: rank %d: rlx_comm_grow took %.2f s: %s\n", rlx_comm_rank(c),
                 now() - tg, rc ? rlx_errmsg() : "ok");
        if (rc == RLX_ERR_PEER_LOST || rc == RLX_ERR_REVOKED) {
          printf("grow_check: rank %d: rlx_comm_grow: %s: %s; shrinking\n", rlx_comm_rank(c),
                 rlx_strerror(rc), rlx_errmsg());
          shrink(&c);
          tell_step(c, step);
          continue;
        }
        if (rc != RLX_OK)
          die("rlx_comm_grow", rc);
        int grew = rlx_comm_size(g) != rlx_comm_size(c);
        if (rlx_comm_size(g) < rlx_comm_size(c))
          printf("grow_check: rank %d: a member was lost during rlx_comm_grow: %d ranks now\n",
                 rlx_comm_rank(g), rlx_comm_size(g));
        replace(&c, g);
        if (grew)
          tell_step(c, step);
        else
          usleep(20000);
      }
    } else if (strncmp(steps[step], "kill=", 5) == 0) {
      int victim = atoi(steps[step] + 5);
      if (rlx_comm_rank(c) == victim) {
        fflush(stdout);
        raise(SIGKILL);
      }
      double v = 1;
      rc = rlx_allreduce(RLX_IN_PLACE, &v, 1, RLX_FLOAT64, RLX_SUM, c);
      check(rc == RLX_ERR_PEER_LOST || rc == RLX_ERR_REVOKED, "the kill was not noticed");
      int before = rlx_comm_size(c);
      shrink(&c);
      check(rlx_comm_size(c) == before - 1, "the shrink after a kill");
      verify(c);
    } else {
      die("unknown step in the plan", RLX_ERR_ARG);
    }
  }
  printf("grow_check: rank %d: PASS at size %d\n", rlx_comm_rank(c), rlx_comm_size(c));
  fflush(stdout);
  if (c != rlx_comm_world())
    rlx_comm_free(&c);
  return rlx_finalize() == RLX_OK ? 0 : 1;
}
