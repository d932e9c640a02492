/* shrink_check: rank VICTIM (or the elected leader, with "leader") dies by
 * SIGKILL after a first allreduce; the survivors' next allreduce fails
 * with RLX_ERR_PEER_LOST, rlx_comm_shrink gives them a communicator of
 * size n-1 with one leader they all agree on, and collectives on it are
 * right.
 *   shrink_check leader|VICTIM
 *   shrink_check sub   (4 ranks: on a communicator of every rank in reverse
 *   order world rank 1, its rank 2, dies; the survivors' message names it
 *   by both: "lost rank 2 (world rank 1)", and the transport's reason
 *   after it says "world rank 1" too)
 *   shrink_check splitkill|dupkill|groupkill SEED   (4 ranks: rank 3 is
 *   killed 0-3 ms into rlx_comm_split (or dup, or rlx_comm_create_group of
 *   ranks 0, 2 and 3, which rank 1 takes no part in) and the new
 *   communicator's first call; every
 *   survivor's calls fail or complete, its next call on the world fails,
 *   and rlx_comm_shrink of the world gives all three a working
 *   communicator within 2 s) */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <rlxcoll/rlxcoll.h>

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void *kill_soon(void *arg) {
  struct timespec ts = {0, *(long *)arg};
  nanosleep(&ts, NULL);
  raise(SIGKILL);
  return NULL;
}

/* how: 's'plit, 'd'up or create 'g'roup */
static int split_kill(rlx_comm_t *w, int rank, unsigned seed, char how) {
  static long delay;
  pthread_t th;
  rlx_comm_t *sub = NULL, *s = NULL;
  double x = 1;
  if (rlx_barrier(w) != RLX_OK)
    return 2;
  if (rank == 3) {
    /* (a group is made in well under a millisecond: kill sooner) */
    delay = (long)(rand_r(&seed) % (how == 'g' ? 700 : 3000)) * 1000;
    pthread_create(&th, NULL, kill_soon, &delay);
  }
  static const int group[3] = {0, 2, 3};
  int rc1 = how == 'd' ? rlx_comm_dup(w, &sub)
            : how == 's' ? rlx_comm_split(w, rank % 2, 0, &sub)
            : rank == 1 ? RLX_OK /* (not a member) */
                        : rlx_comm_create_group(w, 3, group, 7, &sub);
  int rc2 = rc1 == RLX_OK && sub != NULL
                ? rlx_allreduce(RLX_IN_PLACE, &x, 1, RLX_FLOAT64, RLX_SUM, sub) : rc1;
  if (rank == 3)
    pause(); /* (the kill comes) */
  int rc3 = rlx_barrier(w); /* the world's next call: it lost rank 3 */
  double t0 = now();
  int rc4 = rlx_comm_shrink(w, &s);
  double took = now() - t0;
  x = rank;
  int rc5 = rc4 == RLX_OK ? rlx_allreduce(RLX_IN_PLACE, &x, 1, RLX_FLOAT64, RLX_SUM, s) : rc4;
  const char *e = getenv("RLX_TEST_TIME_SCALE");
  double k = e && atof(e) > 1 ? atof(e) : 1;
  int ok = rc3 != RLX_OK && rc4 == RLX_OK && rlx_comm_size(s) == 3 && rc5 == RLX_OK && x == 3 &&
           took < 2.0 * k;
  printf("shrink_check: rank %d: %s %s, its first allreduce %s, the world's barrier %s; "
         "shrink %s in %.2f s%s%s, allreduce %s (%g)\nshrink_check: rank %d: %s\n", rank,
         how == 'd' ? "dup" : how == 's' ? "split" : "create_group", rlx_strerror(rc1), rlx_strerror(rc2), rlx_strerror(rc3), rlx_strerror(rc4), took,
         rc4 ? ": " : "", rc4 ? rlx_errmsg() : "", rlx_strerror(rc5), x, rank, ok ? "PASS" : "FAIL");
  fflush(stdout);
  rlx_comm_free(&s);
  rlx_comm_free(&sub);
  return ok ? 0 : 1; /* (no rlx_finalize: its barrier would wait for the lost) */
}

