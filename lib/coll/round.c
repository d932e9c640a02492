/* The local work that ends a round (copy, reduce, average), the same for
 * the executor (exec.c) and for tests/unit/test_algos.c's in-process one. */
#include <string.h>
#include "coll.h"

void rlx__round_work(const struct rlx__op *op, const struct rlx__round *r) {
  if (r->copy_len)
    memmove(r->copy_dst, r->copy_src, r->copy_len);
  if (r->red_count)
    rlx__reduce(r->red_out, r->red_a, r->red_b, r->red_count, op->dt, op->rop);
  if (r->avg_count)
    rlx__avg_finish(r->avg_buf, r->avg_count, op->dt, op->size);
}
