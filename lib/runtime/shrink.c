/* rlx_comm_shrink: after a member is lost, the survivors agree on who is
 * gone and form a communicator of their own.
 *
 * Each survivor starts from the members its transport has seen fail, and
 * probes the ones it has no connection with (a dead process refuses the
 * connection at once). Then, in rounds, the survivors it believes in
 * allgather their views (bitmaps of the lost); the round's result is the
 * same on every member, so all of them either see identical views and
 * stop, or take the union and go again. A round that fails (a member died
 * meanwhile, or members disagreed on who takes part and their frames did
 * not match) is simply followed by another on what the transport now
 * knows. Rounds stop at RLX_TIMEOUT. The new communicator keeps the old
 * order; its leader is re-elected: the survivor with the lowest election
 * id. */
#include <stdio.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "runtime/runtime.h"

#define SHRINK_ROUNDS_MAX 64

static int is_lost(int world_rank) {
  return world_rank != rlx__rt.cfg.rank && rlx__p2p_lost_reason(&rlx__rt.p2p, world_rank) != NULL;
}

/* First let the loop read what is pending (a dead peer's closed socket is
 * an EOF waiting there), then probe the members with no connection: a
 * refused connection means a dead process. Survivors then start from the
 * same view in the common case, and agree in one round. */
#define PROBE_MS 500 /* an answer to a dial, on a live host, takes well under that */

static void probe(const rlx_comm_t *c) {
  struct rlx__runtime *rt = &rlx__rt;
  rlx__engine_lock(&rt->engine);
  for (int i = 0; i < 8; i++)
    rlx__engine_turn(&rt->engine); /* the rings too (rlx_test says why) */
  rlx__engine_unlock(&rt->engine);
  for (int r = 0; r < c->size; r++) {
    int w = c->world[r], connected;
    rlx__engine_lock(&rt->engine);
    connected = is_lost(w) || rlx__p2p_connected(&rt->p2p, w);
    rlx__engine_unlock(&rt->engine);
    if (connected)
      continue;
    /* (a silent host, its link cut, does not answer at all: it is not
     * marked here, and the rounds below find it missing within the
     * deadline, instead of a blocking connect() waiting out the kernel's
     * SYN retries, two minutes) */
    int fd = -1, rc = rlx__sock_connect_within(rt->cards[w].tcp, PROBE_MS, &fd);
    if (fd >= 0)
      close(fd);
    if (rc == -ECONNREFUSED) {
      char why[200];
      snprintf(why, sizeof why, "rank %d refused a connection at %s during rlx_comm_shrink",
               r, rt->cards[w].tcp);
      rlx__engine_lock(&rt->engine);
      rlx__p2p_mark_lost(&rt->p2p, w, why);
      rlx__engine_unlock(&rt->engine);
    }
  }
}

/* One round: allgather this rank's view among those it believes alive.
 * views[r] (words per member) receives every member's view. */
static int round_exchange(const rlx_comm_t *c, const char *call, uint32_t id, uint64_t round,
                          uint64_t deadline, const uint32_t *mine, int words, int *alive,
                          int nalive, int me, uint32_t *views) {
  rlx_comm_t *t = calloc(1, sizeof(*t));
  if (t == NULL)
    return rlx__err(RLX_ERR_NOMEM, "rlx_comm_shrink: no memory");
  /* an id of the round's own: an ABORT of a failed round (for its seq)
   * would otherwise revoke every later round on the same id */
  t->id = id ^ (uint32_t)(round * 0x9e3779b9u);
  t->seq = round;
  t->rank = me;
  t->size = nalive;
  t->world = alive;
  /* Point to point only: members whose views differ run different rounds,
   * and two of them on one host would otherwise wait in a shared
   * segment's set-up for each other, one taking part and the other not,
   * where mismatched frames fail the round at once. */
  t->shm_state = -1;
  /* The round ends by the shrink's own deadline: a member it waits for
   * that is silent but not yet known lost (a dial to a cut host has no
   * heartbeat to miss) would otherwise hold it for RLX_TIMEOUT's. */
  t->timeout_set = 1;
  if (deadline != 0) {
    uint64_t now = rlx__now_ns();
    t->timeout_s = deadline > now ? (double)(deadline - now) / 1e9 : 1e-9;
  } /* (else 0: no limit, as the communicator's) */
  pthread_mutex_init(&t->mtx, NULL);
  struct rlx__op op;
  /* (the fewest rounds: recursive doubling on a power of two, else
   * Bruck's; rlx_comm_grow's pending phase connects those partners) */
  rlx__internal_op(&op, RLX__CK_COMM, call, RLX_INT32, (size_t)words, mine, views,
                   rlx__select(RLX__CK_ALLGATHER, (size_t)words * 4 * (size_t)nalive, nalive,
                               NULL));
  int rc = rlx__run_op(t, &op);
  t->world = NULL; /* alive[] is the caller's */
  rlx__comm_release(t);
  free(t);
  (void)c;
  return rc;
}

