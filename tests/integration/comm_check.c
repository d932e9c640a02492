/* comm_check: communicators and concurrency, run under rlxrun.
 *   split by colors and keys (and RLX_UNDEFINED), dup, free;
 *   two threads running collectives on two communicators at once; a second
 *   thread's call on a communicator busy with another's, refused;
 *   a 16 MiB rlx_iallreduce that completes while the caller sleeps (looked at once a second);
 *   --wire: float32 sums under RLX_WIRE, error against float64 reported. */
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <rlxcoll/rlxcoll.h>

static int rank, size, failures;

#define FAIL(...)                                                                                  \
  do {                                                                                             \
    failures++;                                                                                    \
    fprintf(stderr, "comm_check: rank %d: ", rank);                                                \
    fprintf(stderr, __VA_ARGS__);                                                                  \
    fprintf(stderr, "\n");                                                                         \
  } while (0)

/* RLX_TEST_TIME_SCALE (CI's sanitizer phases): how much slower a rank may be. */
static double time_scale(void) {
  const char *e = getenv("RLX_TEST_TIME_SCALE");
  double k = e ? atof(e) : 1.0;
  return k >= 1.0 ? k : 1.0;
}

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void check_split(void) {
  rlx_comm_t *sub = NULL;
  int color = rank % 2, key = -rank; /* reverse order inside each color */
  if (size > 2 && rank == 0)
    color = RLX_UNDEFINED;
  int rc = rlx_comm_split(rlx_comm_world(), color, key, &sub);
  if (rc != RLX_OK) {
    FAIL("split: %s", rlx_errmsg());
    return;
  }
  if (color == RLX_UNDEFINED) {
    if (sub != NULL)
      FAIL("RLX_UNDEFINED got a communicator");
    return;
  }
  /* members of my color, excluding rank 0 when it opted out, by key = -rank */
  int members = 0, higher = 0;
  long want = 0;
  for (int r = 0; r < size; r++) {
    if (r % 2 != color || (size > 2 && r == 0))
      continue;
    members++;
    want += r;
    if (r > rank)
      higher++;
  }
  if (rlx_comm_size(sub) != members || rlx_comm_rank(sub) != higher)
    FAIL("split: rank %d size %d, want rank %d size %d", rlx_comm_rank(sub), rlx_comm_size(sub),
         higher, members);
  long sum = rank;
  if (rlx_allreduce(RLX_IN_PLACE, &sum, 1, RLX_INT64, RLX_SUM, sub) != RLX_OK || sum != want)
    FAIL("split: allreduce on the sub-communicator gave %ld, want %ld (%s)", sum, want,
         rlx_errmsg());
  int leader = rlx_comm_leader(sub), lmax = leader;
  rlx_allreduce(&leader, &lmax, 1, RLX_INT32, RLX_MAX, sub);
  if (lmax != leader)
    FAIL("split: members disagree on the leader");
  rlx_comm_free(&sub);
  if (sub != NULL)
    FAIL("rlx_comm_free did not clear the handle");
}

struct worker {
  rlx_comm_t *comm;
  int id, iters, bad;
};

static void *work(void *arg) {
  struct worker *w = arg;
  float v[1000];
  for (int it = 0; it < w->iters; it++) {
    for (int i = 0; i < 1000; i++)
      v[i] = (float)(rank + it + w->id * 7);
    if (rlx_allreduce(RLX_IN_PLACE, v, it % 2 ? 1000 : 3, RLX_FLOAT32, RLX_SUM, w->comm) !=
        RLX_OK) {
      fprintf(stderr, "thread %d: %s\n", w->id, rlx_errmsg());
      w->bad++;
      return NULL;
    }
    float want = (float)(size * (it + w->id * 7) + size * (size - 1) / 2);
    if (v[0] != want || v[2] != want)
      w->bad++;
  }
  return NULL;
}

static void check_threads(void) {
  struct worker w[2] = {{NULL, 0, 300, 0}, {NULL, 1, 300, 0}};
  pthread_t t[2];
  if (rlx_comm_dup(rlx_comm_world(), &w[0].comm) != RLX_OK ||
      rlx_comm_dup(rlx_comm_world(), &w[1].comm) != RLX_OK) {
    FAIL("dup: %s", rlx_errmsg());
    return;
  }
  double t0 = now();
  for (int i = 0; i < 2; i++)
    pthread_create(&t[i], NULL, work, &w[i]);
  for (int i = 0; i < 2; i++)
    pthread_join(t[i], NULL);
  if (w[0].bad || w[1].bad)
    FAIL("two threads on two communicators: %d and %d wrong results", w[0].bad, w[1].bad);
  else if (rank == 0)
    printf("comm_check: two threads x 300 allreduces on two communicators: %.3f s\n", now() - t0);
  rlx_comm_free(&w[0].comm);
  rlx_comm_free(&w[1].comm);
}

