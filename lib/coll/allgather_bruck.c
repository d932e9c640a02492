/* Allgather by Bruck's algorithm, for any rank count: rank r gathers into
 * scratch in rotated order (its own block first); in step i it sends the
 * first min(2^i, p-2^i) blocks it has to r-2^i and receives as many from
 * r+2^i after them; then it rotates the scratch into place.
 * Cost: ceil(lg p)·α + n(p-1)/p·β and a local copy of n: the fewest
 * rounds at every p, where recursive doubling needs a power of two and
 * the ring takes p-1 (the agreement of rlx_comm_shrink and rlx_comm_grow,
 * small allgathers on 3, 5, 6, 7, 9... ranks). */
#include "coll.h"

static size_t setup(struct rlx__op *op) {
  op->st.rounds.steps = rlx__ceil_lg(op->size);
  return (size_t)op->size * op->count * op->esize;
}

static int round_fn(struct rlx__op *op, int lane, int k, struct rlx__round *r) {
  int p = op->size, me = op->rank;
  long steps = op->st.rounds.steps;
  size_t block = op->count * op->esize;
  char *tmp = op->tmp, *dst = op->dst;
  (void)lane;
  if (k == 0) { /* our own block first */
    r->copy_dst = tmp;
    r->copy_src = op->src;
    r->copy_len = block;
    return 1;
  }
  if (k <= steps) {
    int dist = 1 << (k - 1), cnt = dist < p - dist ? dist : p - dist;
    r->n = 2;
    r->x[0].send = 1;
    r->x[0].peer = (me - dist + p) % p;
    r->x[0].buf = tmp;
    r->x[0].len = (size_t)cnt * block;
    r->x[1].send = 0;
    r->x[1].peer = (me + dist) % p;
    r->x[1].buf = tmp + (size_t)dist * block;
    r->x[1].len = (size_t)cnt * block;
    return 1;
  }
  /* scratch block i is rank (me + i) mod p's: blocks 0..p-me-1 go to
   * me.., then the rest to 0..me-1 */
  if (k == steps + 1) {
    r->copy_dst = dst + (size_t)me * block;
    r->copy_src = tmp;
    r->copy_len = (size_t)(p - me) * block;
    return 1;
  }
  if (k == steps + 2 && me > 0) {
    r->copy_dst = dst;
    r->copy_src = tmp + (size_t)(p - me) * block;
    r->copy_len = (size_t)me * block;
    return 1;
  }
  return 0;
}

const struct rlx__algo rlx__allgather_bruck = {
    .name = "bruck",
    .alias = NULL,
    .setup = setup,
    .round = round_fn,
};
