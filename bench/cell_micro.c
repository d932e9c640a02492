/* The shared segment's small-call protocol alone (lib/coll/shm_group.h's
 * cells), between two forked processes, with no library around it: a
 * "sender" posts 8 bytes and an arrival into its cell of each step, a
 * "root" posts its own arrival and reads the sender's cell (a 2-rank
 * gather's steps), the sender up to CELLS - 1 steps ahead. Each side may
 * do other work per step (stores to its own memory, or arithmetic), as
 * a call around the protocol does. It measures what the machine makes a
 * step cost, to tell the protocol's lines from the call's own work
 * (bench/results/small-gather-stalls-2core-2026-12-04.txt).
 *   cell_micro [--stores N] [--alu N] [--side root|sender|both]
 *              [--cells 8..64] [--mfence] [--prefetch D] [--steps N] [--solo]
 *              [--own-first] [--slack] [--evict]
 * prints us per step. --solo: the work alone, in one process, no protocol. --mfence: the sender fences after each arrival (its
 * store's line then travels before it goes on); --prefetch D: the root
 * prefetches the sender's cell D steps ahead after each read;
 * --own-first: each side asks for its next cell's line for writing
 * (prefetchw) before its work; --slack: a sender out of room waits until
 * the root is half the cells behind, not one; --evict: the root flushes
 * the sender's cell from the caches once read (clflushopt). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MAX_CELLS 64
struct cell {
  _Alignas(128) _Atomic uint64_t arrive;
  uint64_t first, sig[2];
  unsigned char small[96];
};
struct line {
  struct cell c[MAX_CELLS];
};

static uint64_t own[1024]; /* this process's memory, for --stores */
static volatile uint64_t sink;

static void stores(int n) {
  for (int i = 0; i < n; i++)
    ((volatile uint64_t *)own)[i & 1023] = (uint64_t)i;
}

static void alu(int n) { /* a dependent chain: n multiplies and adds */
  uint64_t x = 1;
  for (int i = 0; i < n; i++)
    x = x * 6364136223846793005ull + 1442695040888963407ull;
  sink = x;
}

static double now_us(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec * 1e6 + (double)t.tv_nsec / 1e3;
}

int main(int argc, char **argv) {
  long steps = 2000000;
  int n_stores = 0, n_alu = 0, sides = 3, cells = 8, fence = 0, ahead = 0, solo = 0;
  int own_first = 0, slack = 0, evict = 0;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (strcmp(a, "--mfence") == 0) {
      fence = 1;
    } else if (strcmp(a, "--solo") == 0) {
      solo = 1;
    } else if (strcmp(a, "--own-first") == 0) {
      own_first = 1;
    } else if (strcmp(a, "--slack") == 0) {
      slack = 1;
    } else if (strcmp(a, "--evict") == 0) {
      evict = 1;
    } else if (v == NULL) {
      fprintf(stderr, "cell_micro: %s: unknown, or needs a value\n", a);
      return 2;
    } else if (strcmp(a, "--stores") == 0) {
      n_stores = atoi(v), i++;
    } else if (strcmp(a, "--alu") == 0) {
      n_alu = atoi(v), i++;
    } else if (strcmp(a, "--side") == 0) {
      sides = strcmp(v, "root") == 0 ? 1 : strcmp(v, "sender") == 0 ? 2 : 3, i++;
    } else if (strcmp(a, "--cells") == 0) {
      cells = atoi(v), i++;
    } else if (strcmp(a, "--prefetch") == 0) {
      ahead = atoi(v), i++;
    } else if (strcmp(a, "--steps") == 0) {
      steps = atol(v), i++;
    } else {
      fprintf(stderr, "cell_micro: unknown option %s\n", a);
      return 2;
    }
  }
  if (cells < 2 || cells > MAX_CELLS || (cells & (cells - 1)) != 0 || steps < 1) {
    fprintf(stderr, "cell_micro: --cells is a power of two from 2 to %d; --steps >= 1\n", MAX_CELLS);
    return 2;
  }
  if (solo) {
    double t0 = now_us();
    for (long s = 0; s < steps; s++) {
      alu(n_alu);
      stores(n_stores);
    }
    printf("solo stores %d alu %d: %.4f us/step\n", n_stores, n_alu, (now_us() - t0) / (double)steps);
    return 0;
  }
  uint64_t mask = (uint64_t)cells - 1;
  struct line *l = mmap(NULL, sizeof(struct line) * 2, PROT_READ | PROT_WRITE,
                        MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (l == MAP_FAILED) {
    perror("cell_micro: mmap");
    return 1;
  }
  memset(l, 0, sizeof(struct line) * 2);
  pid_t child = fork();
  if (child < 0) {
    perror("cell_micro: fork");
    return 1;
  }
  int me = child == 0 ? 1 : 0; /* 0 the root, 1 the sender */
  if (!(sides & (me == 0 ? 1 : 2)))
    n_stores = n_alu = 0;
  unsigned char payload[8] = {1};
  uint64_t min_seen = 0;
  double t0 = now_us();
  for (uint64_t s = 1; s <= (uint64_t)steps; s++) {
    if (own_first)
      __builtin_prefetch(&l[me].c[s & mask], 1, 3);
    alu(n_alu);
    stores(n_stores);
    if (me == 1) {
      uint64_t need = s > (uint64_t)cells ? s - (uint64_t)cells + 1 : 0;
      if (slack && min_seen < need)
        need = need + (uint64_t)cells / 2 < s ? need + (uint64_t)cells / 2 : s - 1;
      while (min_seen < need) {
        if (atomic_load_explicit(&l[0].c[need & mask].arrive, memory_order_acquire) >= need)
          min_seen = need;
        else
          __builtin_ia32_pause();
      }
      memcpy(l[1].c[s & mask].small, payload, sizeof(payload));
      atomic_store_explicit(&l[1].c[s & mask].arrive, s, memory_order_release);
      if (fence)
        atomic_thread_fence(memory_order_seq_cst);
    } else {
      atomic_store_explicit(&l[0].c[s & mask].arrive, s, memory_order_release);
      while (atomic_load_explicit(&l[1].c[s & mask].arrive, memory_order_acquire) < s)
        __builtin_ia32_pause();
      memcpy(payload, l[1].c[s & mask].small, sizeof(payload));
      if (evict)
        __asm__ volatile("clflushopt %0" : "+m"(l[1].c[s & mask]));
      if (ahead > 0)
        __builtin_prefetch(&l[1].c[(s + (uint64_t)ahead) & mask], 0, 3);
    }
  }
  double t = now_us() - t0;
  if (me == 1)
    return 0;
  waitpid(child, NULL, 0);
  printf("cells %d stores %d alu %d side %s%s prefetch %d%s%s%s: %.4f us/step\n", cells, n_stores,
         n_alu, sides == 1 ? "root" : sides == 2 ? "sender" : "both", fence ? " mfence" : "", ahead,
         own_first ? " own-first" : "", slack ? " slack" : "", evict ? " evict" : "",
         t / (double)steps);
  return 0;
}
