/* Asking for a cache line ahead of writing it. A store to a line another
 * core holds waits in the store buffer for the line, and x86's order
 * keeps every later store behind it: a few hundred stores later (a call's
 * own stack) the core stalls for the cross-core round trip. Asked for
 * early with the right to write, the line travels meanwhile. */
#ifndef RLX_PREFETCH_H
#define RLX_PREFETCH_H

/* The line at p, asked for to be written, without waiting for it. GCC's
 * __builtin_prefetch for writing is a prefetch for reading on x86 unless
 * built for a CPU with PREFETCHW, which every x86-64 CPU of the last
 * decade has (older ones take the instruction as a no-op). */
static inline void rlx__prefetch_write(const void *p) {
#if defined(__x86_64__) || defined(__i386__)
  __asm__ volatile("prefetchw %0" ::"m"(*(const char *)p));
#else
  __builtin_prefetch(p, 1, 3);
#endif
}

#endif
