/* OSU-style point-to-point sweeps between ranks 0 and 1, 8 B to 64 MiB:
 * latency (ping-pong: half the round trip, as osu_latency) and bandwidth
 * (a window of 64 nonblocking sends, then a 4-byte reply, as osu_bw:
 * reported as microseconds per message, so that lower is better as for
 * latency; MB/s = bytes / us). The same logic is built against rlxcoll
 * (default) and MPI (-DUSE_MPI), so the two do identical work.
 *   osu_p2p latency|bw [max_bytes [min_bytes]]   (OSU_REPEAT=N: N times the rounds)
 * Prints "lib bytes us" per size (rank 0). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "osu_lib.h"

#define WINDOW 64

/* The messages themselves (osu_lib.h has the rest). */
#ifdef USE_MPI
typedef MPI_Request req_t;
static void send_b(const void *b, size_t n, int to) {
  MPI_Send(b, (int)n, MPI_BYTE, to, 1, MPI_COMM_WORLD);
}
static void recv_b(void *b, size_t n, int from) {
  MPI_Recv(b, (int)n, MPI_BYTE, from, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
}
static void isend_b(const void *b, size_t n, int to, req_t *r) {
  MPI_Isend(b, (int)n, MPI_BYTE, to, 1, MPI_COMM_WORLD, r);
}
static void irecv_b(void *b, size_t n, int from, req_t *r) {
  MPI_Irecv(b, (int)n, MPI_BYTE, from, 1, MPI_COMM_WORLD, r);
}
static void waitall(int n, req_t *r) { MPI_Waitall(n, r, MPI_STATUSES_IGNORE); }
#else
typedef rlx_request_t *req_t;
static void check(int rc, const char *what) {
  if (rc != RLX_OK) {
    fprintf(stderr, "%s failed: %s\n", what, rlx_errmsg());
    exit(1);
  }
}
static void send_b(const void *b, size_t n, int to) {
  check(rlx_send(b, n, RLX_UINT8, to, 1, rlx_comm_world()), "rlx_send");
}
static void recv_b(void *b, size_t n, int from) {
  check(rlx_recv(b, n, RLX_UINT8, from, 1, rlx_comm_world(), NULL), "rlx_recv");
}
static void isend_b(const void *b, size_t n, int to, req_t *r) {
  check(rlx_isend(b, n, RLX_UINT8, to, 1, rlx_comm_world(), r), "rlx_isend");
}
static void irecv_b(void *b, size_t n, int from, req_t *r) {
  check(rlx_irecv(b, n, RLX_UINT8, from, 1, rlx_comm_world(), r), "rlx_irecv");
}
static void waitall(int n, req_t *r) { check(rlx_waitall(n, r, NULL), "rlx_waitall"); }
#endif

/* Ping-pong: rank 0 sends, rank 1 sends back. */
static void pingpong(int rank, char *s, char *r, size_t bytes, long iters) {
  for (long i = 0; i < iters; i++) {
    if (rank == 0) {
      send_b(s, bytes, 1);
      recv_b(r, bytes, 1);
    } else if (rank == 1) {
      recv_b(r, bytes, 0);
      send_b(s, bytes, 0);
    }
  }
}

/* A window of sends from rank 0, received by rank 1 into one buffer
 * (its receives are posted first, as osu_bw), then a 4-byte reply. */
static void window(int rank, char *s, char *r, size_t bytes, long iters) {
  req_t rq[WINDOW];
  for (long i = 0; i < iters; i++) {
    if (rank == 0) {
      for (int w = 0; w < WINDOW; w++)
        isend_b(s, bytes, 1, &rq[w]);
      waitall(WINDOW, rq);
      recv_b(r, 4, 1);
    } else if (rank == 1) {
      for (int w = 0; w < WINDOW; w++)
        irecv_b(r, bytes, 0, &rq[w]);
      waitall(WINDOW, rq);
      send_b(s, 4, 0);
    }
  }
}

int main(int argc, char **argv) {
  if (init(&argc, &argv) != 0) {
    fprintf(stderr, "init failed\n");
    return 1;
  }
  int bw = argc > 1 && strcmp(argv[1], "bw") == 0;
  size_t max_bytes = argc > 2 ? strtoull(argv[2], NULL, 10) : (64u << 20);
  size_t min_bytes = argc > 3 ? strtoull(argv[3], NULL, 10) : 8; /* a power of two */
  int rank = osu_rank;
  char *s = malloc(max_bytes), *r = malloc(max_bytes);
  memset(s, 7, max_bytes);
  memset(r, 0, max_bytes);
  pingpong(rank, s, r, 8, 5000); /* warm up: connections, the first calls */
  barrier();
  for (size_t bytes = min_bytes; bytes <= max_bytes; bytes *= 2) {
    /* ~0.2 s of data movement: at least 5 and at most 5000 rounds */
    long iters = (long)((256u << 20) / bytes / (bw ? WINDOW : 1));
    if (iters > (bw ? 200 : 5000))
      iters = bw ? 200 : 5000;
    if (iters < 5)
      iters = 5;
    if (getenv("OSU_REPEAT") != NULL) /* longer runs, for a profiler */
      iters *= atol(getenv("OSU_REPEAT"));
    (bw ? window : pingpong)(rank, s, r, bytes, iters / 10 + 1);
    barrier();
    double t0 = now_us();
    (bw ? window : pingpong)(rank, s, r, bytes, iters);
    double us = (now_us() - t0) / (double)iters / (bw ? WINDOW : 2);
    if (rank == 0)
      printf("%s %zu %.3f\n", LIB, bytes, us);
    fflush(stdout);
    barrier();
  }
  free(s);
  free(r);
  fini();
  return 0;
}
