/* For the tests that need a rank stopped (SIGSTOP) while another acts on
 * it, and know for certain that it is stopped first: a rank that stopped
 * itself after a fork did so late (tens of ms under AddressSanitizer),
 * and its progress thread took what came meanwhile (fault_check
 * revokeref, p2p_check stopref; CI on 72ee5f8 and 69b87c5). Included by
 * each test program (static functions, no library of its own). */
#ifndef RLX_TEST_STOP_WATCH_H
#define RLX_TEST_STOP_WATCH_H

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* Whether process pid is stopped (its state in /proc/pid/stat is T). */
static int is_stopped(int pid) {
  char path[64], buf[512];
  snprintf(path, sizeof path, "/proc/%d/stat", pid);
  FILE *f = fopen(path, "r");
  size_t got = f ? fread(buf, 1, sizeof buf - 1, f) : 0;
  if (f)
    fclose(f);
  buf[got] = '\0';
  const char *p = strrchr(buf, ')');
  return p != NULL && p[1] == ' ' && p[2] == 'T';
}

/* Wait (polling every ms) until pid is stopped, at most limit seconds:
 * whether it is. */
static int wait_stopped(int pid, double limit) {
  struct timespec tick = {0, 1000 * 1000};
  for (long ms = 0; ms < (long)(limit * 1000) && !is_stopped(pid); ms++)
    nanosleep(&tick, NULL);
  return is_stopped(pid);
}

/* This process stopped by a child of its own for `stop`, then resumed;
 * returns once it runs again (it waits on a pipe for the child's word
 * meanwhile): 0, or -1 when no pipe or child could be made. */
static int stopped_by_child(struct timespec stop) {
  pid_t self = getpid();
  int pp[2];
  if (pipe(pp) != 0)
    return -1;
  pid_t child = fork();
  if (child == 0) {
    kill(self, SIGSTOP);
    nanosleep(&stop, NULL);
    kill(self, SIGCONT);
    (void)!write(pp[1], "x", 1);
    _exit(0);
  }
  char c;
  while (child > 0 && read(pp[0], &c, 1) < 0 && errno == EINTR)
    ;
  close(pp[0]);
  close(pp[1]);
  return child > 0 ? 0 : -1;
}

#endif
