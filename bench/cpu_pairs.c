/* cpu_pairs: which CPUs slow each other down. A virtual machine may show
 * every vCPU as a core of its own while the host runs two of them on the
 * two hyperthreads of one physical core; a thread on such a "spare" CPU
 * then takes from the rank beside it. For CPU 0 (or argv[1]) against each
 * other CPU k: the rate of a floating-point loop on CPU 0 alone, and while
 * a thread on CPU k runs the same loop; prints "k rate_ratio" (1.00: no
 * effect; ~0.5-0.7: k shares CPU 0's physical core).
 *   cpu_pairs [cpu, default 0] [ms per reading, default 200]
 * (make bench/cpu_pairs; results: bench/results/overlap-h200-2026-12-01.txt) */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static atomic_int stop;

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec / 1e9;
}

static int pin(int cpu) {
  cpu_set_t s;
  CPU_ZERO(&s);
  CPU_SET(cpu, &s);
  return pthread_setaffinity_np(pthread_self(), sizeof s, &s);
}

/* Passes of updates on a 64 KiB array until stop (or for secs if > 0). */
static double loop(double secs) {
  static _Thread_local float a[16384];
  double t0 = now_s(), passes = 0;
  while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
    for (int i = 0; i < 16384; i++)
      a[i] = a[i] * 0.999f + 0.001f;
    passes++;
    if (secs > 0 && now_s() - t0 >= secs)
      break;
  }
  return passes / (now_s() - t0);
}

static void *other(void *arg) {
  if (pin((int)(long)arg) != 0)
    return NULL;
  loop(0);
  return NULL;
}

int main(int argc, char **argv) {
  int me = argc > 1 ? atoi(argv[1]) : 0;
  double secs = (argc > 2 ? atof(argv[2]) : 200) / 1000;
  long n = sysconf(_SC_NPROCESSORS_ONLN);
  if (me < 0 || me >= n || secs <= 0 || pin(me) != 0) {
    fprintf(stderr, "usage: cpu_pairs [cpu 0..%ld] [ms > 0]\n", n - 1);
    return 2;
  }
  loop(secs); /* warm */
  double alone = loop(secs);
  printf("# cpu %d alone: %.0f passes/s; with a thread running the same loop on cpu k:\n", me, alone);
  for (long k = 0; k < n; k++) {
    if (k == me)
      continue;
    pthread_t t;
    atomic_store(&stop, 0);
    if (pthread_create(&t, NULL, other, (void *)k) != 0)
      return 1;
    usleep(20000);
    double with = loop(secs);
    atomic_store(&stop, 1);
    pthread_join(t, NULL);
    atomic_store(&stop, 0);
    double again = loop(secs / 2); /* the reading's drift */
    printf("%ld %.2f (alone again %.2f)\n", k, with / alone, again / alone);
    fflush(stdout);
  }
  return 0;
}
