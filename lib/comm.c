/* Communicators: the world, rank/size/leader queries, and new ones made by
 * split and dup. A new communicator's id is derived from its parent's id,
 * the parent's count of children and the color, so every member computes
 * the same id without a message, and frames of different communicators
 * never match. */
#include <stdlib.h>
#include <string.h>
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

uint32_t rlx__id_mix(uint32_t h, uint32_t v) {
  h ^= v + 0x9e3779b9u + (h << 6) + (h >> 2);
  h ^= h >> 16;
  h *= 0x85ebca6bu;
  h ^= h >> 13;
  h *= 0xc2b2ae35u;
  h ^= h >> 16;
  return h;
}

/* The member with the lowest election id leads (ties: the lowest world
 * rank, which comes first in world[] as members are ordered); but the
 * ranks a job started with come before those it admitted later, and
 * earlier joiners before later ones (the generation on their cards): a
 * joiner never takes over from a running job's leader. */
int rlx__elect(const int *world, int n) {
  const struct rlx__card *cards = rlx__rt.cards;
  int best = 0;
  for (int i = 1; i < n; i++) {
    const struct rlx__card *a = &cards[world[i]], *b = &cards[world[best]];
    if (a->generation != b->generation) {
      if (a->generation < b->generation)
        best = i;
      continue;
    }
    if (a->election_id < b->election_id ||
        (a->election_id == b->election_id && world[i] < world[best]))
      best = i;
  }
  return best;
}

static struct rlx__list live = {&live, &live};
static pthread_mutex_t live_mtx = PTHREAD_MUTEX_INITIALIZER;

void rlx__comm_live(rlx_comm_t *c) {
  pthread_mutex_lock(&live_mtx);
  rlx__list_push(&live, &c->live);
  pthread_mutex_unlock(&live_mtx);
}

static int busy(const rlx_comm_t *c, uintptr_t self) {
  uintptr_t o = atomic_load(&c->owner);
  return o != 0 && o != self;
}

int rlx__comm_busy(uintptr_t self) {
  int n = busy(&rlx__rt.world, self);
  pthread_mutex_lock(&live_mtx);
  for (struct rlx__list *l = live.next; l != &live; l = l->next)
    n += busy(rlx__container_of(l, struct rlx_comm, live), self);
  pthread_mutex_unlock(&live_mtx);
  return n;
}

rlx_comm_t *rlx__comm_new(uint32_t id, int *world, int n, int rank) {
  rlx_comm_t *c = calloc(1, sizeof(*c));
  if (c == NULL)
    return NULL;
  c->id = id == 0 ? 1 : id; /* 0 is the world's */
  c->rank = rank;
  c->size = n;
  c->world = world;
  c->leader = rlx__elect(world, n);
  pthread_mutex_init(&c->mtx, NULL);
  rlx__comm_live(c);
  return c;
}

int rlx_comm_set_timeout(rlx_comm_t *c, double seconds) {
  if (c == NULL)
    return rlx__err(RLX_ERR_ARG, "rlx_comm_set_timeout: communicator is NULL");
  if (seconds != seconds || seconds > 1e9) /* (NaN, or past what the clock adds up) */
    return rlx__err(RLX_ERR_ARG, "rlx_comm_set_timeout: %g s is not a time limit (0 for none, "
                    "up to 1e9 s; negative for RLX_TIMEOUT's)", seconds);
  c->timeout_set = seconds >= 0;
  c->timeout_s = seconds >= 0 ? seconds : 0;
  return RLX_OK;
}

int rlx_comm_get_timeout(const rlx_comm_t *c, double *seconds) {
  if (c == NULL || seconds == NULL)
    return rlx__err(RLX_ERR_ARG, "rlx_comm_get_timeout: %s is NULL",
                    c == NULL ? "communicator" : "seconds");
  *seconds = rlx__comm_timeout(c, NULL);
  return RLX_OK;
}

double rlx__comm_timeout(const rlx_comm_t *c, const char **why) {
  if (why != NULL)
    *why = c->timeout_set ? "rlx_comm_set_timeout" : "RLX_TIMEOUT";
  return c->timeout_set ? c->timeout_s : rlx__rt.cfg.timeout_s;
}

uint64_t rlx__comm_deadline(const rlx_comm_t *c, uint64_t from, const char **why) {
  double s = rlx__comm_timeout(c, why);
  return s > 0 ? from + (uint64_t)(s * 1e9) : 0;
}

