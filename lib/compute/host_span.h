/* Host time between two points, summed over many passes: what
 * RLX_COMPUTE_PROFILE (1 or host) reports for the parts of a shared step the
 * device's own events cannot see (who waits for whom on the host). */
#ifndef RLX_COMPUTE_HOST_SPAN_H
#define RLX_COMPUTE_HOST_SPAN_H

#include <stdint.h>

struct rlx__host_span {
  long n;
  double sum_ns, max_ns;
};

static inline void rlx__host_span_add(struct rlx__host_span *s, uint64_t from, uint64_t to) {
  double d = to > from ? (double)(to - from) : 0.0;
  s->n++;
  s->sum_ns += d;
  if (d > s->max_ns)
    s->max_ns = d;
}

/* A part that recurs: its spans (in), and the spans from one's end to the
 * next's start (out). */
struct rlx__host_turns {
  uint64_t ended; /* the last one's end (0: none yet) */
  struct rlx__host_span in, out;
};

static inline void rlx__host_turn(struct rlx__host_turns *t, uint64_t began, uint64_t ended) {
  if (t->ended)
    rlx__host_span_add(&t->out, t->ended, began);
  rlx__host_span_add(&t->in, began, ended);
  t->ended = ended;
}

/* Mean in microseconds (0 when nothing was added). */
static inline double rlx__host_span_us(const struct rlx__host_span *s) {
  return s->n ? s->sum_ns / (double)s->n / 1e3 : 0.0;
}

#endif