/* Two threads on one communicator at once: while one thread's barrier
 * waits (rank 1 comes 300 ms late), another thread's call on the same
 * communicator is refused with RLX_ERR_STATE at once; the barrier still
 * completes. */
struct overlap_arg {
  rlx_comm_t *c;
  int rc;
  char msg[400];
};
static void *late_call(void *arg) {
  struct overlap_arg *a = arg;
  struct timespec ts = {0, 100 * 1000 * 1000};
  nanosleep(&ts, NULL);
  int v = 1;
  a->rc = rlx_allreduce(RLX_IN_PLACE, &v, 1, RLX_INT32, RLX_SUM, a->c);
  snprintf(a->msg, sizeof(a->msg), "%s", rlx_errmsg()); /* (per thread) */
  return NULL;
}

static void check_two_threads_one_comm(void) {
  rlx_comm_t *c;
  if (size < 2 || rlx_comm_dup(rlx_comm_world(), &c) != RLX_OK)
    return;
  struct overlap_arg a = {c, 0, ""};
  pthread_t t;
  if (rank == 0)
    pthread_create(&t, NULL, late_call, &a);
  if (rank == 1) {
    struct timespec ts = {0, 300 * 1000 * 1000};
    nanosleep(&ts, NULL);
  }
  int rc = rlx_barrier(c);
  if (rank == 0) {
    pthread_join(t, NULL);
    if (a.rc != RLX_ERR_STATE || strstr(a.msg, "another thread's call") == NULL)
      FAIL("a second thread's call during a barrier on the same communicator returned %s (%s), "
           "not RLX_ERR_STATE",
           rlx_strerror(a.rc), a.msg);
    else
      printf("comm_check: a second thread's call on a busy communicator: %s: %s\n",
             rlx_strerror(a.rc), a.msg);
  }
  if (rc != RLX_OK)
    FAIL("the barrier beside the refused call: %s", rlx_errmsg());
  if (rlx_barrier(c) != RLX_OK) /* and the communicator goes on */
    FAIL("the next barrier: %s", rlx_errmsg());
  rlx_comm_free(&c);
}

/* A communicator with a nonblocking call in flight is not freed: the call
 * would write into freed memory. RLX_ERR_STATE, the communicator intact;
 * after rlx_wait it frees. On one rank a collective is done when it
 * returns (rlx__call_alone): a receive from itself stays in flight there. */
static void check_free_in_flight(void) {
  rlx_comm_t *d = NULL;
  float x = 1, y = 0;
  rlx_request_t *rq = NULL;
  const char *what = size > 1 ? "an iallreduce" : "an irecv";
  if (rlx_comm_dup(rlx_comm_world(), &d) != RLX_OK ||
      (size > 1 ? rlx_iallreduce(&x, &y, 1, RLX_FLOAT32, RLX_SUM, d, &rq)
                : rlx_irecv(&y, 1, RLX_FLOAT32, 0, 77, d, &rq)) != RLX_OK) {
    FAIL("dup/%s: %s", what, rlx_errmsg());
    return;
  }
  int rc = rlx_comm_free(&d);
  if (rc != RLX_ERR_STATE || d == NULL || strstr(rlx_errmsg(), "still in flight") == NULL)
    FAIL("rlx_comm_free with %s in flight gave %s (%s)", what, rlx_strerror(rc), rlx_errmsg());
  if (size == 1 && d != NULL && rlx_send(&x, 1, RLX_FLOAT32, 0, 77, d) != RLX_OK)
    FAIL("the send to itself: %s", rlx_errmsg());
  if (rlx_wait(&rq) != RLX_OK || y != (float)size)
    FAIL("%s after the refused free: %s, %g", what, rlx_errmsg(), (double)y);
  if (d != NULL && rlx_comm_free(&d) != RLX_OK)
    FAIL("rlx_comm_free after rlx_wait: %s", rlx_errmsg());
  if (size > 1)
    return;
  /* one rank: the iallreduce was done at once, nothing holds the communicator */
  if (rlx_comm_dup(rlx_comm_world(), &d) != RLX_OK ||
      rlx_iallreduce(&x, &y, 1, RLX_FLOAT32, RLX_SUM, d, &rq) != RLX_OK)
    FAIL("dup/iallreduce on one rank: %s", rlx_errmsg());
  else if (rlx_comm_free(&d) != RLX_OK || rlx_wait(&rq) != RLX_OK || y != 1.0f)
    FAIL("one rank: an iallreduce done at once kept its communicator: %s", rlx_errmsg());
}

