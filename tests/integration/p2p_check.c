/* Point-to-point messages on any number of ranks: every dtype and count
 * around a ring (blocking, nonblocking, rlx_sendrecv), messages to
 * oneself, receives from any source with racing senders, MPI's order
 * under many tags, big messages sent before their receive is posted,
 * truncation (small and big: nothing else lost), a dtype that differs,
 * rlx_waitall/rlx_testany, a receive's timeout, and bad arguments.
 *   p2p_check [--big N]   (N: the big count, default 1M+3)
 *   p2p_check kill        (rank 1 dies while rank 0 waits on it, and
 *                          rank 0's receive from any source meanwhile)
 *   p2p_check frame corrupt|lost  (2 ranks; RLX_FAULT_FRAME spoils rank
 *                          0's first message: rank 1's receive fails so,
 *                          no wrong data; after a corrupt one the next
 *                          message arrives whole)
 *   p2p_check stopref     (2 ranks, copies by reference on: rank 0 sends
 *                          4 MiB with a 0.2 s limit while rank 1 is
 *                          stopped for 0.6 s; the send by reference may
 *                          not end before rank 1 says it read the buffer,
 *                          and must not drop rank 1, which is alive: it
 *                          succeeds once rank 1, resumed, took it, rank 1
 *                          receives it whole, and a round trip after it
 *                          works)
 *   p2p_check stopref long (the same, rank 1 stopped for 4 s: the send
 *                          fails with RLX_ERR_TIMEOUT once the 2 s it waits
 *                          for the word are over too, and rank 1, resumed,
 *                          finds rank 0 gone from it) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <signal.h>
#include <rlxcoll/rlxcoll.h>
#include "stop_watch.h"

static int failures, me, np;

#define CHECK(cond, ...)                                                                           \
  do {                                                                                             \
    if (!(cond)) {                                                                                 \
      failures++;                                                                                  \
      printf("p2p_check: rank %d: FAILED %s:%d: ", me, __FILE__, __LINE__);                       \
      printf(__VA_ARGS__);                                                                         \
      printf(" [%s]\n", rlx_errmsg());                                                             \
    }                                                                                              \
  } while (0)

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* A time bound, stretched by RLX_TEST_TIME_SCALE (sanitizer builds). */
static double bound(double s) {
  const char *e = getenv("RLX_TEST_TIME_SCALE");
  double k = e ? atof(e) : 1.0;
  return s * (k >= 1.0 ? k : 1.0);
}

/* The bytes a message from src to dst with tag carries. */
static void pattern(unsigned char *b, size_t n, int src, int dst, int tag) {
  for (size_t i = 0; i < n; i++)
    b[i] = (unsigned char)(src * 131 + dst * 31 + tag * 7 + i * 13 + (i >> 8));
}

static void ring(size_t big) {
  size_t counts[] = {0, 1, 7, 1023, big};
  int to = (me + 1) % np, from = (me + np - 1) % np;
  for (int dt = 0; dt < RLX_DTYPE_COUNT; dt++) {
    size_t es = rlx_dtype_size((rlx_dtype_t)dt);
    for (int k = 0; k < 5; k++) {
      size_t n = counts[k], bytes = n * es;
      unsigned char *out = malloc(bytes + 1), *in = malloc(bytes + 16), *want = malloc(bytes + 1);
      int tag = dt * 10 + k;
      pattern(out, bytes, me, to, tag);
      pattern(want, bytes, from, me, tag);
      for (int how = 0; how < 3; how++) {
        memset(in, 0xee, bytes + 16);
        rlx_status_t st = {-5, -5, 999};
        rlx_request_t *rs = NULL, *rr = NULL;
        int rc = RLX_OK;
        if (how == 0) { /* isend, then a blocking receive (with room to spare) */
          rc = rlx_isend(out, n, (rlx_dtype_t)dt, to, tag, rlx_comm_world(), &rs);
          if (rc == RLX_OK)
            rc = rlx_recv(in, n + 16 / es, (rlx_dtype_t)dt, from, tag, rlx_comm_world(), &st);
          int rc2 = rs ? rlx_wait(&rs) : RLX_OK;
          rc = rc ? rc : rc2;
        } else if (how == 1) { /* irecv first, then a blocking send */
          rc = rlx_irecv(in, n, (rlx_dtype_t)dt, from, tag, rlx_comm_world(), &rr);
          int rc2 = rc ? rc : rlx_send(out, n, (rlx_dtype_t)dt, to, tag, rlx_comm_world());
          int rc3 = rr ? rlx_wait_status(&rr, &st) : RLX_OK;
          rc = rc ? rc : rc2 ? rc2 : rc3;
        } else {
          rc = rlx_sendrecv(out, n, to, tag, in, n, from, tag, (rlx_dtype_t)dt, rlx_comm_world(),
                            &st);
        }
        CHECK(rc == RLX_OK, "ring dt %s n %zu how %d: %s", rlx_dtype_name(dt), n, how,
              rlx_strerror(rc));
        if (rc != RLX_OK)
          continue;
        CHECK(memcmp(in, want, bytes) == 0, "ring dt %s n %zu how %d: wrong data",
              rlx_dtype_name(dt), n, how);
        CHECK(in[bytes] == 0xee, "ring dt %s n %zu how %d: wrote past the message",
              rlx_dtype_name(dt), n, how);
        CHECK(st.source == from && st.tag == tag && st.count == n,
              "ring dt %s n %zu how %d: status %d/%d/%zu", rlx_dtype_name(dt), n, how, st.source,
              st.tag, st.count);
      }
      free(out), free(in), free(want);
    }
  }
}

