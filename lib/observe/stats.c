/* RLX_STATS: per collective, the calls, bytes, time spent inside and
 * failures, and which algorithm ran in each size band; printed at
 * rlx_finalize as lines rlxrun --stats turns into a table. Counting costs
 * one mutex per call, and only when asked for. */
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include "base/internal.h"
#include "observe/observe.h"

atomic_int rlx__stats_on;

#define BANDS 5
#define ALGOS 4
static const size_t band_top[BANDS - 1] = {1u << 10, 64u << 10, 1u << 20, 16u << 20};
static const char *const band_name[BANDS] = {"<=1KiB", "<=64KiB", "<=1MiB", "<=16MiB", ">16MiB"};

struct per_kind {
  const char *name;
  unsigned long long calls, bytes, ns, errors;
  struct {
    const char *algo;
    unsigned long long calls;
  } used[BANDS][ALGOS];
};

static struct {
  pthread_mutex_t mtx;
  struct per_kind k[RLX__STATS_KINDS];
} st = {.mtx = PTHREAD_MUTEX_INITIALIZER};

void rlx__stats_reset(void) {
  pthread_mutex_lock(&st.mtx);
  memset(st.k, 0, sizeof(st.k));
  pthread_mutex_unlock(&st.mtx);
}

void rlx__stats_call(int kind, const char *name, size_t bytes, const char *algo, uint64_t ns,
                     int status) {
  if (kind < 0 || kind >= RLX__STATS_KINDS)
    return;
  int b = 0;
  while (b < BANDS - 1 && bytes > band_top[b])
    b++;
  pthread_mutex_lock(&st.mtx);
  struct per_kind *k = &st.k[kind];
  k->name = name;
  k->calls++;
  k->bytes += bytes;
  k->ns += ns;
  if (status != RLX_OK)
    k->errors++;
  for (int a = 0; algo && a < ALGOS; a++) {
    if (k->used[b][a].algo == NULL)
      k->used[b][a].algo = algo;
    if (k->used[b][a].algo == algo || strcmp(k->used[b][a].algo, algo) == 0) {
      k->used[b][a].calls++;
      break;
    }
  }
  pthread_mutex_unlock(&st.mtx);
}

void rlx__stats_print(int rank, const int *conns, int nconns, unsigned long retrans,
                      unsigned long strangers, unsigned long corrupt) {
  pthread_mutex_lock(&st.mtx);
  for (int kind = 0; kind < RLX__STATS_KINDS; kind++) {
    const struct per_kind *k = &st.k[kind];
    if (k->calls == 0)
      continue;
    char bands[512] = "";
    size_t used = 0;
    for (int b = 0; b < BANDS; b++) {
      for (int a = 0; a < ALGOS && k->used[b][a].algo; a++) {
        int n = snprintf(bands + used, sizeof(bands) - used, "%s%s%s%s*%llu",
                         used && a == 0 ? ";" : "", a == 0 ? band_name[b] : ",",
                         a == 0 ? ":" : "", k->used[b][a].algo, k->used[b][a].calls);
        if (n < 0 || (size_t)n >= sizeof(bands) - used)
          break;
        used += (size_t)n;
      }
    }
    fprintf(stderr, "rlxcoll[%d] stats\t%s\t%llu\t%llu\t%.6f\t%llu\t%s\n", rank, k->name,
            k->calls, k->bytes, (double)k->ns / 1e9, k->errors, bands[0] ? bands : "-");
  }
  char line[256];
  size_t used = (size_t)snprintf(line, sizeof(line), "rlxcoll[%d] stats-conn", rank);
  for (int i = 0; i < nconns && used < sizeof(line); i++)
    used += (size_t)snprintf(line + used, sizeof(line) - used, "\t%d", conns[i]);
  if (used < sizeof(line))
    snprintf(line + used, sizeof(line) - used, "\t%lu\t%lu\t%lu\n", retrans, strangers, corrupt);
  fputs(line, stderr); /* one write: lines of ranks sharing a stderr stay whole */
  fflush(stderr);
  pthread_mutex_unlock(&st.mtx);
}
