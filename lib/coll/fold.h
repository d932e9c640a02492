/* The non-power-of-two fold shared by recursive doubling and halving-
 * doubling: of the first 2r ranks (r = p - p'), each even rank sends its
 * whole vector to the odd rank above, which reduces it (the lower rank's
 * vector first); every other rank just moves its input into place. The
 * unfold sends the result back down. */
#ifndef RLX_FOLD_H
#define RLX_FOLD_H

#include "coll.h"

static inline void rlx__fold_round(struct rlx__op *op, long rem, struct rlx__round *r) {
  size_t bytes = op->count * op->esize;
  int in_fold = op->rank < 2 * rem;
  if (in_fold && op->rank % 2 == 0) {
    r->n = 1;
    r->x[0].send = 1;
    r->x[0].peer = op->rank + 1;
    r->x[0].buf = (void *)op->src;
    r->x[0].len = bytes;
  } else if (in_fold) {
    r->n = 1;
    r->x[0].send = 0;
    r->x[0].peer = op->rank - 1;
    r->x[0].buf = op->tmp;
    r->x[0].len = bytes;
    r->red_out = op->dst;
    r->red_a = op->tmp;
    r->red_b = op->src;
    r->red_count = op->count;
  } else if (op->src != op->dst) {
    r->copy_dst = op->dst;
    r->copy_src = op->src;
    r->copy_len = bytes;
  }
}

static inline void rlx__unfold_round(struct rlx__op *op, long rem, struct rlx__round *r) {
  if (op->rank < 2 * rem) {
    r->n = 1;
    r->x[0].send = op->rank % 2;
    r->x[0].peer = op->rank % 2 ? op->rank - 1 : op->rank + 1;
    r->x[0].buf = op->dst;
    r->x[0].len = op->count * op->esize;
  }
}

#endif