static size_t ring_big;
static void ring_default(void) { ring(ring_big); }

static void to_self(void) {
  int a[5] = {1, 2, 3, 4, 5}, b[5] = {0};
  rlx_status_t st;
  CHECK(rlx_send(a, 5, RLX_INT32, me, 3, rlx_comm_world()) == RLX_OK, "send to self");
  CHECK(rlx_recv(b, 5, RLX_INT32, RLX_ANY_SOURCE, RLX_ANY_TAG, rlx_comm_world(), &st) == RLX_OK &&
            memcmp(a, b, sizeof a) == 0 && st.source == me && st.tag == 3 && st.count == 5,
        "recv from self");
  rlx_request_t *r;
  memset(b, 0, sizeof b);
  CHECK(rlx_irecv(b, 5, RLX_INT32, me, 4, rlx_comm_world(), &r) == RLX_OK, "irecv self");
  CHECK(rlx_send(a, 5, RLX_INT32, me, 4, rlx_comm_world()) == RLX_OK, "send self posted");
  CHECK(rlx_wait(&r) == RLX_OK && memcmp(a, b, sizeof a) == 0 && r == NULL, "self posted");
}

/* Every other rank sends K messages to rank 0 at once; rank 0 takes them
 * from any source with any tag: each sender's in the order sent. */
static void any_source(void) {
  enum { K = 200 };
  if (np == 1)
    return;
  if (me != 0) {
    rlx_request_t *rq[K];
    long v[K][4];
    for (int i = 0; i < K; i++) {
      v[i][0] = me, v[i][1] = i, v[i][2] = me * 1000 + i, v[i][3] = -i;
      CHECK(rlx_isend(v[i], 4, RLX_INT64, 0, i % 3, rlx_comm_world(), &rq[i]) == RLX_OK, "isend");
    }
    CHECK(rlx_waitall(K, rq, NULL) == RLX_OK, "waitall sends");
    return;
  }
  int *next = calloc((size_t)np, sizeof(int));
  for (int i = 0; i < K * (np - 1); i++) {
    long v[4];
    rlx_status_t st;
    int rc = rlx_recv(v, 4, RLX_INT64, RLX_ANY_SOURCE, RLX_ANY_TAG, rlx_comm_world(), &st);
    CHECK(rc == RLX_OK, "any-source recv %d", i);
    if (rc != RLX_OK)
      break;
    int s = st.source;
    CHECK(s > 0 && s < np && v[0] == s && v[1] == next[s] && v[2] == s * 1000 + next[s] &&
              v[3] == -next[s] && st.tag == next[s] % 3 && st.count == 4,
          "any-source: from %d got #%ld (want #%d), tag %d", s, v[1], s > 0 && s < np ? next[s] : -1,
          st.tag);
    if (s > 0 && s < np)
      next[s]++;
  }
  free(next);
}

/* Rank 1 sends 100 messages to rank 0 over 7 tags; rank 0 takes tag 6
 * first, then the rest tag by tag with rlx_testany over posted receives:
 * within a tag, in the order sent. */