int rlx_comm_revoke(rlx_comm_t *c) {
  struct rlx__runtime *rt = &rlx__rt;
  if (!rt->initialized || c == NULL)
    return rlx__err(c == NULL ? RLX_ERR_ARG : RLX_ERR_STATE, "rlx_comm_revoke: %s",
                    c == NULL ? "communicator is NULL" : "rlx_init has not been called");
  char me[48], why[160];
  snprintf(why, sizeof(why), "communicator %u revoked by %s (rlx_comm_revoke)", c->id,
           rlx__rank_name(c->world, c->rank, me, sizeof(me)));
  /* (here first: a call of another thread fails now, later ones at their
   * start; then the others, each told directly) */
  static const uint8_t none[RLX__SIG_SIZE];
  rlx__engine_lock(&rt->engine);
  rlx__exec_revoke(c->id, why);
  if (c->size > 1 && rt->p2p_up)
    rlx__exec_abort_members(&rt->p2p, c->world, c->size, c->rank, c->id, RLX__SEQ_REVOKE, none,
                            RLX_ERR_REVOKED, why, -1);
  rlx__engine_unlock(&rt->engine);
  return RLX_OK;
}

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
  pthread_mutex_lock(&c->mtx);
  uint32_t child = ++c->children;
  pthread_mutex_unlock(&c->mtx);
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

/* At 2 ranks a large allreduce is a ring, by reference on one host,
 * receiving into the communicator's scratch. A job that grows from one
 * rank makes the 2-rank communicator in the admission's step, and its
 * first gradient allreduce touched a fresh scratch on both sides there:
 * page faults cost ~2 us each on the lent VMs and here (800 KB, ~400 us),
 * every rank waiting. Made and touched at rlx_init instead (a joiner
 * before it asks to join), then taken by the world it grows into. */
void rlx__comm_make_reserve(struct rlx__runtime *rt) {
  if (rt->reserve != NULL)
    return;
  rt->reserve = malloc(RLX__GROW_SCRATCH);
  if (rt->reserve == NULL)
    return; /* (then the first large call makes it) */
  memset(rt->reserve, 1, RLX__GROW_SCRATCH); /* (not 0: malloc and memset 0 become calloc) */
  rt->reserve_len = RLX__GROW_SCRATCH;
}

int rlx__comm_adopt_scratch(rlx_comm_t *c, void **buf, size_t *len) {
  if (*buf == NULL || c->scratch != NULL)
    return 0;
  c->scratch = *buf;
  c->scratch_len = *len;
  *buf = NULL;
  *len = 0;
  return 1;
}

void rlx__comm_take_reserve(struct rlx__runtime *rt, rlx_comm_t *c) {
  if (!rlx__comm_adopt_scratch(c, &rt->reserve, &rt->reserve_len))
    return;
  rlx__info("communicator %u: its calls' scratch, %zu KiB, made at rlx_init", c->id,
            c->scratch_len / 1024);
}

void rlx__comm_release(rlx_comm_t *c) {
  if (c->live.next != NULL) {
    pthread_mutex_lock(&live_mtx);
    rlx__list_remove(&c->live);
    pthread_mutex_unlock(&live_mtx);
    c->live.next = c->live.prev = NULL;
  }
  rlx__comm_shm_free(c);
  free(c->world);
  free(c->scratch);
  free(c->wire);
  c->world = NULL;
  c->scratch = NULL;
  c->wire = NULL;
  pthread_mutex_destroy(&c->mtx);
}

int rlx_comm_free(rlx_comm_t **c) {
  if (c == NULL || *c == NULL)
    return rlx__err(RLX_ERR_ARG, "rlx_comm_free: no communicator");
  if (*c == &rlx__rt.world)
    return rlx__err(RLX_ERR_ARG, "rlx_comm_free: the world communicator cannot be freed");
  int n = atomic_load(&(*c)->in_flight);
  if (n > 0) /* they would go on writing into what we free */
    return rlx__err(RLX_ERR_STATE,
                    "rlx_comm_free: %d nonblocking operation(s) still in flight on this "
                    "communicator; rlx_wait for them first", n);
  rlx__comm_release(*c);
  free(*c);
  *c = NULL;
  return RLX_OK;
}
