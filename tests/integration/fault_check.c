/* fault_check: a collective whose peer never comes fails with
 * RLX_ERR_TIMEOUT naming the rank it waited on; one whose peer is killed
 * fails with RLX_ERR_PEER_LOST naming the lost rank, quickly; one where a
 * rank passes another count fails on every rank with RLX_ERR_MISMATCH
 * naming both calls; later calls see RLX_ERR_REVOKED.
 *   fault_check timeout|kill|killbig|killa2a|killgv|killsv|mismatch|stop
 *   (rank 1 is the faulty one; killbig: it dies 30 ms into a 64 MiB
 *   allreduce; killa2a, killgv, killsv: 30 ms into a run of alltoallv,
 *   gatherv or scatterv calls (a2a_loop); stop: it stops
 *   itself, sockets open, and must be found by missing heartbeats)
 *   fault_check cut   (a partition: every rank waits until the test has
 *   cut one host's link and says so in FAULT_DONE_DIR/cut, then calls; each
 *   side must find the other gone by missing heartbeats, then shrink within
 *   an 8 s limit: one side goes on (an allreduce on its new communicator
 *   proves it), the other fails naming the partition; each rank leaves
 *   FAULT_DONE_DIR/done.RANK when it has said all)
 *   fault_check frame corrupt|lost   (RLX_FAULT_FRAME spoils a frame: every
 *   rank must fail with that error, and none may return wrong data)
 *   fault_check segref [alltoallv|gatherv|scatterv|allgatherv|allgather]
 *   (an alltoallv of 64 KiB blocks in the shared segment, or one of the
 *   others with 512 KiB ones, read by reference; with
 *   RLX_FAULT_CMA=descpid every sender names pid 1 as its memory's: every rank must fail with
 *   RLX_ERR_CORRUPT within 5 s, none return wrong data; with SEGREF_OK
 *   set, as for RLX_FAULT_CMA=deny, every rank must succeed with the
 *   right data; SEGREF_BLK: elements a block)
 *   fault_check revoke   (a rank that completed a call another failed finds
 *   its next call revoked at once)
 *   fault_check commtimeout   (as timeout, with the world's own limit set
 *   to 2 s by rlx_comm_set_timeout: it wins over RLX_TIMEOUT)
 *   fault_check revokes   (on a dup of the world, each rank in turn revokes it
 *   while the others wait in each collective: they fail at once with
 *   RLX_ERR_REVOKED naming it (or, where their part of a bcast or reduce
 *   needs nothing of it, their next call), the revoker's own call too; then
 *   rlx_comm_shrink gives all of them a communicator that computes right)
 *   fault_check quorum   (every rank but 0 stops itself, sockets open: rank
 *   0 finds them silent, and its shrink must stop this side, one rank of
 *   n, naming the partition; with RLX_SHRINK_QUORUM=any it goes on alone)
 *   fault_check fdfull   (2 ranks, before they ever talked: rank 0 uses up
 *   its descriptors; rank 1's message to it fails with RLX_ERR_SYS naming
 *   the likely limit there, not RLX_ERR_PEER_LOST; once rank 0 has
 *   descriptors again, a barrier works: it was not counted lost)
 *   fault_check fdproof   (2 ranks, before they ever talked: rank 0 keeps
 *   one descriptor free, which accepting rank 1's dial takes, so the
 *   shared segment rank 1 sends with its handshake is dropped by the
 *   kernel on the way in; the pair carries its frames on the Unix socket
 *   instead: rank 1's message reaches rank 0 within 5 s (not after 10 s
 *   of silence on rings rank 0 never got, as "peer lost"), and a barrier
 *   works once rank 0 has descriptors again)
 *   fault_check fdseg   (2 ranks, connected: rank 1 uses up its
 *   descriptors, then both dup the world; the segment rank 0 sends for it
 *   reaches rank 1 as its byte alone: rank 1 says so at once (not after
 *   its 30 s wait), the dup's collectives go point to point, and an
 *   allreduce on it is right; then a barrier once rank 1 has descriptors)
 *   fault_check splitlate   (2 ranks, copies by reference on,
 *   RLX_FAULT_CMA=slowpush: rank 0 sends 4 MiB, whose second half it is to
 *   write into rank 1's receive (a split copy) but only 1.5 s after it is
 *   asked; rank 1's receive times out at 0.5 s and returns its buffer,
 *   which it then fills with 0x5a: 2.5 s later every byte must still be
 *   0x5a: the late sender wrote nothing there)
 *   fault_check pushlate   (2 ranks, copies by reference on,
 *   RLX_FAULT_CMA=slowpush: rank 1's 1 MiB block of a gatherv to rank 0
 *   is to be written into rank 0's buffer by rank 1, 1.5 s late; rank 0's
 *   call times out at 0.5 s and returns its buffer, which it then fills
 *   with 0x5a: 2.5 s later every byte must still be 0x5a)
 *   fault_check revokeref   (2 ranks, point to point, copies by reference
 *   on: rank 0 in a 4 MiB allreduce whose half goes to rank 1 by
 *   reference while rank 1 is stopped (1 s), so that nobody reads it;
 *   rank 0 revokes the communicator from another thread, and
 *   rlx_comm_revoke returns within 0.3 s (not when the call it revokes
 *   ends: the call's thread, waiting, must let the revoker have the
 *   loop); its call fails revoked, done once rank 1, resumed,
 *   acknowledged the frame (not by dropping rank 1), rank 1's allreduce
 *   fails revoked, and rlx_comm_shrink gives both a communicator of both
 *   ranks that works)
 *   fault_check finrace   (rlx_finalize while another thread is in a 64 MiB
 *   allreduce on a dup: refused with RLX_ERR_STATE, the call ends well,
 *   then rlx_finalize works; never a crash) */
#include <pthread.h>
#include <signal.h>
#include <dirent.h>
#include <sys/stat.h>
#include <fcntl.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sched.h>
#include <stdatomic.h>
#include <rlxcoll/rlxcoll.h>
#include "stop_watch.h"

#define RACE_COUNT ((size_t)16 << 20) /* finrace's float32 allreduce: 64 MiB */

/* A time bound of the test, stretched by RLX_TEST_TIME_SCALE (CI sets it
 * for its sanitizer builds, which run every rank several times slower):
 * the bounds tell prompt detection from a timeout, not the host's speed. */