static void tag_order(void) {
  if (np < 2)
    return;
  enum { M = 100, T = 7 };
  if (me == 1) {
    for (int i = 0; i < M; i++)
      CHECK(rlx_send(&i, 1, RLX_INT32, 0, i % T, rlx_comm_world()) == RLX_OK, "send %d", i);
  } else if (me == 0) {
    for (int i = 6; i < M; i += T) {
      int v = -1;
      CHECK(rlx_recv(&v, 1, RLX_INT32, 1, 6, rlx_comm_world(), NULL) == RLX_OK && v == i,
            "tag 6: got %d, want %d", v, i);
    }
    int vals[M];
    rlx_request_t *rq[M];
    int n = 0;
    for (int t = 0; t < 6; t++)
      for (int i = t; i < M; i += T, n++)
        CHECK(rlx_irecv(&vals[n], 1, RLX_INT32, 1, t, rlx_comm_world(), &rq[n]) == RLX_OK, "irecv");
    int left = n, want_n = n;
    double t0 = now();
    while (left > 0 && now() - t0 < 30) {
      int idx, done;
      rlx_status_t st;
      CHECK(rlx_testany(want_n, rq, &idx, &done, &st) == RLX_OK, "testany");
      if (done && idx >= 0)
        left--;
      if (done && idx < 0)
        break;
    }
    CHECK(left == 0, "testany: %d receives never completed", left);
    n = 0;
    for (int t = 0; t < 6; t++)
      for (int i = t; i < M; i += T, n++)
        CHECK(vals[n] == i, "tag %d: got %d, want %d", t, vals[n], i);
    int idx = 5, done = 0;
    CHECK(rlx_testany(want_n, rq, &idx, &done, NULL) == RLX_OK && done == 1 && idx == -1,
          "testany of none");
  }
}

/* A big message sent (and its send complete) before the receive exists. */
static void unexpected_big(void) {
  if (np < 2)
    return;
  size_t n = 8u << 20;
  unsigned char *b = malloc(n), *want = malloc(n);
  if (me == 1) {
    pattern(b, n, 1, 0, 9);
    CHECK(rlx_send(b, n, RLX_UINT8, 0, 9, rlx_comm_world()) == RLX_OK, "big send");
    pattern(b, 1000, 1, 0, 10);
    CHECK(rlx_send(b, 1000, RLX_UINT8, 0, 10, rlx_comm_world()) == RLX_OK, "small send");
  }
  CHECK(rlx_barrier(rlx_comm_world()) == RLX_OK, "barrier");
  if (me == 0) {
    usleep(100000);
    rlx_status_t st;
    pattern(want, 1000, 1, 0, 10);
    /* the later one first (another tag), then the big one */
    CHECK(rlx_recv(b, 1000, RLX_UINT8, 1, 10, rlx_comm_world(), &st) == RLX_OK &&
              memcmp(b, want, 1000) == 0, "small after big");
    pattern(want, n, 1, 0, 9);
    CHECK(rlx_recv(b, n, RLX_UINT8, RLX_ANY_SOURCE, 9, rlx_comm_world(), &st) == RLX_OK &&
              memcmp(b, want, n) == 0 && st.count == n && st.source == 1, "big unexpected");
  }
  free(b), free(want);
}

/* Every pair sends each other a big message with a blocking send, then
 * receives: the sends complete without their receives (held a while in
 * the sender's memory, then copied out), so this does not deadlock. */
static void head_to_head(void) {
  if (np < 2 || me >= np / 2 * 2)
    return;
  int peer = me ^ 1;
  size_t n = 4u << 20;
  unsigned char *b = malloc(n), *want = malloc(n);
  pattern(b, n, me, peer, 13);
  double t0 = now();
  CHECK(rlx_send(b, n, RLX_UINT8, peer, 13, rlx_comm_world()) == RLX_OK, "head to head: send: %s",
        rlx_errmsg());
  memset(b, 0, n);
  pattern(want, n, peer, me, 13);
  rlx_status_t st;
  CHECK(rlx_recv(b, n, RLX_UINT8, peer, 13, rlx_comm_world(), &st) == RLX_OK &&
            memcmp(b, want, n) == 0 && st.count == n,
        "head to head: recv");
  CHECK(now() - t0 < bound(5), "head to head: %.2f s", now() - t0);
  free(b), free(want);
}

/* With RLX_CMA_HOLD_MS long (rlxcoll(7)): big messages sent before their
 * receives are posted stay in the sender's memory, their sends not
 * complete, until a receive takes them, straight into its buffer; one
 * too long for its receive fails the receive and completes the send. */
