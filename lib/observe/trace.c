/* RLX_TRACE: a timeline of this rank as Chrome trace-event JSON, which
 * Perfetto and chrome://tracing load. Events are formatted into a buffer
 * and written out in 1 MiB pieces, so recording costs a snprintf and a
 * mutex per span, never a system call per event. One event per line, each
 * ending in a comma, lets rlxrun merge the ranks' files line by line; the
 * track names come last, so a file cut short by a crash still holds every
 * event written before it. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "base/internal.h"
#include "observe/observe.h"

atomic_int rlx__trace_on;

#define FLUSH_AT (1u << 20)
#define TRACKS_MAX (RLX__TRACK_XFER0 + 16)

static struct {
  pthread_mutex_t mtx;
  FILE *f;
  char path[4096];
  int rank;
  int64_t base_ns; /* monotonic -> reference realtime */
  char *buf;
  size_t len, cap;
  unsigned char used[TRACKS_MAX];
  unsigned long events;
} tr = {.mtx = PTHREAD_MUTEX_INITIALIZER};

static void flush_locked(void) {
  if (tr.len > 0 && tr.f != NULL)
    fwrite(tr.buf, 1, tr.len, tr.f);
  tr.len = 0;
}

static void append_locked(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void append_locked(const char *fmt, ...) {
  va_list ap;
  for (;;) {
    size_t room = tr.cap - tr.len;
    va_start(ap, fmt);
    int n = vsnprintf(tr.buf + tr.len, room, fmt, ap);
    va_end(ap);
    if (n < 0)
      return;
    if ((size_t)n < room) {
      tr.len += (size_t)n;
      break;
    }
    flush_locked(); /* not enough room: write out what is there and retry */
    if ((size_t)n >= tr.cap)
      return; /* an event larger than the whole buffer: ours never are */
  }
  if (tr.len >= FLUSH_AT)
    flush_locked();
}

/* A program that exits without rlx_finalize still leaves a whole file. */
static void close_at_exit(void) { rlx__trace_close(); }

int rlx__trace_open(const char *prefix, int rank, int size, int64_t clock_offset_ns) {
  static int registered;
  (void)size;
  pthread_mutex_lock(&tr.mtx);
  if (!registered)
    registered = atexit(close_at_exit) == 0;
  snprintf(tr.path, sizeof(tr.path), "%s.%d", prefix, rank);
  tr.f = fopen(tr.path, "w");
  if (tr.f == NULL) {
    int e = errno;
    pthread_mutex_unlock(&tr.mtx);
    return rlx__err(RLX_ERR_ARG, "RLX_TRACE: cannot write %s.%d: %s", prefix, rank, strerror(e));
  }
  tr.cap = FLUSH_AT + 4096;
  tr.buf = malloc(tr.cap);
  if (tr.buf == NULL) {
    fclose(tr.f);
    tr.f = NULL;
    pthread_mutex_unlock(&tr.mtx);
    return rlx__err(RLX_ERR_NOMEM, "RLX_TRACE: no memory for the trace buffer");
  }
  tr.len = 0;
  tr.rank = rank;
  tr.events = 0;
  memset(tr.used, 0, sizeof(tr.used));
  /* Timestamps are taken on the monotonic clock (cheap, never steps) and
   * written on the reference realtime clock, so ranks of several hosts
   * line up. */
  struct timespec m;
  clock_gettime(CLOCK_MONOTONIC, &m);
  struct timespec rt;
  clock_gettime(CLOCK_REALTIME, &rt);
  uint64_t real = (uint64_t)rt.tv_sec * 1000000000u + (uint64_t)rt.tv_nsec;
  uint64_t mono = (uint64_t)m.tv_sec * 1000000000u + (uint64_t)m.tv_nsec;
  tr.base_ns = (int64_t)(real - mono) - clock_offset_ns;
  append_locked("{\"traceEvents\":[\n");
  atomic_store(&rlx__trace_on, 1);
  pthread_mutex_unlock(&tr.mtx);
  return RLX_OK;
}

void rlx__trace_span(int track, const char *cat, const char *name, uint64_t t0, uint64_t t1,
                     const char *args) {
  if (!RLX__TRACING())
    return;
  if (t1 < t0)
    t1 = t0;
  uint64_t dur = t1 - t0;
  pthread_mutex_lock(&tr.mtx);
  if (tr.f != NULL) {
    int64_t ts = (int64_t)t0 + tr.base_ns;
    if (track >= 0 && track < TRACKS_MAX)
      tr.used[track] = 1;
    append_locked("{\"ph\":\"X\",\"pid\":%d,\"tid\":%d,\"cat\":\"%s\",\"name\":\"%s\","
                  "\"ts\":%lld.%03lld,\"dur\":%llu.%03llu,\"args\":{%s}},\n",
                  tr.rank, track, cat, name, (long long)(ts / 1000), (long long)(ts % 1000),
                  (unsigned long long)(dur / 1000), (unsigned long long)(dur % 1000),
                  args ? args : "");
    tr.events++;
  }
  pthread_mutex_unlock(&tr.mtx);
}

static void track_name(int t, char *buf, size_t len) {
  if (t == RLX__TRACK_CALLS)
    snprintf(buf, len, "collectives");
  else if (t == RLX__TRACK_CONNECT)
    snprintf(buf, len, "connections");
  else
    snprintf(buf, len, "waits: lane %d, transfer %d", (t - RLX__TRACK_XFER0) / 4,
             (t - RLX__TRACK_XFER0) % 4);
}

void rlx__trace_close(void) {
  pthread_mutex_lock(&tr.mtx);
  if (tr.f == NULL) {
    pthread_mutex_unlock(&tr.mtx);
    return;
  }
  atomic_store(&rlx__trace_on, 0);
  char name[64];
  for (int t = 0; t < TRACKS_MAX; t++) {
    if (!tr.used[t] && t != RLX__TRACK_CALLS)
      continue;
    track_name(t, name, sizeof(name));
    append_locked("{\"ph\":\"M\",\"pid\":%d,\"tid\":%d,\"name\":\"thread_name\","
                  "\"args\":{\"name\":\"%s\"}},\n{\"ph\":\"M\",\"pid\":%d,\"tid\":%d,"
                  "\"name\":\"thread_sort_index\",\"args\":{\"sort_index\":%d}},\n",
                  tr.rank, t, name, tr.rank, t, t);
  }
  append_locked("{\"ph\":\"M\",\"pid\":%d,\"tid\":0,\"name\":\"process_sort_index\","
                "\"args\":{\"sort_index\":%d}},\n",
                tr.rank, tr.rank);
  /* The last event has no comma after it. */
  append_locked("{\"ph\":\"M\",\"pid\":%d,\"tid\":0,\"name\":\"process_name\","
                "\"args\":{\"name\":\"rank %d\"}}\n],\"displayTimeUnit\":\"ms\"}\n",
                tr.rank, tr.rank);
  flush_locked();
  if (fclose(tr.f) != 0)
    rlx__warn("RLX_TRACE: writing %s failed: %s", tr.path, strerror(errno));
  else
    rlx__info("trace: %lu events in %s", tr.events, tr.path);
  tr.f = NULL;
  free(tr.buf);
  tr.buf = NULL;
  tr.cap = tr.len = 0;
  pthread_mutex_unlock(&tr.mtx);
}