static double bound(double s) {
  const char *e = getenv("RLX_TEST_TIME_SCALE");
  double k = e ? atof(e) : 1.0;
  return s * (k >= 1.0 ? k : 1.0);
}

/* A one-call case's end: what the call returned and how long it took,
 * PASS or FAIL, and the exit status after rlx_finalize. */
static int report(int rank, int rc, double took, int ok) {
  printf("fault_check: rank %d: %s after %.2f s: %s\n", rank, rlx_strerror(rc), took,
         rc == RLX_OK ? "" : rlx_errmsg());
  printf("fault_check: rank %d: %s\n", rank, ok ? "PASS" : "FAIL");
  fflush(stdout);
  rlx_finalize();
  return ok ? 0 : 1;
}

/* FAULT_DONE_DIR (set by faults.sh): each survivor leaves a file there
 * once its part is done, so that the faulty rank 1 (asleep or stopped)
 * needs to last only as long as the survivors need it, not a fixed nap. */
static void mark_done(int rank) {
  const char *dir = getenv("FAULT_DONE_DIR");
  char path[512];
  if (!dir)
    return;
  snprintf(path, sizeof path, "%s/done.%d", dir, rank);
  mkdir(path, 0700); /* (no descriptor: wait_done says why) */
}

/* Waits until every rank but `faulty` of `size` marked itself done, or
 * `limit` seconds (or, without FAULT_DONE_DIR, just `limit` seconds).
 * (access(), not a directory listing: a descriptor opened here could take
 * the number of a socket the progress thread just closed, which
 * ThreadSanitizer reports as a race.) */
static void wait_done(int size, int faulty, double limit) {
  const char *dir = getenv("FAULT_DONE_DIR");
  struct timespec nap = {0, 50 * 1000 * 1000};
  char path[512];
  for (double waited = 0; waited < limit; waited += 0.05) {
    int n = 0;
    for (int r = 0; dir && r < size; r++) {
      snprintf(path, sizeof path, "%s/done.%d", dir, r);
      n += r != faulty && access(path, F_OK) == 0;
    }
    if (dir && n >= size - 1)
      return;
    nanosleep(&nap, NULL);
  }
}

static double now(void);

/* The descriptor cases' exchange: a rank waits (up to 60 s) for another's
 * mark_done(k) (FAULT_DONE_DIR's marks). */
static void wait_mark(int k) {
  const char *dir = getenv("FAULT_DONE_DIR");
  char path[512];
  snprintf(path, sizeof path, "%s/done.%d", dir ? dir : ".", k);
  for (int i = 0; i < 1200 && access(path, F_OK) != 0; i++)
    usleep(50000);
}

/* Open /dev/null into fds until no descriptor is left (then spare more
 * of them, closed again): how many are open. */
static int use_up_fds(int *fds, int max, int spare) {
  int n = 0;
  while (n < max && (fds[n] = open("/dev/null", O_RDONLY)) >= 0)
    n++;
  for (; spare > 0 && n > 0; spare--)
    close(fds[--n]);
  return n;
}

static void free_fds(int *fds, int n) {
  while (n > 0)
    close(fds[--n]);
}

/* The descriptor cases' end: a barrier on c (no rank was lost), PASS or
 * FAIL, dup freed, finalized. */
static int barrier_end(rlx_comm_t *c, rlx_comm_t **dup, int rank, int ok) {
  int rc = rlx_barrier(c);
  printf("fault_check: rank %d: then a barrier: %s\n", rank, rlx_strerror(rc));
  ok = ok && rc == RLX_OK;
  if (dup != NULL && *dup != NULL)
    rlx_comm_free(dup);
  printf("fault_check: rank %d: %s\n", rank, ok ? "PASS" : "FAIL");
  fflush(stdout);
  rlx_finalize();
  return ok ? 0 : 1;
}

static int fds[65536];

/* fdfull: rank 0 out of descriptors while rank 1 dials it. */
static int fd_full(rlx_comm_t *w, int rank) {
  int ok = 1;
  if (rank == 0) {
    int n = use_up_fds(fds, 65536, 0);
    mark_done(100); /* full: rank 1 may try */
    wait_mark(101);
    free_fds(fds, n);
  } else {
    wait_mark(100);
    int v = 7;
    double t0 = now();
    int rc = rlx_send(&v, 1, RLX_INT32, 0, 5, w);
    printf("fault_check: rank 1: a message to rank 0 out of descriptors: %s after %.2f s: %s\n",
           rlx_strerror(rc), now() - t0, rlx_errmsg());
    ok = rc == RLX_ERR_SYS && strstr(rlx_errmsg(), "out of descriptors there?") != NULL;
    mark_done(101);
  }
  return barrier_end(w, NULL, rank, ok); /* rank 0 has descriptors again, and was not lost */
}

/* fdproof: rank 0 one descriptor short of full while rank 1 dials it. */
static int fd_proof(rlx_comm_t *w, int rank) {
  int ok = 1, v = 0;
  double t0 = now();
  if (rank == 0) {
    int n = use_up_fds(fds, 65536, 1); /* (the one the accept takes) */
    mark_done(100);
    int rc = rlx_recv(&v, 1, RLX_INT32, 1, 5, w, NULL);
    printf("fault_check: rank 0: a message from rank 1, one descriptor free: %s after %.2f s: "
           "%d %s\n", rlx_strerror(rc), now() - t0, v, rc == RLX_OK ? "" : rlx_errmsg());
    ok = rc == RLX_OK && v == 7 && now() - t0 < bound(5.0);
    free_fds(fds, n);
  } else {
    wait_mark(100);
    v = 7;
    t0 = now();
    int rc = rlx_send(&v, 1, RLX_INT32, 0, 5, w);
    printf("fault_check: rank 1: a message to rank 0: %s after %.2f s\n", rlx_strerror(rc),
           now() - t0);
    ok = rc == RLX_OK;
  }
  return barrier_end(w, NULL, rank, ok);
}