static void held(void) {
  if (np < 2)
    return;
  size_t n = 8u << 20;
  unsigned char *b = malloc(n), *c = malloc(n), *want = malloc(n);
  if (me == 1) {
    rlx_request_t *r[2];
    pattern(b, n, 1, 0, 11);
    pattern(c, n, 1, 0, 12);
    CHECK(rlx_isend(b, n, RLX_UINT8, 0, 11, rlx_comm_world(), &r[0]) == RLX_OK, "held isend");
    CHECK(rlx_isend(c, n, RLX_UINT8, 0, 12, rlx_comm_world(), &r[1]) == RLX_OK, "held isend");
    usleep(200000);
    for (int i = 0; i < 2; i++) {
      int done = -1;
      CHECK(rlx_test(&r[i], &done) == RLX_OK && done == 0,
            "held: send %d complete (%d) before its receive was posted", i, done);
    }
    CHECK(rlx_barrier(rlx_comm_world()) == RLX_OK, "barrier");
    CHECK(rlx_waitall(2, r, NULL) == RLX_OK, "held: the sends, once received: %s", rlx_errmsg());
  } else {
    CHECK(rlx_barrier(rlx_comm_world()) == RLX_OK, "barrier");
  }
  if (me == 0) {
    rlx_status_t st;
    usleep(50000); /* (both descriptors in, and held) */
    int rc = rlx_recv(b, 1000, RLX_UINT8, 1, 12, rlx_comm_world(), &st);
    CHECK(rc == RLX_ERR_TRUNCATE && strstr(rlx_errmsg(), "has 8388608 bytes, the receive room for 1000") &&
              st.count == n,
          "held, truncated: %s (%s), count %zu", rlx_strerror(rc), rlx_errmsg(), st.count);
    pattern(want, n, 1, 0, 11);
    memset(b, 0, n);
    CHECK(rlx_recv(b, n, RLX_UINT8, RLX_ANY_SOURCE, 11, rlx_comm_world(), &st) == RLX_OK &&
              memcmp(b, want, n) == 0 && st.count == n && st.source == 1,
          "held: the message taken straight from the sender");
  }
  free(b), free(c), free(want);
}

/* Too long for the receive: RLX_ERR_TRUNCATE naming both sizes; the next
 * message is whole. Small (through the stage), big (straight in, or by
 * reference), posted first or not. */
static void truncation(void) {
  if (np < 2)
    return;
  size_t sizes[2] = {100, 1u << 20};
  for (int k = 0; k < 2; k++)
    for (int posted = 0; posted < 2; posted++) {
      size_t n = sizes[k];
      int *b = calloc(n, sizeof(int));
      if (me == 1) {
        for (size_t i = 0; i < n; i++)
          b[i] = (int)i;
        CHECK(rlx_send(b, n, RLX_INT32, 0, 1, rlx_comm_world()) == RLX_OK, "trunc send");
        CHECK(rlx_send(b, 3, RLX_INT32, 0, 1, rlx_comm_world()) == RLX_OK, "after send");
      } else if (me == 0) {
        rlx_request_t *r = NULL;
        rlx_status_t st;
        if (posted)
          CHECK(rlx_irecv(b, 10, RLX_INT32, 1, 1, rlx_comm_world(), &r) == RLX_OK, "irecv");
        else
          usleep(50000);
        int rc = posted ? rlx_wait_status(&r, &st)
                        : rlx_recv(b, 10, RLX_INT32, 1, 1, rlx_comm_world(), &st);
        char want[64];
        snprintf(want, sizeof want, "has %zu bytes, the receive room for 40", n * 4);
        CHECK(rc == RLX_ERR_TRUNCATE && strstr(rlx_errmsg(), want) != NULL &&
                  st.count == n && st.source == 1,
              "truncate %zu posted %d: %s, count %zu", n, posted, rlx_strerror(rc), st.count);
        memset(b, 0, 12);
        CHECK(rlx_recv(b, 10, RLX_INT32, 1, 1, rlx_comm_world(), &st) == RLX_OK && st.count == 3 &&
                  b[0] == 0 && b[1] == 1 && b[2] == 2,
              "the message after a truncated one");
      }
      free(b);
      CHECK(rlx_barrier(rlx_comm_world()) == RLX_OK, "barrier after truncation");
    }
}

static void dtype_differs(void) {
  if (np < 2)
    return;
  if (me == 1) {
    float f[4] = {1, 2, 3, 4};
    CHECK(rlx_send(f, 4, RLX_FLOAT32, 0, 2, rlx_comm_world()) == RLX_OK, "send float32");
  } else if (me == 0) {
    int v[4];
    int rc = rlx_recv(v, 4, RLX_INT32, 1, 2, rlx_comm_world(), NULL);
    CHECK(rc == RLX_ERR_MISMATCH && strstr(rlx_errmsg(), "rank 1 sent float32") != NULL,
          "dtype differs: %s", rlx_strerror(rc));
  }
}

/* Everyone to everyone at once: irecvs and isends, then one rlx_waitall. */
static void all_pairs(void) {
  int n2 = 2 * np;
  rlx_request_t **rq = calloc((size_t)n2, sizeof(*rq));
  rlx_status_t *st = calloc((size_t)n2, sizeof(*st));
  double *in = calloc((size_t)np * 64, sizeof(double)), *out = calloc(64, sizeof(double));
  for (int i = 0; i < 64; i++)
    out[i] = me + i / 100.0;
  for (int r = 0; r < np; r++)
    CHECK(rlx_irecv(in + r * 64, 64, RLX_FLOAT64, r, 77, rlx_comm_world(), &rq[r]) == RLX_OK,
          "irecv");
  for (int r = 0; r < np; r++)
    CHECK(rlx_isend(out, 64, RLX_FLOAT64, r, 77, rlx_comm_world(), &rq[np + r]) == RLX_OK,
          "isend");
  CHECK(rlx_waitall(n2, rq, st) == RLX_OK, "waitall");
  for (int r = 0; r < np; r++) {
    CHECK(rq[r] == NULL && st[r].source == r && st[r].count == 64, "waitall status %d", r);
    for (int i = 0; i < 64; i++)
      CHECK(in[r * 64 + i] == r + i / 100.0, "all pairs: from %d [%d]", r, i);
  }
  free(rq), free(st), free(in), free(out);
}

