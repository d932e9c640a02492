/* Communicators made from one: rlx_comm_split (an allgather of every
 * member's color and key on the parent), rlx_comm_dup and the library's
 * own copies. A new communicator's id is derived from its parent's id,
 * the parent's count of children and the color, so every member computes
 * the same id without a message, and frames of different communicators
 * never match. Above the collectives (a split is one), beside comm.c. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "runtime/runtime.h"

/* A new communicator into *out, owning world (freed when out of memory). */
static int make_comm(uint32_t id, int *world, int n, int rank, rlx_comm_t **out) {
  if ((*out = rlx__comm_new(id, world, n, rank)) == NULL) {
    free(world);
    return rlx__err(RLX_ERR_NOMEM, "no memory for a communicator");
  }
  return RLX_OK;
}

struct member {
  int color, key, rank;
};

static int by_key(const void *a, const void *b) {
  const struct member *x = a, *y = b;
  if (x->key != y->key)
    return x->key < y->key ? -1 : 1;
  return x->rank < y->rank ? -1 : x->rank > y->rank;
}

/* The parent's count of children, which a new communicator's id and
 * rlx_comm_shrink's derive from: every split and dup counts one as it
 * starts, whatever becomes of it, so that the members still agree after
 * one that failed on some of them and not on others. */
static uint32_t next_child(rlx_comm_t *c) {
  rlx__comm_lock(c);
  uint32_t child = ++c->children;
  rlx__comm_unlock(c);
  return child;
}

static int copy_as(rlx_comm_t *c, uint32_t child, uint32_t mix, rlx_comm_t **out) {
  int *world = malloc(sizeof(int) * (size_t)c->size);
  if (world == NULL)
    return rlx__err(RLX_ERR_NOMEM, "no memory for a communicator");
  memcpy(world, c->world, sizeof(int) * (size_t)c->size);
  return make_comm(rlx__id_mix(rlx__id_mix(c->id, child), mix), world, c->size, c->rank, out);
}

int rlx_comm_split(rlx_comm_t *c, int color, int key, rlx_comm_t **out) {
  int rc;
  if (out == NULL)
    return rlx__err(RLX_ERR_ARG, "rlx_comm_split: out is NULL");
  *out = NULL;
  if (!rlx__rt.initialized || c == NULL)
    return rlx__err(c == NULL ? RLX_ERR_ARG : RLX_ERR_STATE, "rlx_comm_split: %s",
                    c == NULL ? "communicator is NULL" : "rlx_init has not been called");
  uint32_t child = next_child(c);
  if (color < 0 && color != RLX_UNDEFINED)
    return rlx__refused(c, rlx__err(RLX_ERR_ARG,
                                    "rlx_comm_split: color %d is negative (RLX_UNDEFINED excepted)",
                                    color));
  /* Everyone learns everyone's (color, key): an allgather on the parent. */
  int mine[2] = {color, key};
  int *all = malloc(sizeof(int) * 2 * (size_t)c->size);
  if (all == NULL)
    return rlx__err(RLX_ERR_NOMEM, "rlx_comm_split: no memory");
  struct rlx__op op;
  rlx__internal_op(&op, RLX__CK_COMM, "rlx_comm_split", RLX_INT32, 2, mine, all,
                   &rlx__allgather_ring);
  if (c->size > 1) {
    if (c->revoked) {
      free(all);
      return rlx__err(RLX_ERR_REVOKED, "rlx_comm_split: the communicator was revoked: %s",
                      c->revoked_why);
    }
    /* The shared segment first, as every collective's first call makes
     * it: a rank that splits while the others call a collective then
     * meets them there and both learn of the mismatch. */
    int took;
    if ((rc = rlx__comm_take(c, op.call, 1, &took)) != RLX_OK) {
      free(all);
      return rc;
    }
    if ((rc = rlx__comm_shm(c)) >= 0)
      rc = rlx__run_op(c, &op);
    if (took)
      rlx__comm_give(c);
    if (rc != RLX_OK) {
      free(all);
      return rc;
    }
  } else {
    memcpy(all, mine, sizeof(mine));
  }
  if (color == RLX_UNDEFINED) {
    free(all);
    return RLX_OK;
  }
  struct member *m = malloc(sizeof(*m) * (size_t)c->size);
  int n = 0;
  if (m == NULL) {
    free(all);
    return rlx__err(RLX_ERR_NOMEM, "rlx_comm_split: no memory");
  }
  for (int r = 0; r < c->size; r++)
    if (all[2 * r] == color)
      m[n++] = (struct member){all[2 * r], all[2 * r + 1], r};
  qsort(m, (size_t)n, sizeof(*m), by_key);
  int *world = malloc(sizeof(int) * (size_t)n), me = -1;
  if (world == NULL) {
    free(all);
    free(m);
    return rlx__err(RLX_ERR_NOMEM, "rlx_comm_split: no memory");
  }
  for (int i = 0; i < n; i++) {
    world[i] = c->world[m[i].rank];
    if (m[i].rank == c->rank)
      me = i;
  }
  free(all);
  free(m);
  rc = make_comm(rlx__id_mix(rlx__id_mix(c->id, child), (uint32_t)color), world, n, me, out);
  if (rc == RLX_OK && c->size > 1) { /* (members that failed the split never come to it) */
    (*out)->parent_id = c->id;
    (*out)->parent_seq = op.seq + 1;
  }
  return rc;
}

int rlx_comm_dup(rlx_comm_t *c, rlx_comm_t **out) {
  if (out == NULL)
    return rlx__err(RLX_ERR_ARG, "rlx_comm_dup: out is NULL");
  *out = NULL;
  if (!rlx__rt.initialized || c == NULL)
    return rlx__err(c == NULL ? RLX_ERR_ARG : RLX_ERR_STATE, "rlx_comm_dup: %s",
                    c == NULL ? "communicator is NULL" : "rlx_init has not been called");
  uint32_t child = next_child(c);
  if (c->revoked)
    return rlx__err(RLX_ERR_REVOKED, "rlx_comm_dup: the communicator was revoked: %s",
                    c->revoked_why);
  int took, rc = rlx__comm_take(c, "rlx_comm_dup", 0, &took); /* (a check: it sends nothing) */
  if (rc != RLX_OK)
    return rc;
  /* Same members, same order: no exchange needed, as long as every rank
   * dups (and splits) in the same order, which the API requires. */
  return copy_as(c, child, 0xd0d0d0d0u, out);
}

int rlx__comm_copy(rlx_comm_t *c, uint32_t mix, rlx_comm_t **out) {
  return copy_as(c, next_child(c), mix, out);
}
