/* Communicators: the world, rank/size/leader queries, timeouts,
 * revocation, ownership by a call's thread, life and release. New ones
 * made by split and dup are comm_split.c's. */
#include <stdlib.h>
#include <string.h>
#include "runtime/runtime.h"

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
  rlx__loop_lock_init(&c->mtx);
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
  /* (under the lock even to look: another thread freeing a neighbour on
   * the list writes our links) */
  pthread_mutex_lock(&live_mtx);
  if (c->live.next != NULL) {
    rlx__list_remove(&c->live);
    c->live.next = c->live.prev = NULL;
  }
  pthread_mutex_unlock(&live_mtx);
  rlx__comm_shm_free(c);
  free(c->groups);
  c->groups = NULL;
  c->ngroups = 0;
  free(c->world);
  free(c->scratch);
  free(c->wire);
  c->world = NULL;
  c->scratch = NULL;
  c->wire = NULL;
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

#define FINAL_MIX 0x46494e4cu /* "FINL": the id of rlx_finalize's copy */

void rlx__set_last(const rlx_comm_t *from, const rlx_comm_t *next) {
  struct rlx__runtime *rt = &rlx__rt;
  if (from != NULL && from != &rt->world && (rt->last == NULL || from->id != rt->last_src))
    return; /* a communicator of the program's own (a split), not the job's */
  int *world = malloc(sizeof(int) * (size_t)next->size);
  if (world == NULL)
    return; /* then finalize synchronises on the previous one */
  memcpy(world, next->world, sizeof(int) * (size_t)next->size);
  rlx_comm_t *copy = rlx__comm_new(rlx__id_mix(next->id, FINAL_MIX), world, next->size, next->rank);
  if (copy == NULL) {
    free(world);
    return;
  }
  if (rt->last != NULL) {
    rlx__comm_release(rt->last);
    free(rt->last);
  }
  rt->last = copy;
  rt->last_src = next->id;
}

/* (out of line: no call's path saves registers for the message) */
__attribute__((noinline, cold)) static int taken_by_another(const char *call) {
  return rlx__err(RLX_ERR_STATE,
                  "%s: another thread's call on this communicator is in progress (calls on one "
                  "communicator must not overlap; give each thread its own: rlx_comm_dup)",
                  call);
}

/* A call takes its communicator for its thread (rlx__comm_take, runtime.h). */
int rlx__comm_take(rlx_comm_t *c, const char *call, int blocking, int *took) {
  uintptr_t self = (uintptr_t)pthread_self(), cur = atomic_load(&c->owner);
  *took = 0;
  if (cur == self)
    return RLX_OK;
  /* One made while another thread's blocking call runs would meet the
   * other ranks in an order nobody chose. */
  if (cur != 0 || (blocking && !atomic_compare_exchange_strong(&c->owner, &cur, self)))
    return taken_by_another(call);
  *took = blocking;
  if (blocking) {
    /* (the owner set first, then the flag read: rlx_finalize sets it
     * first, then reads the owners, so one of the two sees the other) */
    uintptr_t fin = atomic_load(&rlx__rt.finalizing);
    if (fin != 0 && fin != self) {
      rlx__comm_give(c);
      *took = 0;
      return rlx__err(RLX_ERR_STATE, "%s: rlx_finalize is under way on another thread", call);
    }
  }
  return RLX_OK;
}

/* A release store: a sequentially consistent one is a locked instruction,
 * which waits for the call's last stores to the shared segment. */
void rlx__comm_give(rlx_comm_t *c) { atomic_store_explicit(&c->owner, 0, memory_order_release); }