static void timeout_and_args(void) {
  rlx_comm_t *d = NULL;
  CHECK(rlx_comm_dup(rlx_comm_world(), &d) == RLX_OK, "dup");
  CHECK(rlx_comm_set_timeout(d, 0.5) == RLX_OK, "set timeout");
  int v = 0;
  double t0 = now();
  int rc = rlx_recv(&v, 1, RLX_INT32, RLX_ANY_SOURCE, 12345, d, NULL);
  double took = now() - t0;
  CHECK(rc == RLX_ERR_TIMEOUT && took >= 0.45 && took < bound(5) &&
            strstr(rlx_errmsg(), "rlx_recv(count=1, int32, from any source, tag 12345)") != NULL,
        "timeout: %s after %.2f s", rlx_strerror(rc), took);
  /* a failed receive does not revoke: the communicator still works */
  CHECK(rlx_barrier(d) == RLX_OK, "barrier after a receive's timeout");
  CHECK(rlx_comm_free(&d) == RLX_OK, "free");
  rlx_comm_t *w = rlx_comm_world();
  CHECK(rlx_send(&v, 1, RLX_INT32, np, 0, w) == RLX_ERR_ARG, "dest out of range");
  CHECK(rlx_send(&v, 1, RLX_INT32, RLX_ANY_SOURCE, 0, w) == RLX_ERR_ARG, "send to any");
  CHECK(rlx_send(&v, 1, RLX_INT32, 0, -3, w) == RLX_ERR_ARG, "negative tag");
  CHECK(rlx_recv(&v, 1, RLX_INT32, 0, -2, w, NULL) == RLX_ERR_ARG, "recv tag -2");
  CHECK(rlx_send(NULL, 1, RLX_INT32, 0, 0, w) == RLX_ERR_ARG, "NULL buffer");
  CHECK(rlx_send(&v, 1, (rlx_dtype_t)99, 0, 0, w) == RLX_ERR_ARG, "bad dtype");
  CHECK(rlx_send(&v, (size_t)1 << 31, RLX_INT32, 0, 0, w) == RLX_ERR_ARG, "over 1 GiB");
  CHECK(rlx_isend(&v, 1, RLX_INT32, 0, 0, w, NULL) == RLX_ERR_ARG, "isend without req");
  CHECK(rlx_send(&v, 1, RLX_INT32, 0, 0, NULL) == RLX_ERR_ARG, "NULL comm");
  CHECK(rlx_waitall(-1, NULL, NULL) == RLX_ERR_ARG, "waitall -1");
}

/* Rank 1 dies while rank 0 waits for it; then rank 0's receive from any
 * source fails too (a member is lost), both within the detection time.
 * big: rank 1 first starts a big send, which rank 0 receives only after
 * rank 1 died: held in rank 1's memory (RLX_CMA_HOLD_MS long), the
 * receive fails as lost; copied when the hold ran out, rank 0 receives it
 * whole, and its next receive fails. */