int rlx_comm_shrink(rlx_comm_t *c, rlx_comm_t **out) {
  struct rlx__runtime *rt = &rlx__rt;
  if (out == NULL)
    return rlx__err(RLX_ERR_ARG, "rlx_comm_shrink: out is NULL");
  *out = NULL;
  if (!rt->initialized || c == NULL)
    return rlx__err(c == NULL ? RLX_ERR_ARG : RLX_ERR_STATE, "rlx_comm_shrink: %s",
                    c == NULL ? "communicator is NULL" : "rlx_init has not been called");
  int rc = rlx__comm_agree(c, "rlx_comm_shrink", 1, NULL, out);
  if (rc == RLX_OK) /* the job's newest: rlx_finalize synchronises on it */
    rlx__set_last(c, *out);
  return rc;
}

int rlx__comm_agree(rlx_comm_t *c, const char *call, int probe_first, uint32_t *flags,
                    rlx_comm_t **out) {
  struct rlx__runtime *rt = &rlx__rt;
  /* a view: the bitmap of the lost, then (with flags) this rank's flags */
  int words = (c->size + 31) / 32, rc = RLX_OK, stride = words + (flags != NULL);
  uint32_t *lost = calloc((size_t)stride, 4), *views = calloc((size_t)stride * c->size, 4);
  int *alive = malloc(sizeof(int) * (size_t)c->size);
  if (!lost || !views || !alive) {
    free(lost), free(views), free(alive);
    return rlx__err(RLX_ERR_NOMEM, "rlx_comm_shrink: no memory");
  }
  pthread_mutex_lock(&c->mtx);
  uint32_t base = c->id * 2654435761u ^ 0x5348524bu ^ ++c->children; /* "SHRK" */
  pthread_mutex_unlock(&c->mtx);
  const char *why;
  double limit = rlx__comm_timeout(c, &why);
  uint64_t deadline = rlx__comm_deadline(c, rlx__now_ns(), NULL);
  int nalive = 0, me = -1, agreed = 0;
  if (flags != NULL)
    lost[words] = *flags;
  for (uint64_t round = 0; !agreed && round < SHRINK_ROUNDS_MAX; round++) {
    if (deadline && rlx__now_ns() > deadline) {
      rc = rlx__err(RLX_ERR_TIMEOUT, "%s: the survivors did not agree within "
                    "%s (%g s)", call, why, limit);
      break;
    }
    if (probe_first || round > 0)
      probe(c);
    rlx__engine_lock(&rt->engine);
    for (int r = 0; r < c->size; r++)
      if (is_lost(c->world[r]))
        lost[r / 32] |= 1u << (r % 32);
    rlx__engine_unlock(&rt->engine);
    nalive = 0;
    for (int r = 0; r < c->size; r++)
      if (!(lost[r / 32] >> (r % 32) & 1)) {
        if (r == c->rank)
          me = nalive;
        alive[nalive++] = c->world[r];
      }
    if (nalive == 1) { /* alone: nothing to agree on */
      agreed = 1;
      break;
    }
    rc = round_exchange(c, call, base, round, deadline, lost, stride, alive, nalive, me, views);
    if (rc != RLX_OK) {
      rlx__info("%s: round %llu failed (%s); again", call, (unsigned long long)round,
                rlx_errmsg());
      continue;
    }
    agreed = 1;
    for (int i = 0; i < nalive; i++)
      for (int w = 0; w < words; w++) {
        if (views[(size_t)i * stride + w] != lost[w])
          agreed = 0;
        lost[w] |= views[(size_t)i * stride + w];
      }
  }
  if (flags != NULL && agreed) /* the last round's views: the same on every rank */
    for (int i = 0; i < nalive; i++)
      *flags &= views[(size_t)i * stride + words];
  if (rc == RLX_OK && !agreed)
    rc = rlx__err(RLX_ERR_TIMEOUT, "%s: no agreement after %d rounds", call,
                  SHRINK_ROUNDS_MAX);
  if (rc == RLX_OK) {
    int *world = malloc(sizeof(int) * (size_t)nalive);
    rlx_comm_t *n = NULL;
    if (world != NULL) {
      memcpy(world, alive, sizeof(int) * (size_t)nalive);
      n = rlx__comm_new(base * 2654435761u + 1, world, nalive, me);
    }
    if (n == NULL) {
      free(world);
      rc = rlx__err(RLX_ERR_NOMEM, "rlx_comm_shrink: no memory");
    } else {
      *out = n;
      rlx__info("%s: %d of %d members remain; leader is rank %d (was rank %d)", call,
                nalive, c->size, n->leader, c->leader);
    }
  }
  free(lost);
  free(views);
  free(alive);
  return rc;
}
