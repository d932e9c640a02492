/* rlx_comm_create_group: a communicator made by the ranks it lists alone
 * (MPI_Comm_create_group's semantics: the others take no part and are not
 * waited for). Its id derives from the parent's, a hash of the list, and
 * how many groups of that list this rank made from the parent before: the
 * members, and only they, make the groups of a list in the same order, so
 * they agree without a message. Then one allreduce on the new
 * communicator checks that every member passed the same tag (and list:
 * members whose lists differ have different ids, and wait for each other
 * until the deadline, naming whom). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "base/hash.h"
#include "runtime/runtime.h"

static uint32_t list_key(int n, const int *ranks) {
  uint32_t h = RLX__FNV_START; /* over the ranks */
  for (int i = 0; i < n; i++)
    h = rlx__fnv1a(h, (uint32_t)ranks[i], 4);
  return h;
}

/* How many groups with this key this rank made from c before (and count
 * this one). */
static int next_of(rlx_comm_t *c, uint32_t key, uint32_t *count) {
  rlx__comm_lock(c);
  for (int i = 0; i < c->ngroups; i++)
    if (c->groups[i].key == key) {
      *count = ++c->groups[i].count;
      rlx__comm_unlock(c);
      return RLX_OK;
    }
  void *g = realloc(c->groups, sizeof(*c->groups) * (size_t)(c->ngroups + 1));
  if (g == NULL) {
    rlx__comm_unlock(c);
    return rlx__err(RLX_ERR_NOMEM, "rlx_comm_create_group: no memory");
  }
  c->groups = g;
  c->groups[c->ngroups].key = key;
  c->groups[c->ngroups].count = *count = 1;
  c->ngroups++;
  rlx__comm_unlock(c);
  return RLX_OK;
}

static int check_list(rlx_comm_t *c, int n, const int *ranks, int tag, int *me) {
  if (n < 1 || ranks == NULL)
    return rlx__err(RLX_ERR_ARG, "rlx_comm_create_group: %s",
                    ranks == NULL ? "ranks is NULL" : "n is less than 1");
  if (tag < 0)
    return rlx__err(RLX_ERR_ARG, "rlx_comm_create_group: tag %d is negative", tag);
  unsigned char *seen = calloc((size_t)c->size, 1);
  if (seen == NULL)
    return rlx__err(RLX_ERR_NOMEM, "rlx_comm_create_group: no memory");
  *me = -1;
  for (int i = 0; i < n; i++) {
    if (ranks[i] < 0 || ranks[i] >= c->size || seen[ranks[i]]) {
      int r = ranks[i];
      free(seen);
      return rlx__err(RLX_ERR_ARG, "rlx_comm_create_group: ranks[%d] = %d is %s", i, r,
                      r < 0 || r >= c->size ? "not a rank of the parent" : "listed twice");
    }
    seen[ranks[i]] = 1;
    if (ranks[i] == c->rank)
      *me = i;
  }
  free(seen);
  if (*me < 0)
    return rlx__err(RLX_ERR_ARG, "rlx_comm_create_group: rank %d is not in ranks (only the "
                    "ranks listed call it)", c->rank);
  return RLX_OK;
}

int rlx_comm_create_group(rlx_comm_t *c, int n, const int *ranks, int tag, rlx_comm_t **out) {
  int me = -1, rc;
  if (out == NULL)
    return rlx__err(RLX_ERR_ARG, "rlx_comm_create_group: out is NULL");
  *out = NULL;
  if (!rlx__rt.initialized || c == NULL)
    return rlx__err(c == NULL ? RLX_ERR_ARG : RLX_ERR_STATE, "rlx_comm_create_group: %s",
                    c == NULL ? "communicator is NULL" : "rlx_init has not been called");
  if (c->revoked)
    return rlx__err(RLX_ERR_REVOKED, "rlx_comm_create_group: the communicator was revoked: %s",
                    c->revoked_why);
  if ((rc = check_list(c, n, ranks, tag, &me)) != RLX_OK)
    return rc;
  uint32_t key = list_key(n, ranks), count = 0, check = rlx__fnv1a(key, (uint32_t)tag, 4);
  if ((rc = next_of(c, key, &count)) != RLX_OK)
    return rc;
  int *world = malloc(sizeof(int) * (size_t)n);
  if (world == NULL)
    return rlx__err(RLX_ERR_NOMEM, "rlx_comm_create_group: no memory");
  for (int i = 0; i < n; i++)
    world[i] = c->world[ranks[i]];
  uint32_t id = rlx__id_mix(rlx__id_mix(rlx__id_mix(c->id, 0x47525550u /* "GRUP" */), key), count);
  rlx_comm_t *g = rlx__comm_new(id, world, n, me);
  if (g == NULL) {
    free(world);
    return rlx__err(RLX_ERR_NOMEM, "rlx_comm_create_group: no memory");
  }
  /* Every member passed the same tag: the least of check and of its
   * complement, over the members. */
  int32_t mine[2] = {(int32_t)(check >> 1), (int32_t)(~check >> 1)}, least[2];
  struct rlx__op op;
  rlx__internal_op(&op, RLX__CK_COMM, "rlx_comm_create_group", RLX_INT32, 2, mine, least,
                   &rlx__allreduce_rd);
  op.rop = RLX_MIN;
  rc = n > 1 ? rlx__run_op(g, &op) : RLX_OK;
  if (rc == RLX_OK && n > 1 && (least[0] != mine[0] || least[1] != mine[1]))
    rc = rlx__err(RLX_ERR_MISMATCH, "rlx_comm_create_group: the members of a group of %d "
                  "passed different tags (rank %d passed %d, another member another)", n,
                  c->rank, tag);
  if (rc != RLX_OK) {
    rlx__comm_release(g);
    free(g);
    return rc;
  }
  *out = g;
  return RLX_OK;
}