int main(int argc, char **argv) {
  if (rlx_init(&argc, &argv) != RLX_OK) {
    fprintf(stderr, "shrink_check: rlx_init: %s\n", rlx_errmsg());
    return 2;
  }
  rlx_comm_t *w = rlx_comm_world();
  int rank = rlx_comm_rank(w), size = rlx_comm_size(w), old_leader = rlx_comm_leader(w);
  if (argc > 2 && (strcmp(argv[1], "splitkill") == 0 || strcmp(argv[1], "dupkill") == 0 ||
                   strcmp(argv[1], "groupkill") == 0))
    return size == 4 ? split_kill(w, rank, (unsigned)atoi(argv[2]), argv[1][0]) : 2;
  if (argc > 1 && strcmp(argv[1], "sub") == 0) {
    rlx_comm_t *rev = NULL;
    double x = 1;
    if (size != 4 || rlx_comm_split(w, 0, -rank, &rev) != RLX_OK ||
        rlx_allreduce(RLX_IN_PLACE, &x, 1, RLX_FLOAT64, RLX_SUM, rev) != RLX_OK) {
      fprintf(stderr, "shrink_check: sub: %s\n", rlx_errmsg());
      return 2;
    }
    if (rank == 1)
      raise(SIGKILL);
    int rc = rlx_allreduce(RLX_IN_PLACE, &x, 1, RLX_FLOAT64, RLX_SUM, rev);
    /* (its own words, or another survivor's passed on) */
    /* (and the transport's reason, which names world ranks, says so:
     * "connection to world rank 1 closed", not "to rank 1") */
    int ok = rc == RLX_ERR_PEER_LOST && strstr(rlx_errmsg(), "lost rank 2 (world rank 1)") != NULL &&
             strstr(rlx_errmsg(), "to rank ") == NULL && strstr(rlx_errmsg(), "from rank ") == NULL;
    printf("shrink_check: rank %d: %s: %s\nshrink_check: rank %d: %s\n", rank, rlx_strerror(rc),
           rlx_errmsg(), rank, ok ? "PASS" : "FAIL");
    fflush(stdout);
    rlx_comm_free(&rev);
    return ok ? 0 : 1; /* (no rlx_finalize: its barrier would wait for the lost) */
  }
  int victim = argc > 1 && strcmp(argv[1], "leader") ? atoi(argv[1]) : old_leader;
  double v = 1;
  if (rlx_allreduce(RLX_IN_PLACE, &v, 1, RLX_FLOAT64, RLX_SUM, w) != RLX_OK || v != size) {
    fprintf(stderr, "shrink_check: first allreduce: %s\n", rlx_errmsg());
    return 2;
  }
  if (rank == victim)
    raise(SIGKILL);
  double t0 = now();
  v = rank;
  int rc = rlx_allreduce(RLX_IN_PLACE, &v, 1, RLX_FLOAT64, RLX_SUM, w);
  int ok = rc == RLX_ERR_PEER_LOST;
  printf("shrink_check: rank %d: allreduce %s after %.2f s: %s\n", rank, rlx_strerror(rc),
         now() - t0, rc ? rlx_errmsg() : "");
  rlx_comm_t *s = NULL;
  t0 = now();
  rc = rlx_comm_shrink(w, &s);
  if (rc != RLX_OK) {
    printf("shrink_check: rank %d: shrink: %s: %s\nshrink_check: rank %d: FAIL\n", rank,
           rlx_strerror(rc), rlx_errmsg(), rank);
    return 1;
  }
  int srank = rlx_comm_rank(s), ssize = rlx_comm_size(s), leader = rlx_comm_leader(s);
  ok = ok && ssize == size - 1 && srank == (rank < victim ? rank : rank - 1);
  /* Everyone names the same leader, and sums the old ranks right. */
  int leaders[64] = {0};
  double sum = rank, want = (double)size * (size - 1) / 2 - victim;
  int rc2 = rlx_allgather(&leader, leaders, 1, RLX_INT32, s);
  int rc3 = rlx_allreduce(RLX_IN_PLACE, &sum, 1, RLX_FLOAT64, RLX_SUM, s);
  int from_leader = srank == leader ? 4242 : 0;
  int rc4 = rlx_bcast(&from_leader, 1, RLX_INT32, leader, s);
  ok = ok && rc2 == RLX_OK && rc3 == RLX_OK && rc4 == RLX_OK && sum == want && from_leader == 4242;
  for (int i = 0; i < ssize && i < 64; i++)
    ok = ok && leaders[i] == leader;
  printf("shrink_check: rank %d: shrink in %.2f s: rank %d of %d, leader %d (old leader %d%s), "
         "sum %g (want %g)%s%s\n", rank, now() - t0, srank, ssize, leader, old_leader,
         victim == old_leader ? ", killed" : "", sum, want,
         rc2 || rc3 || rc4 ? "; a collective on it failed: " : "",
         rc2 || rc3 || rc4 ? rlx_errmsg() : "");
  printf("shrink_check: rank %d: %s\n", rank, ok ? "PASS" : "FAIL");
  fflush(stdout);
  rlx_comm_free(&s);
  /* rlx_finalize synchronises the survivors (on the shrunk communicator,
   * not the world with its dead rank): the first is late, the others wait */
  if (srank == 0)
    usleep(500000);
  double tf = now();
  rlx_finalize();
  if (srank != 0)
    printf("shrink_check: rank %d: rlx_finalize waited %.2f s\n", rank, now() - tf);
  return ok ? 0 : 1;
}
