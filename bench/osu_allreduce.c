/* OSU-style allreduce latency sweep, float32 sum, 8 B to 64 MiB. The same
 * program logic is built twice: against rlxcoll (default) and against MPI
 * (-DUSE_MPI), so the two are compared on identical work.
 *   osu_allreduce [max_bytes [min_bytes]]
 * Prints "bytes avg_us" per size: the slowest rank's average per call. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "osu_lib.h"

#ifdef USE_MPI
static void allreduce_f32(const float *s, float *r, size_t n) {
  MPI_Allreduce(s, r, (int)n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
}
#else
static void allreduce_f32(const float *s, float *r, size_t n) {
  if (rlx_allreduce(s, r, n, RLX_FLOAT32, RLX_SUM, rlx_comm_world()) != RLX_OK) {
    fprintf(stderr, "allreduce failed: %s\n", rlx_errmsg());
    exit(1);
  }
}
#endif

int main(int argc, char **argv) {
  if (init(&argc, &argv) != 0) {
    fprintf(stderr, "init failed\n");
    return 1;
  }
  size_t max_bytes = argc > 1 ? strtoull(argv[1], NULL, 10) : (64u << 20);
  size_t min_bytes = argc > 2 ? strtoull(argv[2], NULL, 10) : 8; /* a power of two */
  int rank = osu_rank;
  float *s = malloc(max_bytes), *r = malloc(max_bytes);
  for (size_t i = 0; i < max_bytes / 4; i++)
    s[i] = (float)(i % 1000) * 0.5f;
  /* The job's first ~0.1 s runs slower on either library (ranks still
   * settling: the first size measured came out 20-40% slower whatever it
   * was, 2026-12-01): warm up (~0.2 s) before any size is timed. */
  for (int i = 0; i < 10000; i++) /* (8 B each; a count, not a time: alike on every rank) */
    allreduce_f32(s, r, 2);
  barrier();
  for (size_t bytes = min_bytes; bytes <= max_bytes; bytes *= 2) {
    size_t n = bytes / 4;
    /* Enough calls for ~0.2 s of data movement, at least 5 and at most 2000. */
    long iters = (long)((256u << 20) / bytes);
    if (iters > 2000)
      iters = 2000;
    if (iters < 5)
      iters = 5;
    long warm = iters / 10 + 2;
    for (long i = 0; i < warm; i++)
      allreduce_f32(s, r, n);
    barrier();
    double t0 = now_us();
    for (long i = 0; i < iters; i++)
      allreduce_f32(s, r, n);
    double avg = (now_us() - t0) / (double)iters;
    avg = max_double(avg);
    if (rank == 0)
      printf("%s %zu %.2f\n", LIB, bytes, avg);
    fflush(stdout);
  }
  free(s);
  free(r);
  fini();
  return 0;
}
