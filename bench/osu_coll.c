/* OSU-style latency sweeps of the collectives that move blocks (float32
 * blocks of one size per rank, root 0; and broadcast), built against rlxcoll (default)
 * and against MPI (-DUSE_MPI), so the two run identical work.
 *   osu_coll COLL [max_bytes [min_bytes]]
 * COLL: alltoall, alltoallv (every count equal), gather, scatter,
 * allgatherv, bcast, gatherv, scatterv, allgather. bytes is one block: what one rank sends one other, as the
 * size of osu_alltoall and osu_gather is (bcast: the message, as osu_bcast's). Prints "lib bytes avg_us": the
 * slowest rank's average per call. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "osu_lib.h"

enum { ALLTOALL, ALLTOALLV, GATHER, SCATTER, ALLGATHERV, BCAST, GATHERV, SCATTERV, ALLGATHER };
static const char *const names[] = {"alltoall", "alltoallv", "gather", "scatter", "allgatherv",
                                    "bcast", "gatherv", "scatterv", "allgather"};
#define V_FORM(c) ((c) == ALLTOALLV || (c) == ALLGATHERV || (c) == GATHERV || (c) == SCATTERV)

#ifdef USE_MPI
static int *cnt, *dsp; /* (the v-forms' counts and displacements, in elements) */
static void run(int coll, const float *s, float *r, size_t n) {
  MPI_Comm w = MPI_COMM_WORLD;
  for (int i = 0; V_FORM(coll) ? i < osu_size : 0; i++) {
    cnt[i] = (int)n;
    dsp[i] = (int)n * i;
  }
  switch (coll) {
  case ALLTOALL: MPI_Alltoall(s, (int)n, MPI_FLOAT, r, (int)n, MPI_FLOAT, w); break;
  case ALLTOALLV: MPI_Alltoallv(s, cnt, dsp, MPI_FLOAT, r, cnt, dsp, MPI_FLOAT, w); break;
  case GATHER: MPI_Gather(s, (int)n, MPI_FLOAT, r, (int)n, MPI_FLOAT, 0, w); break;
  case SCATTER: MPI_Scatter(s, (int)n, MPI_FLOAT, r, (int)n, MPI_FLOAT, 0, w); break;
  case BCAST: MPI_Bcast(osu_rank == 0 ? (void *)s : r, (int)n, MPI_FLOAT, 0, w); break;
  case GATHERV: MPI_Gatherv(s, (int)n, MPI_FLOAT, r, cnt, dsp, MPI_FLOAT, 0, w); break;
  case SCATTERV: MPI_Scatterv(s, cnt, dsp, MPI_FLOAT, r, (int)n, MPI_FLOAT, 0, w); break;
  case ALLGATHER: MPI_Allgather(s, (int)n, MPI_FLOAT, r, (int)n, MPI_FLOAT, w); break;
  default: MPI_Allgatherv(s, (int)n, MPI_FLOAT, r, cnt, dsp, MPI_FLOAT, w); break;
  }
}
#else
static size_t *cnt, *dsp;
static void run(int coll, const float *s, float *r, size_t n) {
  rlx_comm_t *w = rlx_comm_world();
  int rc;
  for (int i = 0; V_FORM(coll) ? i < osu_size : 0; i++) {
    cnt[i] = n;
    dsp[i] = n * (size_t)i;
  }
  switch (coll) {
  case ALLTOALL: rc = rlx_alltoall(s, r, n, RLX_FLOAT32, w); break;
  case ALLTOALLV: rc = rlx_alltoallv(s, cnt, dsp, r, cnt, dsp, RLX_FLOAT32, w); break;
  case GATHER: rc = rlx_gather(s, r, n, RLX_FLOAT32, 0, w); break;
  case SCATTER: rc = rlx_scatter(s, r, n, RLX_FLOAT32, 0, w); break;
  case BCAST: rc = rlx_bcast(osu_rank == 0 ? (void *)s : r, n, RLX_FLOAT32, 0, w); break;
  case GATHERV: rc = rlx_gatherv(s, n, r, cnt, dsp, RLX_FLOAT32, 0, w); break;
  case SCATTERV: rc = rlx_scatterv(s, cnt, dsp, r, n, RLX_FLOAT32, 0, w); break;
  case ALLGATHER: rc = rlx_allgather(s, r, n, RLX_FLOAT32, w); break;
  default: rc = rlx_allgatherv(s, n, r, cnt, dsp, RLX_FLOAT32, w); break;
  }
  if (rc != RLX_OK) {
    fprintf(stderr, "%s failed: %s\n", names[coll], rlx_errmsg());
    exit(1);
  }
}
#endif

int main(int argc, char **argv) {
  int coll = -1;
  for (int i = 0; argc > 1 && i < (int)(sizeof names / sizeof names[0]); i++)
    coll = strcmp(argv[1], names[i]) == 0 ? i : coll;
  if (coll < 0) {
    fprintf(stderr, "usage: osu_coll alltoall|alltoallv|gather|scatter|allgatherv|bcast|gatherv|scatterv|allgather [max [min]]\n");
    return 2;
  }
  if (init(&argc, &argv) != 0) {
    fprintf(stderr, "init failed\n");
    return 1;
  }
  cnt = malloc(sizeof(*cnt) * (size_t)osu_size);
  dsp = malloc(sizeof(*dsp) * (size_t)osu_size);
  size_t max_bytes = argc > 2 ? strtoull(argv[2], NULL, 10) : (4u << 20);
  size_t min_bytes = argc > 3 ? strtoull(argv[3], NULL, 10) : 8; /* a power of two */
  size_t all = max_bytes * (size_t)osu_size;
  float *s = malloc(all), *r = malloc(all);
  for (size_t i = 0; i < all / 4; i++)
    s[i] = (float)(i % 1000) * 0.5f;
  memset(r, 0, all);
  /* Warm up (~0.2 s): the job's first calls run slower on either library. */
  for (int i = 0; i < 2000; i++)
    run(coll, s, r, 2);
  barrier();
  for (size_t bytes = min_bytes; bytes <= max_bytes; bytes *= 2) {
    size_t n = bytes / 4;
    /* Enough calls for ~0.2 s of data movement, at least 5 and at most
     * 20000: 2000 calls of 0.2 us were 0.4 ms, where one scheduler
     * hiccup moved a round by a quarter (session 46). */
    long iters = (long)((256u << 20) / (bytes * (size_t)osu_size));
    if (iters > 20000)
      iters = 20000;
    if (iters < 5)
      iters = 5;
    if (getenv("OSU_REPEAT") != NULL) /* longer runs, for a profiler */
      iters *= atol(getenv("OSU_REPEAT"));
    long warm = iters / 10 + 2;
    for (long i = 0; i < warm; i++)
      run(coll, s, r, n);
    barrier();
    double t0 = now_us();
    for (long i = 0; i < iters; i++)
      run(coll, s, r, n);
    double avg = max_double((now_us() - t0) / (double)iters);
    if (osu_rank == 0)
      printf("%s %zu %.3f\n", LIB, bytes, avg);
    fflush(stdout);
  }
  free(s);
  free(r);
  fini();
  return 0;
}
