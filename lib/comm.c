/* Communicator queries: the world communicator, rank, size, leader. */
#include "runtime.h"

rlx_comm_t *rlx_comm_world(void) { return rlx__rt.initialized ? &rlx__rt.world : NULL; }

int rlx_comm_rank(const rlx_comm_t *c) {
  if (c == NULL)
    return rlx__err(RLX_ERR_ARG, "rlx_comm_rank: communicator is NULL");
  return c->rank;
}

int rlx_comm_size(const rlx_comm_t *c) {
  if (c == NULL)
    return rlx__err(RLX_ERR_ARG, "rlx_comm_size: communicator is NULL");
  return c->size;
}

int rlx_comm_leader(const rlx_comm_t *c) {
  if (c == NULL)
    return rlx__err(RLX_ERR_ARG, "rlx_comm_leader: communicator is NULL");
  return c->leader;
}