static int kill_mode(int big) {
  signal(SIGTERM, SIG_IGN); /* rlxrun stops the job when rank 1 dies: report first */
  size_t n = 8u << 20;
  unsigned char *b = big ? malloc(n) : NULL, *want = big ? malloc(n) : NULL;
  if (big) /* (before the barrier: filling 8 MiB takes long under the sanitizers) */
    pattern(me == 1 ? b : want, n, 1, 0, 0);
  CHECK(rlx_barrier(rlx_comm_world()) == RLX_OK, "barrier");
  if (me == 1) {
    rlx_request_t *r;
    if (big)
      CHECK(rlx_isend(b, n, RLX_UINT8, 0, 0, rlx_comm_world(), &r) == RLX_OK, "big isend");
    usleep(big ? 1000000 : 300000);
    _exit(3);
  }
  if (me != 0)
    return 0;
  int v;
  if (big) {
    const char *hold = getenv("RLX_CMA_HOLD_MS");
    int held = hold != NULL && atol(hold) >= 10000;
    rlx_status_t st;
    /* until rank 1 is gone: a receive nothing it sends matches fails then */
    int rc = rlx_recv(&v, 1, RLX_INT32, 1, 99, rlx_comm_world(), NULL);
    CHECK(rc == RLX_ERR_PEER_LOST, "waiting for rank 1 to die: %s", rlx_strerror(rc));
    rc = rlx_recv(b, n, RLX_UINT8, 1, 0, rlx_comm_world(), &st);
    printf("p2p_check: rank 0: a big message from rank 1, received after it died: %s (held %d)\n",
           rlx_strerror(rc), held);
    if (held)
      CHECK(rc == RLX_ERR_PEER_LOST && strstr(rlx_errmsg(), "lost rank 1") != NULL,
            "held, its sender dead: %s", rlx_strerror(rc));
    else
      CHECK(rc == RLX_OK && st.count == n && memcmp(b, want, n) == 0,
            "copied before its sender died: %s", rlx_strerror(rc));
  }
  double t0 = now();
  int rc = rlx_recv(&v, 1, RLX_INT32, 1, 0, rlx_comm_world(), NULL);
  double t1 = now();
  int rc2 = rlx_recv(&v, 1, RLX_INT32, RLX_ANY_SOURCE, RLX_ANY_TAG, rlx_comm_world(), NULL);
  double t2 = now();
  printf("p2p_check: rank 0: recv from rank 1: %s after %.2f s: %s\n", rlx_strerror(rc), t1 - t0,
         rlx_errmsg());
  CHECK(rc == RLX_ERR_PEER_LOST && strstr(rlx_errmsg(), "lost rank 1") != NULL && t1 - t0 < bound(5),
        "recv from a dead rank: %s", rlx_strerror(rc));
  CHECK(rc2 == RLX_ERR_PEER_LOST && t2 - t1 < bound(1), "any-source recv after a loss: %s",
        rlx_strerror(rc2));
  printf("p2p_check: rank 0: %s\n", failures ? "FAIL" : "PASS");
  fflush(stdout);
  free(b), free(want);
  return failures != 0;
}

/* RLX_FAULT_CMA=diepush (fault-injection builds): rank 1 sends rank 0 a
 * big message by reference, which both copy, and exits when asked for
 * its part; rank 0's receive fails naming it, within the detection time.
 * (=wrongpid: rank 0 names another process as its own; rank 1 refuses
 * and fails the connection, and rank 0's receive fails the same way.) */
static int pushdie_mode(void) {
  signal(SIGTERM, SIG_IGN);
  size_t n = 8u << 20;
  unsigned char *b = malloc(n);
  memset(b, 7, n);
  CHECK(rlx_barrier(rlx_comm_world()) == RLX_OK, "barrier");
  if (me == 1) {
    int rc = rlx_send(b, n, RLX_UINT8, 0, 3, rlx_comm_world()); /* (diepush: exits in it) */
    printf("p2p_check: rank 1: the send returned %s: %s\n", rlx_strerror(rc), rlx_errmsg());
    fflush(stdout);
    usleep(1000000);
    return 0;
  }
  if (me != 0)
    return 0;
  double t0 = now();
  int rc = rlx_recv(b, n, RLX_UINT8, 1, 3, rlx_comm_world(), NULL);
  double took = now() - t0;
  printf("p2p_check: rank 0: a receive whose sender's part never came: %s after %.2f s: %s\n",
         rlx_strerror(rc), took, rlx_errmsg());
  CHECK(rc == RLX_ERR_PEER_LOST && strstr(rlx_errmsg(), "lost rank 1") != NULL && took < bound(5),
        "pushdie: %s", rlx_strerror(rc));
  printf("p2p_check: rank 0: %s\n", failures ? "FAIL" : "PASS");
  fflush(stdout);
  free(b);
  return failures != 0;
}

/* stopref: see the top. Rank 1 is stopped by a child of its own (and
 * waits on a pipe meanwhile); rank 0 sends only once /proc says rank 1
 * is stopped: stopping itself after the fork (tens of ms under
 * AddressSanitizer) let rank 1's progress thread take the message that
 * came first, 1 ms later (the hold for a receive), and the send
 * returned at once (CI on 69b87c5, over the Unix socket). */