/* fdseg: a communicator's segment sent to a rank out of descriptors. */
static int fd_seg(rlx_comm_t *w, int rank) {
  int n = 0, ok = rlx_barrier(w) == RLX_OK; /* connected, the world's segment made */
  if (rank == 1) {
    n = use_up_fds(fds, 65536, 0);
    mark_done(100);
  } else {
    wait_mark(100);
  }
  double t0 = now();
  rlx_comm_t *d = NULL;
  int rc = rlx_comm_dup(w, &d);
  double in[4] = {1, 2, 3, rank}, out[4] = {0};
  if (rc == RLX_OK)
    rc = rlx_allreduce(in, out, 4, RLX_FLOAT64, RLX_SUM, d);
  double took = now() - t0;
  printf("fault_check: rank %d: dup and allreduce, rank 1 out of descriptors: %s after %.2f s: "
         "%g %g %g %g\n", rank, rlx_strerror(rc), took, out[0], out[1], out[2], out[3]);
  ok = ok && rc == RLX_OK && out[0] == 2 && out[2] == 6 && out[3] == 1 && took < bound(5.0);
  free_fds(fds, n);
  return barrier_end(d != NULL ? d : w, &d, rank, ok);
}

/* The buffer a call gave back, filled with 0x5a: the bytes another
 * process wrote into it 2.5 s later. */
static size_t written_after(unsigned char *buf, size_t len) {
  memset(buf, 0x5a, len);
  usleep(2500000);
  size_t bad = 0;
  for (size_t i = 0; i < len; i++)
    bad += buf[i] != 0x5a;
  return bad;
}

/* A late writer's case ends: the rank that gave its call up (giver,
 * which took took s and returned rc) finds nothing written into its
 * buffer afterwards; every rank says PASS or FAIL. */
static int late_end(int rank, int giver, int rc, double took, unsigned char *buf, size_t len) {
  int ok = buf != NULL;
  printf("fault_check: rank %d: its call: %s after %.2f s\n", rank, rlx_strerror(rc), took);
  if (rank == giver) {
    ok = ok && rc != RLX_OK;
    size_t bad = ok ? written_after(buf, len) : 0;
    printf("fault_check: rank %d: %zu bytes written into the buffer after its call returned\n",
           rank, bad);
    ok = ok && bad == 0;
  }
  free(buf);
  printf("fault_check: rank %d: %s\n", rank, ok ? "PASS" : "FAIL");
  fflush(stdout);
  rlx_finalize();
  return ok ? 0 : 1;
}

/* splitlate: a receive given up while its sender is yet to write into it. */
static int split_late(rlx_comm_t *w, int rank) {
  enum { N = 4 << 20 };
  unsigned char *buf = malloc(N);
  int rc = RLX_ERR_NOMEM;
  double t0 = now();
  if (buf != NULL && rank == 0) {
    memset(buf, 1, N);
    rc = rlx_send(buf, N, RLX_UINT8, 1, 3, w);
  } else if (buf != NULL) {
    rlx_comm_set_timeout(w, 0.5);
    rc = rlx_recv(buf, N, RLX_UINT8, 0, 3, w, NULL);
  }
  return late_end(rank, 1, rc, now() - t0, buf, N);
}