static void check_overlap(void) {
  size_t n = 4u << 20; /* 16 MiB of float32 */
  float *in = malloc(n * 4), *out = malloc(n * 4);
  rlx_request_t *req = NULL;
  for (size_t i = 0; i < n; i++)
    in[i] = (float)(i % 100);
  rlx_barrier(rlx_comm_world());
  if (rlx_iallreduce(in, out, n, RLX_FLOAT32, RLX_SUM, rlx_comm_world(), &req) != RLX_OK) {
    FAIL("iallreduce: %s", rlx_errmsg());
    return;
  }
  /* Compute (sleep); the progress thread must move the data. Looked at
   * once a second, up to 10 times (times RLX_TEST_TIME_SCALE: a sanitized
   * rank on a shared 2-core host is many times slower): an rlx_test drives one poll of the
   * loop, and without background progress ten polls do not move 16 MiB
   * through the rounds of an allreduce; on an idle host the first look
   * finds it done. */
  struct timespec one = {1, 0};
  int done = 0, looks = 0, most = (int)(10 * time_scale());
  double t0 = now();
  while (!done && looks < most) {
    nanosleep(&one, NULL);
    looks++;
    t0 = now();
    if (rlx_test(&req, &done) != RLX_OK) {
      FAIL("rlx_test: %s", rlx_errmsg());
      break;
    }
  }
  if (!done) {
    FAIL("16 MiB iallreduce not complete after %d s of sleep: no background progress", most);
    rlx_wait(&req);
  }
  double waited = now() - t0;
  for (size_t i = 0; i < n; i += 4099)
    if (out[i] != (float)(size * (int)(i % 100))) {
      FAIL("iallreduce: element %zu wrong", i);
      break;
    }
  if (rank == 0)
    printf("comm_check: 16 MiB iallreduce done while the caller slept (%d s); the last look took "
           "%.1f us\n", looks, waited * 1e6);
  free(in);
  free(out);
}

static void check_wire(void) {
  size_t n = 1u << 20;
  float *x = malloc(n * 4), *y = malloc(n * 4);
  double max_rel = 0;
  srand(77 + rank);
  for (size_t i = 0; i < n; i++)
    x[i] = ((float)rand() / (float)RAND_MAX - 0.5f) * 8.0f;
  if (rlx_allreduce(x, y, n, RLX_FLOAT32, RLX_SUM, rlx_comm_world()) != RLX_OK) {
    FAIL("wire allreduce: %s", rlx_errmsg());
    return;
  }
  /* exact reference in float64: every rank can regenerate every input */
  double *ref = calloc(n, sizeof(double)), *mag = calloc(n, sizeof(double));
  for (int r = 0; r < size; r++) {
    srand(77 + r);
    for (size_t i = 0; i < n; i++) {
      double v = (double)(((float)rand() / (float)RAND_MAX - 0.5f) * 8.0f);
      ref[i] += v;
      mag[i] += fabs(v);
    }
  }
  for (size_t i = 0; i < n; i++) {
    double rel = fabs((double)y[i] - ref[i]) / (mag[i] > 0 ? mag[i] : 1);
    if (rel > max_rel)
      max_rel = rel;
  }
  double all_max = max_rel;
  rlx_allreduce(&max_rel, &all_max, 1, RLX_FLOAT64, RLX_MAX, rlx_comm_world());
  const char *wire = getenv("RLX_WIRE") ? getenv("RLX_WIRE") : "f32";
  double bound = strcmp(wire, "bf16") == 0 ? 2e-2 : strcmp(wire, "f16") == 0 ? 3e-3 : 1e-6;
  if (rank == 0)
    printf("comm_check: RLX_WIRE=%s, %d ranks, 1M float32 sums: max error %.3g of sum|x| "
           "(bound %.0g)\n", wire, size, all_max, bound);
  if (all_max > bound)
    FAIL("RLX_WIRE=%s error %.3g above %.0g", wire, all_max, bound);
  if (strcmp(wire, "f32") != 0 && all_max == 0 && size > 1)
    FAIL("RLX_WIRE=%s gave exact float32 sums: the wire was not half width", wire);
  free(x);
  free(y);
  free(ref);
  free(mag);
}

int main(int argc, char **argv) {
  int wire_only = argc > 1 && strcmp(argv[1], "--wire") == 0;
  if (rlx_init(&argc, &argv) != RLX_OK) {
    fprintf(stderr, "comm_check: rlx_init: %s\n", rlx_errmsg());
    return 2;
  }
  rank = rlx_comm_rank(rlx_comm_world());
  size = rlx_comm_size(rlx_comm_world());
  if (wire_only) {
    check_wire();
  } else {
    check_split();
    check_threads();
    check_two_threads_one_comm();
    check_free_in_flight();
    check_overlap();
  }
  int bad = failures, total = 0;
  rlx_allreduce(&bad, &total, 1, RLX_INT32, RLX_SUM, rlx_comm_world());
  if (rank == 0)
    printf("comm_check: %d ranks, %d failures in all\n", size, total);
  rlx_finalize();
  return total ? 1 : 0;
}