static int stopref_mode(int long_stop) {
  size_t n = 1u << 20;
  float *v = malloc(n * sizeof(float));
  int ping = 0;
  int32_t pids[2] = {0, 0}, self32 = (int32_t)getpid();
  for (size_t i = 0; i < n; i++)
    v[i] = me == 0 ? (float)(i % 977) : -1.0f;
  CHECK(rlx_allgather(&self32, pids, 1, RLX_INT32, rlx_comm_world()) == RLX_OK, "allgather");
  CHECK(rlx_barrier(rlx_comm_world()) == RLX_OK, "barrier");
  double t0 = now();
  if (me == 1) {
    struct timespec stop = {long_stop ? 4 : 0, long_stop ? 0 : 600 * 1000 * 1000};
    CHECK(stopped_by_child(stop) == 0, "no pipe or child to stop rank 1");
    int rc = rlx_recv(v, n, RLX_FLOAT32, 0, 7, rlx_comm_world(), NULL);
    if (long_stop) {
      printf("p2p_check: rank 1: the receive after a 4 s stop: %s: %s\n", rlx_strerror(rc),
             rlx_errmsg());
      CHECK(rc == RLX_ERR_PEER_LOST, "the receive after a long stop: %s", rlx_strerror(rc));
      printf("p2p_check: rank 1: %s\n", failures ? "FAIL" : "PASS");
      fflush(stdout);
      free(v);
      return failures != 0; /* (no finalize: the job is broken for rank 1) */
    }
    CHECK(rc == RLX_OK, "the receive after the stop: %s", rlx_strerror(rc));
    for (size_t i = 0; rc == RLX_OK && i < n; i++)
      if (v[i] != (float)(i % 977)) {
        CHECK(0, "wrong data at %zu: %g", i, v[i]);
        break;
      }
    rc = rlx_recv(&ping, 1, RLX_INT32, 0, 8, rlx_comm_world(), NULL);
    CHECK(rc == RLX_OK && ping == 42, "the round trip's message: %s", rlx_strerror(rc));
    CHECK(rlx_send(&ping, 1, RLX_INT32, 0, 9, rlx_comm_world()) == RLX_OK, "the round trip's reply");
  } else if (me == 0) {
    CHECK(rlx_comm_set_timeout(rlx_comm_world(), 0.2) == RLX_OK, "rlx_comm_set_timeout");
    CHECK(wait_stopped(pids[1], bound(5.0)), "rank 1 was not stopped within %.0f s", bound(5.0));
    t0 = now();
    int rc = rlx_send(v, n, RLX_FLOAT32, 1, 7, rlx_comm_world());
    double took = now() - t0;
    printf("p2p_check: rank 0: 4 MiB by reference to a rank stopped for %s s, 0.2 s limit: %s "
           "after %.2f s%s%s\n", long_stop ? "4" : "0.6", rlx_strerror(rc), took, rc ? ": " : "",
           rc ? rlx_errmsg() : "");
    if (long_stop) {
      CHECK(rc == RLX_ERR_TIMEOUT && took >= 2.1 && took < bound(3.5), "the send: %s after %.2f s",
            rlx_strerror(rc), took);
      printf("p2p_check: rank 0: %s\n", failures ? "FAIL" : "PASS");
      fflush(stdout);
      usleep(4500000); /* (until rank 1 has resumed and found us gone from it) */
      free(v);
      return failures != 0;
    }
    CHECK(rc == RLX_OK && took >= 0.5 && took < bound(3), "the send: %s after %.2f s",
          rlx_strerror(rc), took);
    CHECK(rlx_comm_set_timeout(rlx_comm_world(), 10) == RLX_OK, "rlx_comm_set_timeout");
    ping = 42;
    rc = rlx_send(&ping, 1, RLX_INT32, 1, 8, rlx_comm_world());
    CHECK(rc == RLX_OK, "the round trip's message: %s", rlx_strerror(rc));
    rc = rlx_recv(&ping, 1, RLX_INT32, 1, 9, rlx_comm_world(), NULL);
    CHECK(rc == RLX_OK && ping == 42, "the round trip's reply: %s", rlx_strerror(rc));
  }
  printf("p2p_check: rank %d: %s\n", me, failures ? "FAIL" : "PASS");
  fflush(stdout);
  free(v);
  rlx_finalize();
  return failures != 0;
}

/* Rank 0's second frame (after a round trip that makes the connection:
 * the fault hook spares a frame that waits for one) is a message of 1 Mi
 * doubles, spoilt by RLX_FAULT_FRAME=...:2; then a small one. Rank 1 must see want, never wrong
 * data, within 5 s; after a corrupt payload (the stream in step) the small
 * one comes whole. */