/* pushlate: a gatherv root that left before a sender wrote into it. */
static int push_late(rlx_comm_t *w, int rank) {
  enum { N = 1 << 20 };
  unsigned char *buf = malloc(2 * (size_t)N);
  size_t counts[2] = {N, N}, displs[2] = {0, N};
  int rc = RLX_ERR_NOMEM;
  double t0 = now();
  if (buf != NULL) {
    memset(buf, rank + 1, 2 * (size_t)N);
    if (rank == 0)
      rlx_comm_set_timeout(w, 0.5);
    rc = rlx_gatherv(buf, N, buf, counts, displs, RLX_UINT8, 0, w);
  }
  return late_end(rank, 0, rc, now() - t0, buf, 2 * (size_t)N);
}

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* After rlx_finalize: descriptors or mappings of a shared segment still
 * held by this process (a killed peer's segments included). */
static int shm_left(void) {
  int n = 0;
  char path[300], target[256];
  DIR *d = opendir("/proc/self/fd");
  for (struct dirent *e; d && (e = readdir(d));) {
    snprintf(path, sizeof path, "/proc/self/fd/%s", e->d_name);
    ssize_t k = readlink(path, target, sizeof target - 1);
    if (k > 0) {
      target[k] = '\0';
      n += strstr(target, "memfd:rlxcoll-") != NULL; /* a pair's rings, a group's segment */
    }
  }
  if (d)
    closedir(d);
  FILE *f = fopen("/proc/self/maps", "r");
  char line[512];
  while (f && fgets(line, sizeof line, f))
    n += strstr(line, "memfd:rlxcoll-") != NULL;
  if (f)
    fclose(f);
  return n;
}

struct big_call {
  float *v;
  size_t n;
  rlx_comm_t *w;
};

struct racer {
  rlx_comm_t *c;
  float *v;
  atomic_int entered;
  int rc;
};

static void *race(void *arg) {
  struct racer *r = arg;
  atomic_store(&r->entered, 1);
  r->rc = rlx_allreduce(RLX_IN_PLACE, r->v, RACE_COUNT, RLX_FLOAT32, RLX_SUM, r->c);
  return NULL;
}

/* One collective of kind k (0-6) on c. */
static int call_kind(int k, rlx_comm_t *c, float *a, float *b, size_t n) {
  switch (k) {
  case 0: return rlx_allreduce(RLX_IN_PLACE, a, 7, RLX_FLOAT32, RLX_SUM, c);
  case 1: return rlx_allreduce(RLX_IN_PLACE, a, n, RLX_FLOAT32, RLX_SUM, c);
  case 2: return rlx_bcast(a, n, RLX_FLOAT32, 0, c);
  case 3: return rlx_barrier(c);
  case 4: return rlx_allgather(a, b, 1000, RLX_FLOAT32, c);
  case 5: return rlx_reduce_scatter(a, b, 1000, RLX_FLOAT32, RLX_SUM, c);
  default: return rlx_reduce(a, b, n, RLX_FLOAT32, RLX_SUM, 0, c);
  }
}

/* revokes: see the top. */
static int revokes(rlx_comm_t *w, int rank) {
  int size = rlx_comm_size(w), bad = 0;
  size_t n = (size_t)1 << 20;
  float *a = calloc(n, sizeof(float)), *b = calloc(n * (size_t)size, sizeof(float));
  static const char *names[] = {"allreduce(7)", "allreduce(1M)", "bcast", "barrier",
                                "allgather", "reduce_scatter", "reduce"};
  for (int r = 0; r < size && a && b; r++) {
    for (int k = 0; k < 7; k++) {
      rlx_comm_t *c = NULL, *s = NULL;
      if (rlx_comm_dup(w, &c) != RLX_OK || (k % 2 == 0 && rlx_barrier(c) != RLX_OK)) {
        printf("fault_check: rank %d: set-up: %s\n", rank, rlx_errmsg());
        return 1; /* (odd kinds: the call is the communicator's first) */
      }
      double t0 = now();
      int rc;
      char want[64], msg[700];
      snprintf(want, sizeof want, "revoked by rank %d (rlx_comm_revoke)", r);
      if (rank == r) {
        /* (the others in their call by then, mostly: a slower host's
         * scale stretches the nap; one that comes later fails the same) */
        struct timespec ts = {0, (long)(bound(0.1) * 1e9)};
        nanosleep(&ts, NULL);
        rc = rlx_comm_revoke(c);
        if (rc == RLX_OK)
          rc = call_kind(k, c, a, b, n); /* its own later call */
      } else {
        rc = call_kind(k, c, a, b, n);
      }
      /* (a rooted call may end well on a rank whose part needs nothing of
       * the revoker: a leaf of the bcast's tree, say; its next call fails) */
      if (rc == RLX_OK && rank != r && (k == 2 || k == 6))
        rc = rlx_barrier(c);
      double took = now() - t0;
      snprintf(msg, sizeof msg, "%s", rlx_errmsg());
      int ok = rc == RLX_ERR_REVOKED && strstr(msg, want) != NULL && took < bound(1.5);
      int src = rlx_comm_shrink(c, &s);
      float x = 1;
      int arc = src == RLX_OK ? rlx_allreduce(RLX_IN_PLACE, &x, 1, RLX_FLOAT32, RLX_SUM, s) : src;
      ok = ok && src == RLX_OK && rlx_comm_size(s) == size && arc == RLX_OK && x == size;
      if (!ok || (r == 1 && k == 3))
        printf("fault_check: rank %d: rank %d revoked during %s: %s after %.2f s: %s; shrink "
               "%s, then allreduce %s (%g)%s\n", rank, r, names[k], rlx_strerror(rc), took, msg,
               rlx_strerror(src), rlx_strerror(arc), x, ok ? "" : "  <- WRONG");
      bad += !ok;
      rlx_comm_free(&s);
      rlx_comm_free(&c);
    }
  }
  free(a);
  free(b);
  printf("fault_check: rank %d: %s\n", rank, bad == 0 && a && b ? "PASS" : "FAIL");
  fflush(stdout);
  rlx_finalize();
  return bad == 0 ? 0 : 1;
}

/* revokeref: see the top. */
struct ref_call {
  rlx_comm_t *c;
  float *a;
  size_t n;
  int rc;
};

static void *ref_allreduce(void *arg) {
  struct ref_call *r = arg;
  r->rc = rlx_allreduce(RLX_IN_PLACE, r->a, r->n, RLX_FLOAT32, RLX_SUM, r->c);
  return NULL;
}

static int revoke_by_ref(rlx_comm_t *w, int rank) {
  struct ref_call r = {NULL, calloc((size_t)1 << 20, sizeof(float)), (size_t)1 << 20, -1};
  rlx_comm_t *s = NULL;
  float x = 1;
  double revoke_took = 0;
  pthread_t th;
  int32_t pids[2] = {0, 0}, me32 = (int32_t)getpid();
  if (r.a == NULL || rlx_comm_dup(w, &r.c) != RLX_OK ||
      rlx_allgather(&me32, pids, 1, RLX_INT32, r.c) != RLX_OK || rlx_barrier(r.c) != RLX_OK) {
    printf("fault_check: rank %d: set-up: %s\n", rank, rlx_errmsg());
    return 1;
  }
  double t0 = now();
  if (rank == 1) {
    /* stopped for 1 s: the frame by reference rank 0 sends meanwhile
     * stays unread, unacknowledged, while rank 0 revokes. A child stops
     * this process, which waits on a pipe meanwhile, and rank 0 sends
     * only once /proc says it is stopped: stopping itself after the
     * fork (tens of ms under AddressSanitizer), it let its progress
     * thread take a frame that came first, 1 ms later (the hold for a
     * receive), and nothing was left unacknowledged to wait for (CI). */
    if (stopped_by_child((struct timespec){1, 0}) != 0) {
      printf("fault_check: rank 1: no pipe or child to stop it\n");
      return 1;
    }
    ref_allreduce(&r);
  } else {
    struct timespec ts = {0, 100 * 1000 * 1000};
    wait_stopped(pids[1], bound(5.0));
    t0 = now();
    pthread_create(&th, NULL, ref_allreduce, &r);
    nanosleep(&ts, NULL);
    double t_rev = now();
    if (rlx_comm_revoke(r.c) != RLX_OK)
      printf("fault_check: rank 0: rlx_comm_revoke: %s\n", rlx_errmsg());
    revoke_took = now() - t_rev;
    printf("fault_check: rank 0: rlx_comm_revoke returned after %.3f s\n", revoke_took);
    pthread_join(th, NULL);
  }
  double took = now() - t0;
  int src = rlx_comm_shrink(r.c, &s);
  int arc = src == RLX_OK ? rlx_allreduce(RLX_IN_PLACE, &x, 1, RLX_FLOAT32, RLX_SUM, s) : src;
  int ok = r.rc == RLX_ERR_REVOKED && took < bound(3.0) && revoke_took < bound(0.3) &&
           src == RLX_OK && rlx_comm_size(s) == rlx_comm_size(w) && arc == RLX_OK &&
           x == rlx_comm_size(w);
  printf("fault_check: rank %d: %s after %.2f s; shrink %s (%d ranks), then allreduce %s "
         "(%g)\nfault_check: rank %d: %s\n", rank, rlx_strerror(r.rc), took, rlx_strerror(src),
         src == RLX_OK ? rlx_comm_size(s) : 0, rlx_strerror(arc), x, rank, ok ? "PASS" : "FAIL");
  fflush(stdout);
  rlx_comm_free(&s);
  rlx_comm_free(&r.c);
  free(r.a);
  rlx_finalize();
  return ok ? 0 : 1;
}

/* finrace: see the top. The call is certainly under way when rlx_finalize
 * comes (2-10 ms after it began; it takes 50 ms or more), so finalize must
 * refuse, and the call must end well on every rank; then finalize works. */
static int finalize_race(rlx_comm_t *w, int rank) {
  struct racer r = {NULL, calloc(RACE_COUNT, sizeof(float)), 0, -1};
  pthread_t th;
  if (r.v == NULL || rlx_comm_dup(w, &r.c) != RLX_OK ||
      pthread_create(&th, NULL, race, &r) != 0) {
    printf("fault_check: rank %d: set-up: %s\n", rank, rlx_errmsg());
    return 1;
  }
  while (!atomic_load(&r.entered))
    sched_yield();
  unsigned seed = (unsigned)getpid();
  struct timespec ts = {0, (2000 + rand_r(&seed) % 8000) * 1000L};
  nanosleep(&ts, NULL);
  int first = rlx_finalize();
  char why[300];
  snprintf(why, sizeof why, "%s", first ? rlx_errmsg() : "");
  pthread_join(th, NULL);
  rlx_comm_free(&r.c);
  int rc = first == RLX_OK ? RLX_OK : rlx_finalize();
  int ok = first == RLX_ERR_STATE && strstr(why, "still in progress") != NULL &&
           r.rc == RLX_OK && rc == RLX_OK;
  printf("fault_check: rank %d: rlx_finalize during another thread's call: %s%s%s; that call: "
         "%s; then rlx_finalize: %s\nfault_check: rank %d: %s\n", rank, rlx_strerror(first),
         first ? ": " : "", why, rlx_strerror(r.rc), rlx_strerror(rc), rank, ok ? "PASS" : "FAIL");
  fflush(stdout);
  free(r.v);
  return ok ? 0 : 1;
}

static void *call_big(void *arg) {
  struct big_call *b = arg;
  rlx_allreduce(RLX_IN_PLACE, b->v, b->n, RLX_FLOAT32, RLX_SUM, b->w);
  return NULL;
}

/* killa2a: rlx_alltoallv over and over until one fails (its code), blocks
 * of 7 floats (streamed through the segment) and of 300007 and 600007
 * (read by reference) by pair; RLX_OK after 100000 calls. killgv,
 * killsv: the same with rlx_gatherv to rank 0 (the blocks rank r sends it)
 * and rlx_scatterv from rank 0 (those it sends rank r). */
static const char *loop_kind = "killa2a";
static int a2a_loop(rlx_comm_t *w) {
  int n = rlx_comm_size(w), me = rlx_comm_rank(w), rc = RLX_OK;
  size_t c[64], d[64], tot = 0;
  for (int j = 0; j < n && j < 64; j++) {
    c[j] = (size_t)((me + j) % 3) * 300000 + 7; /* (symmetric: what j sends me) */
    d[j] = tot;
    tot += c[j];
  }
  float *in = calloc(tot, sizeof(float)), *out = calloc(tot, sizeof(float));
  for (int i = 0; i < 100000 && rc == RLX_OK && in && out; i++) {
    if (strcmp(loop_kind, "killgv") == 0)
      rc = rlx_gatherv(in, c[0], out, c, d, RLX_FLOAT32, 0, w);
    else if (strcmp(loop_kind, "killsv") == 0)
      rc = rlx_scatterv(in, c, d, out, c[0], RLX_FLOAT32, 0, w);
    else
      rc = rlx_alltoallv(in, c, d, out, c, d, RLX_FLOAT32, w);
  }
  free(in);
  free(out);
  return rc;
}

static void *call_a2a(void *arg) {
  a2a_loop(arg);
  return NULL;
}

int main(int argc, char **argv) {
  int big_mode = argc > 1 && strcmp(argv[1], "killbig") == 0;
  int a2a_mode = argc > 1 && (strcmp(argv[1], "killa2a") == 0 || strcmp(argv[1], "killgv") == 0 ||
                              strcmp(argv[1], "killsv") == 0);
  if (a2a_mode)
    loop_kind = argv[1];
  int kill_mode = big_mode || a2a_mode || (argc > 1 && strcmp(argv[1], "kill") == 0);
  size_t big_count = (size_t)16 << 20; /* 64 MiB of float32 */
  float *big = big_mode ? calloc(big_count, sizeof(float)) : NULL;
  int mismatch_mode = argc > 1 && strcmp(argv[1], "mismatch") == 0;
  int stop_mode = argc > 1 && strcmp(argv[1], "stop") == 0;
  int cut_mode = argc > 1 && strcmp(argv[1], "cut") == 0;
  signal(SIGTERM, SIG_IGN); /* rlxrun stops the job when rank 1 dies: report first */
  if (rlx_init(&argc, &argv) != RLX_OK) {
    fprintf(stderr, "fault_check: rlx_init: %s\n", rlx_errmsg());
    return 2;
  }
  rlx_comm_t *w = rlx_comm_world();
  int rank = rlx_comm_rank(w);
  if (argc > 1 && strcmp(argv[1], "fdfull") == 0) /* (before anyone connects) */
    return fd_full(w, rank);
  if (argc > 1 && strcmp(argv[1], "fdproof") == 0)
    return fd_proof(w, rank);
  if (argc > 1 && strcmp(argv[1], "pushlate") == 0)
    return push_late(w, rank);
  if (argc > 1 && strcmp(argv[1], "splitlate") == 0)
    return split_late(w, rank);
  if (argc > 1 && strcmp(argv[1], "fdseg") == 0)
    return fd_seg(w, rank);
  /* Everyone connected and past a first call before the fault. */
  if (rlx_barrier(w) != RLX_OK) {
    fprintf(stderr, "fault_check: barrier: %s\n", rlx_errmsg());
    return 2;
  }
  if (argc > 1 && strcmp(argv[1], "finrace") == 0)
    return finalize_race(w, rank);
  if (argc > 1 && strcmp(argv[1], "revokes") == 0)
    return revokes(w, rank);
  if (argc > 1 && strcmp(argv[1], "revokeref") == 0)
    return revoke_by_ref(w, rank);
  if (argc > 1 && strcmp(argv[1], "commtimeout") == 0) {
    double got = 0;
    if (rlx_comm_set_timeout(w, 0.0 / 0.0) != RLX_ERR_ARG || rlx_comm_set_timeout(w, 2.0) ||
        rlx_comm_get_timeout(w, &got) || got != 2.0 || rlx_comm_get_timeout(w, NULL) != RLX_ERR_ARG) {
      printf("fault_check: rank %d: rlx_comm_set_timeout/get_timeout: %g, %s\nfault_check: rank "
             "%d: FAIL\n", rank, got, rlx_errmsg(), rank);
      return 1;
    }
  }
  if (argc > 1 && strcmp(argv[1], "revoke") == 0) {
    /* The last rank passes another count to a bcast from rank 0: it fails
     * with a mismatch, while rank 1 may have its data already and go on
     * to the barrier. That barrier must fail (revoked) at once, not wait
     * for a rank that will never come. */
    int size = rlx_comm_size(w), ints[1000] = {0};
    double t0 = now();
    int rc1 = rlx_bcast(ints, rank == size - 1 ? 999 : 1000, RLX_INT32, 0, w);
    char m1[700];
    snprintf(m1, sizeof m1, "%s", rlx_errmsg());
    int rc2 = rlx_barrier(w);
    double took = now() - t0;
    int ok = (rc1 != RLX_OK || rc2 == RLX_ERR_REVOKED) && took < bound(3.0);
    printf("fault_check: rank %d: bcast %s%s%s%s, barrier %s after %.2f s: %s\n", rank,
           rlx_strerror(rc1), rc1 ? " (" : "", rc1 ? m1 : "", rc1 ? ")" : "",
           rlx_strerror(rc2), took, rlx_errmsg());
    printf("fault_check: rank %d: %s%s\n", rank, ok ? "PASS" : "FAIL",
           rc1 == RLX_OK ? " (completed the failed call, then revoked)" : "");
    fflush(stdout);
    rlx_finalize();
    return ok ? 0 : 1;
  }
  if (argc > 1 && strcmp(argv[1], "segref") == 0) {
    int size = rlx_comm_size(w);
    const char *call = argc > 2 ? argv[2] : "alltoallv";
    /* (64 KiB of doubles a block; 512 KiB for the others, whose blocks go
     * by reference only past what one step streams) */
    const char *eb = getenv("SEGREF_BLK"); /* (elements a block, to take another path) */
    size_t blk = eb != NULL && *eb                  ? (size_t)atol(eb)
                 : strcmp(call, "alltoallv") == 0 ? 8192
                                                  : 65536,
           *cnt = malloc(sizeof(size_t) * (size_t)size),
           *dsp = malloc(sizeof(size_t) * (size_t)size);
    double *in = malloc(sizeof(double) * blk * (size_t)size),
           *out = malloc(sizeof(double) * blk * (size_t)size), t0 = now();
    for (int r = 0; r < size; r++) {
      cnt[r] = blk;
      dsp[r] = blk * (size_t)r;
    }
    for (size_t i = 0; i < blk * (size_t)size; i++)
      in[i] = (double)(rank * 1000003 + (int)i);
    int rc;
    if (strcmp(call, "gatherv") == 0) /* (rank r's block k at k + r * blk: as alltoallv's from r) */
      rc = rlx_gatherv(in + (size_t)rank * blk, blk, out, cnt, dsp, RLX_FLOAT64, 0, w);
    else if (strcmp(call, "scatterv") == 0)
      rc = rlx_scatterv(in, cnt, dsp, out + (size_t)rank * blk, blk, RLX_FLOAT64, 0, w);
    else if (strcmp(call, "allgatherv") == 0) /* (as gatherv's, on every rank) */
      rc = rlx_allgatherv(in + (size_t)rank * blk, blk, out, cnt, dsp, RLX_FLOAT64, w);
    else if (strcmp(call, "allgather") == 0)
      rc = rlx_allgather(in + (size_t)rank * blk, out, blk, RLX_FLOAT64, w);
    else
      rc = rlx_alltoallv(in, cnt, dsp, out, cnt, dsp, RLX_FLOAT64, w);
    double took = now() - t0;
    /* (SEGREF_OK: the copies are refused instead, and the call must
     * succeed, its blocks streamed or fed) */
    int want_ok = getenv("SEGREF_OK") != NULL, wrong = 0;
    for (int r = 0; rc == RLX_OK && r < size && !wrong; r++) {
      /* what rank r's block here holds: its sender's values for this rank */
      int from = strcmp(call, "scatterv") == 0 ? 0 : r;
      int gathered = strncmp(call, "all", 3) == 0 && strcmp(call, "alltoallv") != 0;
      size_t at = strcmp(call, "gatherv") == 0 || gathered ? (size_t)r * blk : (size_t)rank * blk;
      if ((strcmp(call, "gatherv") == 0 && rank != 0) || (strcmp(call, "scatterv") == 0 && r != rank))
        continue;
      for (size_t i = 0; i < blk && !wrong; i++)
        if (out[(size_t)r * blk + i] != (double)(from * 1000003 + (int)(at + i))) {
          printf("fault_check: rank %d: WRONG DATA from rank %d at %zu\n", rank, from, i);
          wrong = 1;
        }
    }
    int ok = (want_ok ? rc == RLX_OK : rc == RLX_ERR_CORRUPT) && !wrong && took < bound(5.0);
    free(in);
    free(out);
    free(cnt);
    free(dsp);
    return report(rank, rc, took, ok);
  }
  if (argc > 2 && strcmp(argv[1], "frame") == 0) {
    int want = strcmp(argv[2], "corrupt") == 0 ? RLX_ERR_CORRUPT : RLX_ERR_PEER_LOST;
    size_t n = 1 << 20;
    double *v = malloc(sizeof(double) * n), t0 = now();
    int size = rlx_comm_size(w);
    for (size_t i = 0; i < n; i++)
      v[i] = (double)(i % 1000) + rank;
    if (getenv("FAULT_LATE") && *getenv("FAULT_LATE") && rank == 0)
      usleep(300000); /* the spoilt frame is here before the receive that wants it */
    int rc = rlx_allreduce(RLX_IN_PLACE, v, n, RLX_FLOAT64, RLX_SUM, w);
    double took = now() - t0;
    int ok = rc == want && took < bound(5.0);
    if (rc == RLX_OK) { /* then it must at least be right */
      for (size_t i = 0; i < n; i++)
        if (v[i] != (double)(i % 1000) * size + (double)size * (size - 1) / 2) {
          printf("fault_check: rank %d: WRONG DATA at %zu\n", rank, i);
          break;
        }
    }
    free(v);
    return report(rank, rc, took, ok);
  }
  if (argc > 1 && strcmp(argv[1], "quorum") == 0) {
    if (rank > 0) { /* vanished: no exit, no closed socket; ended once rank 0 is done */
      pid_t parent = getpid();
      if (fork() == 0) {
        wait_done(2, 1, bound(60.0)); /* (rank 0's mark) */
        kill(parent, SIGKILL);
        _exit(0);
      }
      raise(SIGSTOP);
      return 0;
    }
    double v = 1;
    int rc = rlx_allreduce(RLX_IN_PLACE, &v, 1, RLX_FLOAT64, RLX_SUM, w);
    const char *q = getenv("RLX_SHRINK_QUORUM");
    int any = q != NULL && strcmp(q, "any") == 0;
    rlx_comm_t *s = NULL;
    rlx_comm_set_timeout(w, 8.0);
    double t0 = now();
    int src = rlx_comm_shrink(w, &s);
    printf("fault_check: rank 0: shrink %s after %.2f s: %s\n", rlx_strerror(src), now() - t0,
           src == RLX_OK ? "goes on" : rlx_errmsg());
    int ok = rc == RLX_ERR_PEER_LOST &&
             (any ? src == RLX_OK && rlx_comm_size(s) == 1
                  : src == RLX_ERR_PEER_LOST && strstr(rlx_errmsg(), "fewer than half") != NULL);
    printf("fault_check: rank 0: %s\n", ok ? "PASS" : "FAIL");
    fflush(stdout);
    mark_done(0);
    return ok ? 0 : 1;
  }
  if (cut_mode) {
    printf("fault_check: rank %d: ready\n", rank);
    fflush(stdout);
    /* the link is cut before anyone calls, so that no side completes the
     * call with the other first */
    const char *dir = getenv("FAULT_DONE_DIR");
    char path[512];
    snprintf(path, sizeof path, "%s/cut", dir ? dir : ".");
    for (int i = 0; i < 1200 && access(path, F_OK) != 0; i++)
      usleep(50000);
    double v = 1, t0 = now();
    int rc = rlx_allreduce(RLX_IN_PLACE, &v, 1, RLX_FLOAT64, RLX_SUM, w);
    double took = now() - t0;
    int ok = rc == RLX_ERR_PEER_LOST && strstr(rlx_errmsg(), "not even a heartbeat") != NULL;
    printf("fault_check: rank %d: %s after %.2f s: %s\n", rank, rlx_strerror(rc), took,
           rlx_errmsg());
    fflush(stdout); /* (seen even when the shrink hangs and the job is stopped) */
    /* Then a shrink, bounded by the world's own limit (8 s): it dials the
     * members it never talked to, and the cut ones never answer. */
    rlx_comm_t *s = NULL;
    rlx_comm_set_timeout(w, 8.0);
    t0 = now();
    int src = rlx_comm_shrink(w, &s);
    took = now() - t0;
    if (src == RLX_OK) {
      double n = 1;
      int arc = rlx_allreduce(RLX_IN_PLACE, &n, 1, RLX_FLOAT64, RLX_SUM, s);
      printf("fault_check: rank %d: shrink %s after %.2f s: this side goes on, %d ranks "
             "(allreduce: %s, %g)\n", rank, rlx_strerror(src), took, rlx_comm_size(s),
             rlx_strerror(arc), n);
      ok = ok && arc == RLX_OK && n == rlx_comm_size(s);
    } else {
      printf("fault_check: rank %d: shrink %s after %.2f s: %s\n", rank, rlx_strerror(src), took,
             rlx_errmsg());
    }
    printf("fault_check: rank %d: %s\n", rank, ok ? "PASS" : "FAIL");
    fflush(stdout);
    mark_done(rank);
    return ok ? 0 : 1; /* no rlx_finalize: its barrier would wait for the lost */
  }
  if (argc > 1 && (strcmp(argv[1], "roots") == 0 || strcmp(argv[1], "bcastreduce") == 0)) {
    /* Calls whose patterns differ, so that no receive lines up with the
     * odd rank's frames: rank size-1 names another root (roots), or rank
     * 1 calls rlx_reduce where the others call rlx_bcast. Every rank fails
     * the call as a mismatch, or completes it and finds its next call
     * revoked; none waits for a deadline. */
    int size = rlx_comm_size(w), ints[1000] = {0};
    double t0 = now();
    int rc1;
    if (strcmp(argv[1], "roots") == 0) {
      rc1 = rlx_bcast(ints, 1000, RLX_INT32, rank == size - 1 ? 1 : 0, w);
    } else if (rank == 1) {
      int out[1000];
      rc1 = rlx_reduce(ints, out, 1000, RLX_INT32, RLX_SUM, 0, w);
    } else {
      rc1 = rlx_bcast(ints, 1000, RLX_INT32, 0, w);
    }
    char m1[700];
    snprintf(m1, sizeof m1, "%s", rlx_errmsg());
    int rc2 = rc1 == RLX_OK ? rlx_barrier(w) : rc1;
    /* A rank whose part of the failed call was right (a bcast's other
     * receiver) may also complete the next call, when the ranks that
     * failed it had sent their part of that one before they learned of
     * the failure (seen once in ~100 runs on a loaded host); the call
     * after it is revoked then. */
    int rc3 = rc1 == RLX_OK && rc2 == RLX_OK ? rlx_barrier(w) : rc2;
    double took = now() - t0;
    /* A rank still waiting in the call for data from a rank that completed
     * it (its part was not what the others expected) and then left loses
     * that rank: the ABORT that would say why goes only to ranks in later
     * calls so far (issue 14 keeps that open). */
    int ok = (rc1 == RLX_ERR_MISMATCH && strstr(m1, " called ") != NULL) ||
             (rc1 == RLX_ERR_PEER_LOST && strstr(m1, "lost rank") != NULL) ||
             (rc1 == RLX_OK && (rc2 == RLX_ERR_REVOKED || rc2 == RLX_ERR_MISMATCH)) ||
             (rc1 == RLX_OK && rc2 == RLX_OK && rank > 1 && strcmp(argv[1], "bcastreduce") == 0 &&
              (rc3 == RLX_ERR_REVOKED || rc3 == RLX_ERR_PEER_LOST));
    ok = ok && took < bound(3.0);
    printf("fault_check: rank %d: %s after %.2f s: %s%s%s\n", rank, rlx_strerror(rc1), took,
           rc1 ? m1 : "then ", rc1 ? "" : rlx_strerror(rc2), rc1 ? "" : ": ");
    if (rc1 == RLX_OK)
      printf("fault_check: rank %d: %s\n", rank, rlx_errmsg());
    printf("fault_check: rank %d: %s\n", rank, ok ? "PASS" : "FAIL");
    fflush(stdout);
    rlx_finalize();
    return ok ? 0 : 1;
  }
  if (argc > 1 && strcmp(argv[1], "mixed") == 0) {
    /* Rank 1 calls the nonblocking allreduce (point to point), the others
     * the blocking one (in the shared segment): every rank fails with a
     * mismatch that says so, within 3 s. */
    double v = 1, t0 = now();
    rlx_request_t *rq = NULL;
    int rc = rank == 1 ? rlx_iallreduce(RLX_IN_PLACE, &v, 1, RLX_FLOAT64, RLX_SUM, w, &rq)
                       : rlx_allreduce(RLX_IN_PLACE, &v, 1, RLX_FLOAT64, RLX_SUM, w);
    if (rank == 1 && rc == RLX_OK)
      rc = rlx_wait(&rq);
    double took = now() - t0;
    const char *m = rlx_errmsg();
    int ok = rc == RLX_ERR_MISMATCH && took < bound(3.0) &&
             strstr(m, "a nonblocking collective does not match a blocking one") != NULL;
    printf("fault_check: rank %d: %s after %.2f s: %s\n", rank, rlx_strerror(rc), took, m);
    printf("fault_check: rank %d: %s\n", rank, ok ? "PASS" : "FAIL");
    fflush(stdout);
    rlx_finalize();
    return ok ? 0 : 1;
  }
  if (mismatch_mode) {
    double v[2] = {1, 1}, t0 = now();
    int rc = rlx_allreduce(RLX_IN_PLACE, v, rank == 1 ? 2 : 1, RLX_FLOAT64, RLX_SUM, w);
    double took = now() - t0;
    const char *m = rlx_errmsg();
    int ok = rc == RLX_ERR_MISMATCH && took < bound(2.0) &&
             strstr(m, "rank 1 called rlx_allreduce(count=2, float64, sum)") != NULL &&
             strstr(m, "called rlx_allreduce(count=1, float64, sum)") != NULL;
    printf("fault_check: rank %d: %s after %.2f s: %s\n", rank, rlx_strerror(rc), took, m);
    if (rlx_barrier(w) != RLX_ERR_REVOKED)
      ok = 0;
    printf("fault_check: rank %d: %s\n", rank, ok ? "PASS" : "FAIL");
    fflush(stdout);
    rlx_finalize();
    return ok ? 0 : 1;
  }
  if (rank == 1) {
    if (big_mode) { /* die with the call under way: the same blocking call as the others */
      pthread_t th;
      struct timespec ts = {0, 30 * 1000 * 1000};
      struct big_call bc = {big, big_count, w};
      pthread_create(&th, NULL, call_big, &bc);
      nanosleep(&ts, NULL);
    }
    if (a2a_mode) { /* die 30 ms into a run of alltoallv calls */
      pthread_t th;
      struct timespec ts = {0, 30 * 1000 * 1000};
      pthread_create(&th, NULL, call_a2a, w);
      nanosleep(&ts, NULL);
    }
    if (kill_mode)
      raise(SIGKILL);
    if (stop_mode) {
      /* A child of its own ends it once the survivors are done: rlxrun
       * would otherwise wait for its --timeout. */
      pid_t parent = getpid();
      if (getenv("FAULT_DONE_DIR") && fork() == 0) {
        wait_done(rlx_comm_size(w), 1, bound(60.0));
        kill(parent, SIGKILL);
        _exit(0);
      }
      raise(SIGSTOP); /* vanished: no exit, no closed socket */
      return 0;
    }
    wait_done(rlx_comm_size(w), 1, 6.0); /* never calls the allreduce */
    rlx_finalize();
    return 0;
  }
  double v = 1, t0 = now();
  int rc = big_mode ? rlx_allreduce(RLX_IN_PLACE, big, big_count, RLX_FLOAT32, RLX_SUM, w)
           : a2a_mode ? a2a_loop(w)
                      : rlx_allreduce(RLX_IN_PLACE, &v, 1, RLX_FLOAT64, RLX_SUM, w);
  double took = now() - t0;
  int want = kill_mode || stop_mode ? RLX_ERR_PEER_LOST : RLX_ERR_TIMEOUT;
  if (strcmp(argc > 1 ? argv[1] : "", "commtimeout") == 0 && took > bound(4.0)) {
    printf("fault_check: rank %d: rlx_comm_set_timeout's 2 s not kept: %.2f s\n", rank, took);
    rc = RLX_OK; /* (fails below) */
  }
  /* A survivor names the peer it waited on: rank 1 itself, or, through the
   * ABORT another member sent, that member's report about rank 1; it may
   * see that member leave before its own deadline: lost, not timed out. */
  int ok = (rc == want || rc == RLX_ERR_PEER_LOST) &&
           strstr(rlx_errmsg(), rc == RLX_ERR_PEER_LOST ? "lost rank" : "waiting for rank") != NULL;
  printf("fault_check: rank %d: %s after %.2f s: %s\n", rank, rlx_strerror(rc), took, rlx_errmsg());
  int again = rlx_allreduce(RLX_IN_PLACE, &v, 1, RLX_FLOAT64, RLX_SUM, w);
  if (again != RLX_ERR_REVOKED) {
    printf("fault_check: rank %d: the next call gave %s, not revoked\n", rank, rlx_strerror(again));
    ok = 0;
  }
  fflush(stdout);
  free(big);
  mark_done(rank);
  rlx_finalize();
  int left = shm_left();
  if (left) {
    printf("fault_check: rank %d: %d descriptor(s) or mapping(s) of a shared segment left "
           "after rlx_finalize\n", rank, left);
    ok = 0;
  }
  printf("fault_check: rank %d: %s\n", rank, ok ? "PASS" : "FAIL");
  fflush(stdout);
  return ok ? 0 : 1;
}
