/* hello: every rank says who it is, then the world sums its ranks. */
#include <stdio.h>
#include <rlxcoll/rlxcoll.h>

int main(int argc, char **argv) {
  int rc = rlx_init(&argc, &argv);
  if (rc != RLX_OK) {
    fprintf(stderr, "rlx_init: %s: %s\n", rlx_strerror(rc), rlx_errmsg());
    return 1;
  }
  rlx_comm_t *world = rlx_comm_world();
  int rank = rlx_comm_rank(world), size = rlx_comm_size(world);
  long sum = rank, want = (long)size * (size - 1) / 2;
  rc = rlx_allreduce(RLX_IN_PLACE, &sum, 1, RLX_INT64, RLX_SUM, world);
  if (rc != RLX_OK) {
    fprintf(stderr, "rlx_allreduce: %s: %s\n", rlx_strerror(rc), rlx_errmsg());
    rlx_finalize();
    return 1;
  }
  printf("hello from rank %d of %d (leader %d): sum of ranks = %ld%s\n", rank, size,
         rlx_comm_leader(world), sum, sum == want ? "" : " WRONG");
  rlx_finalize();
  return sum == want ? 0 : 1;
}
