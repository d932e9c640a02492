/* Logging to stderr, only at the level RLX_LOG asks for (off by default):
 * the library prints nothing unless asked. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "base/internal.h"

int rlx__log_level = RLX__LOG_OFF;
int rlx__log_rank = -1;

static const char *level_names[] = {"off", "error", "warn", "info", "debug", "trace"};

void rlx__log(int level, const char *fmt, ...) {
  char line[1024];
  va_list ap;
  int n;
  if (level < 0 || level > RLX__LOG_TRACE)
    level = RLX__LOG_ERROR;
  if (rlx__log_rank >= 0)
    n = snprintf(line, sizeof(line), "rlxcoll[%d] %s: ", rlx__log_rank, level_names[level]);
  else
    n = snprintf(line, sizeof(line), "rlxcoll %s: ", level_names[level]);
  va_start(ap, fmt);
  vsnprintf(line + n, sizeof(line) - (size_t)n, fmt, ap);
  va_end(ap);
  /* One fprintf per line, so lines from threads do not interleave. */
  fprintf(stderr, "%s\n", line);
}

void rlx__log_level_from_env(void) {
  const char *s = getenv("RLX_LOG");
  for (int i = 0; s && i <= RLX__LOG_TRACE; i++)
    if (!strcmp(s, level_names[i]))
      rlx__log_level = i;
}

static uint64_t clock_ns(clockid_t id) {
  struct timespec ts;
  clock_gettime(id, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* A tick's time (CLOCK_MONOTONIC_COARSE: 1-4 ms resolution, a tenth of a
 * precise read's cost, 3 against 23 ns on the 2-core test machine): for
 * the liveness stamps every frame makes (heartbeat.c's periods are 1 and
 * 10 s). Never later than a rlx__now_ns() read after it. */
uint64_t rlx__tick_ns(void) { return clock_ns(CLOCK_MONOTONIC_COARSE); }

uint64_t rlx__now_ns(void) { return clock_ns(CLOCK_MONOTONIC); }

/* The tick's time plus its resolution: never earlier than rlx__now_ns()
 * read at the same moment, at most a tick later, at a tick's cost. A
 * deadline counted from it passes no sooner than asked (a message's:
 * messages.c, where a precise read was a tenth of a small send). */
static _Atomic uint64_t tick_res; /* (0: not asked yet; the answer is the same for every thread) */

__attribute__((noinline, cold)) static uint64_t tick_res_asked(void) {
  struct timespec ts;
  uint64_t r = clock_getres(CLOCK_MONOTONIC_COARSE, &ts) == 0
                   ? (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec : 10000000u;
  atomic_store_explicit(&tick_res, r ? r : 1, memory_order_relaxed);
  return r ? r : 1;
}

uint64_t rlx__tick_ceil_ns(void) {
  uint64_t r = atomic_load_explicit(&tick_res, memory_order_relaxed);
  return rlx__tick_ns() + (r != 0 ? r : tick_res_asked());
}
