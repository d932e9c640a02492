/* soak: N allreduces of mixed sizes (8 B to 64 KiB, float32 sum) on every
 * rank, each result checked; resident memory is read from /proc after a
 * tenth of them and at the end, and must not grow by more than 4 MiB.
 *   soak [N] */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <rlxcoll/rlxcoll.h>

static long rss_kib(void) {
  FILE *f = fopen("/proc/self/status", "r");
  char line[256];
  long v = -1;
  while (f && fgets(line, sizeof line, f))
    if (sscanf(line, "VmRSS: %ld kB", &v) == 1)
      break;
  if (f)
    fclose(f);
  return v;
}

int main(int argc, char **argv) {
  long n = argc > 1 ? atol(argv[1]) : 100000;
  if (rlx_init(&argc, &argv) != RLX_OK) {
    fprintf(stderr, "soak: rlx_init: %s\n", rlx_errmsg());
    return 2;
  }
  rlx_comm_t *w = rlx_comm_world();
  int rank = rlx_comm_rank(w), size = rlx_comm_size(w);
  static const size_t counts[] = {2, 64, 1024, 16384, 7, 333};
  float *buf = malloc(sizeof(float) * 16384);
  long wrong = 0, early = 0;
  for (long i = 0; i < n; i++) {
    size_t c = counts[i % (sizeof counts / sizeof *counts)];
    for (size_t j = 0; j < c; j++)
      buf[j] = (float)((j + (size_t)i) % 7 + rank);
    int rc = rlx_allreduce(RLX_IN_PLACE, buf, c, RLX_FLOAT32, RLX_SUM, w);
    if (rc != RLX_OK) {
      fprintf(stderr, "soak: rank %d: allreduce %ld: %s\n", rank, i, rlx_errmsg());
      return 1;
    }
    for (size_t j = 0; j < c; j += 97)
      if (buf[j] != (float)(((j + (size_t)i) % 7) * size + size * (size - 1) / 2))
        wrong++;
    if (i == n / 10)
      early = rss_kib();
  }
  long late = rss_kib();
  int ok = wrong == 0 && early > 0 && late - early <= 4096;
  printf("soak: rank %d: %ld allreduces, %ld wrong, resident %ld KiB after a tenth, %ld KiB at "
         "the end: %s\n", rank, n, wrong, early, late, ok ? "PASS" : "FAIL");
  free(buf);
  rlx_finalize();
  return ok ? 0 : 1;
}