static int frame_mode(const char *want_s) {
  int want = strcmp(want_s, "corrupt") == 0 ? RLX_ERR_CORRUPT : RLX_ERR_PEER_LOST;
  size_t n = 1u << 20;
  double *v = malloc(n * sizeof(double));
  signal(SIGTERM, SIG_IGN);
  int hello = 0;
  if (me == 0) {
    for (size_t i = 0; i < n; i++)
      v[i] = (double)i;
    CHECK(rlx_send(&hello, 1, RLX_INT32, 1, 3, rlx_comm_world()) == RLX_OK &&
              rlx_recv(&hello, 1, RLX_INT32, 1, 3, rlx_comm_world(), NULL) == RLX_OK,
          "round trip");
    int rc = rlx_send(v, n, RLX_FLOAT64, 1, 4, rlx_comm_world());
    int rc2 = rlx_send(v, 3, RLX_FLOAT64, 1, 5, rlx_comm_world());
    printf("p2p_check: rank 0: sends: %s, %s\n", rlx_strerror(rc), rlx_strerror(rc2));
  } else if (me == 1) {
    memset(v, 0, n * sizeof(double));
    CHECK(rlx_recv(&hello, 1, RLX_INT32, 0, 3, rlx_comm_world(), NULL) == RLX_OK &&
              rlx_send(&hello, 1, RLX_INT32, 0, 3, rlx_comm_world()) == RLX_OK,
          "round trip");
    if (getenv("FAULT_LATE") && *getenv("FAULT_LATE"))
      usleep(300000); /* the spoilt message is here before its receive */
    double t0 = now();
    int rc = rlx_recv(v, n, RLX_FLOAT64, 0, 4, rlx_comm_world(), NULL);
    double took = now() - t0;
    printf("p2p_check: rank 1: %s after %.2f s: %s\n", rlx_strerror(rc), took,
           rc ? rlx_errmsg() : "");
    CHECK(rc == want && took < bound(5), "a spoilt message: %s", rlx_strerror(rc));
    if (rc == RLX_OK)
      for (size_t i = 0; i < n; i++)
        if (v[i] != (double)i) {
          printf("p2p_check: rank 1: WRONG DATA at %zu\n", i);
          failures++;
          break;
        }
    if (want == RLX_ERR_CORRUPT) {
      rc = rlx_recv(v, 3, RLX_FLOAT64, 0, 5, rlx_comm_world(), NULL);
      CHECK(rc == RLX_OK && v[0] == 0 && v[1] == 1 && v[2] == 2, "the message after it: %s",
            rlx_strerror(rc));
    }
    printf("p2p_check: rank 1: %s\n", failures ? "FAIL" : "PASS");
  }
  fflush(stdout);
  free(v);
  if (me == 1 && want == RLX_ERR_CORRUPT)
    rlx_finalize();
  return failures != 0;
}

int main(int argc, char **argv) {
  size_t big = (1u << 20) + 3;
  if (rlx_init(&argc, &argv) != RLX_OK) {
    fprintf(stderr, "p2p_check: rlx_init: %s\n", rlx_errmsg());
    return 2;
  }
  me = rlx_comm_rank(rlx_comm_world());
  np = rlx_comm_size(rlx_comm_world());
  if (argc > 1 && strcmp(argv[1], "kill") == 0)
    return kill_mode(argc > 2 && strcmp(argv[2], "big") == 0);
  if (argc > 1 && strcmp(argv[1], "pushdie") == 0)
    return pushdie_mode();
  if (argc > 2 && strcmp(argv[1], "frame") == 0)
    return frame_mode(argv[2]);
  if (argc > 1 && strcmp(argv[1], "stopref") == 0)
    return stopref_mode(argc > 2 && strcmp(argv[2], "long") == 0);
  if (argc > 2 && strcmp(argv[1], "--big") == 0)
    big = (size_t)strtoul(argv[2], NULL, 10);
  /* (a barrier between the parts: a receive from any source with any tag
   * takes the next part's messages too) */
  void (*parts[])(void) = {ring_default, to_self,      any_source,    tag_order,
                           unexpected_big, head_to_head, truncation, dtype_differs,
                           all_pairs,    timeout_and_args};
  ring_big = big;
  /* a hold that outlasts the test: the big unexpected send could not
   * complete before its receive; the held part shows what it does */
  /* (not where nothing goes by reference: tcp, RLX_CMA=off, or copies
   * refused, after which a sender puts its payloads on the socket) */
  const char *hold = getenv("RLX_CMA_HOLD_MS"), *cma = getenv("RLX_CMA"),
             *tr = getenv("RLX_TRANSPORT");
  if (hold != NULL && atol(hold) >= 10000 && !(cma != NULL && strcmp(cma, "off") == 0) &&
      !(tr != NULL && strcmp(tr, "tcp") == 0) && getenv("RLX_FAULT_CMA") == NULL)
    parts[4] = held, parts[5] = to_self; /* (head to head would wait for ever) */
  for (size_t i = 0; i < sizeof parts / sizeof parts[0]; i++) {
    parts[i]();
    CHECK(rlx_barrier(rlx_comm_world()) == RLX_OK, "barrier after part %zu", i);
  }
  int total = 0;
  rlx_allreduce(&failures, &total, 1, RLX_INT32, RLX_SUM, rlx_comm_world());
  if (me == 0)
    printf("p2p_check: %d ranks: %d failures in all\n", np, total);
  rlx_finalize();
  return total != 0;
}
