/* tcp_timeline.so: where a small call over a socket spends its time,
 * seen from the syscalls. Preloaded into a program (LD_PRELOAD), it
 * timestamps every send()/writev() and recv() (entry and return) with
 * the TSC (x86; elsewhere the monotonic clock) and, at exit, writes
 * them to $TCP_TIMELINE.<pid>, with the ticks' rate measured against
 * CLOCK_MONOTONIC over the run.
 * bench/tcp_timeline.py reads the files: per call, the sending syscall,
 * the wait from its return until the peer's data has been read, and the
 * program's own time from that read to its next send (for rlxcoll: the
 * library's whole path, call end to next call's frame on the wire).
 *   LD_PRELOAD=build/bench/.libs/tcp_timeline.so TCP_TIMELINE=/tmp/tl \
 *     RLX_TRANSPORT=tcp rlxrun -n 2 rlx-bench -b 8 -e 8 -n 100000 -c 0
 *   python3 bench/tcp_timeline.py /tmp/tl.*
 * (bench/tcp_timeline.sh runs it on rlxcoll and on bench/tcp_floor.)
 * Holds the first 4 million events of each process (~36 MB). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>
#if defined(__x86_64__) || defined(__i386__)
#include <x86intrin.h>
#endif

#define EVENTS_MAX 4000000L
static uint64_t *ts;
static char *ev;
static long nev;
static uint64_t tsc0, ns0;

static uint64_t mono_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

/* the TSC, or elsewhere the monotonic clock (dearer, still a timeline) */
static uint64_t ticks(void) {
#if defined(__x86_64__) || defined(__i386__)
  return __rdtsc();
#else
  return mono_ns();
#endif
}

__attribute__((constructor)) static void start(void) {
  if (getenv("TCP_TIMELINE") == NULL)
    return;
  ts = malloc(EVENTS_MAX * sizeof(*ts));
  ev = malloc(EVENTS_MAX);
  tsc0 = ticks();
  ns0 = mono_ns();
}

static void note(char e) {
  if (ts != NULL && nev < EVENTS_MAX) {
    ts[nev] = ticks();
    ev[nev++] = e;
  }
}

/* 'w' ... 'W': a send; 'r' ... 'R' a recv that read bytes, 'r' ... 'e'
 * one that did not */
ssize_t writev(int fd, const struct iovec *v, int n) {
  static ssize_t (*real)(int, const struct iovec *, int);
  if (real == NULL)
    real = (ssize_t(*)(int, const struct iovec *, int))dlsym(RTLD_NEXT, "writev");
  note('w');
  ssize_t r = real(fd, v, n);
  note('W');
  return r;
}

ssize_t send(int fd, const void *b, size_t len, int flags) {
  static ssize_t (*real)(int, const void *, size_t, int);
  if (real == NULL)
    real = (ssize_t(*)(int, const void *, size_t, int))dlsym(RTLD_NEXT, "send");
  note('w');
  ssize_t r = real(fd, b, len, flags);
  note('W');
  return r;
}

ssize_t recv(int fd, void *b, size_t len, int flags) {
  static ssize_t (*real)(int, void *, size_t, int);
  if (real == NULL)
    real = (ssize_t(*)(int, void *, size_t, int))dlsym(RTLD_NEXT, "recv");
  note('r');
  ssize_t r = real(fd, b, len, flags);
  note(r > 0 ? 'R' : 'e');
  return r;
}

__attribute__((destructor)) static void dump(void) {
  const char *base = getenv("TCP_TIMELINE");
  if (ts == NULL || base == NULL || nev == 0)
    return;
  double ticks_per_us = (double)(ticks() - tsc0) / ((double)(mono_ns() - ns0) / 1000.0);
  char path[512];
  snprintf(path, sizeof(path), "%s.%d", base, (int)getpid());
  FILE *f = fopen(path, "w");
  if (f == NULL)
    return;
  fprintf(f, "# tsc ticks per us %.3f\n", ticks_per_us);
  for (long i = 0; i < nev; i++)
    fprintf(f, "%c %llu\n", ev[i], (unsigned long long)(ts[i] - tsc0));
  fclose(f);
}
