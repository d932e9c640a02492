/* rlx_comm_shrink: after a member is lost, the survivors agree on who is
 * gone and form a communicator of their own.
 *
 * Each survivor starts from the members its transport has seen fail, and
 * probes the ones it has no connection with (a dead process refuses the
 * connection at once). Then, in rounds, the survivors it believes in
 * allgather their views (bitmaps of the lost, and of those lost for
 * certain); the round's result is the same on every member, so all of them
 * either see identical views and stop, or take the union and go again. A
 * round is named by the set of members it is among (and how often this
 * rank tried that set), so survivors whose first views differ meet as soon
 * as they believe in the same set, whatever each tried before; a round that
 * fails (a member died meanwhile) is followed by another on what the
 * transport now knows. Rounds stop at the communicator's deadline.
 *
 * Then the quorum (RLX_SHRINK_QUORUM=majority, the default): members lost
 * for certain (their connection closed or reset, a dial refused) do not
 * count; members lost only to silence do, for a network partition looks
 * the same from either side. The survivors go on if they are more than
 * half of those that count; exactly half go on only if the job's
 * rendezvous, reached within the deadline, witnesses this side first
 * (every survivor asks, then all confirm in one more round); otherwise
 * every survivor fails with RLX_ERR_PEER_LOST naming the partition, so
 * at most one side of a partition goes on.
 *
 * The new communicator keeps the old order; its leader is re-elected: the
 * survivor with the lowest election id. */
#include <stdio.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "runtime/runtime.h"
#include "base/hash.h"

#define SHRINK_ROUNDS_MAX 64
#define WITNESS_MS 2000 /* the most a claim at the rendezvous may take */

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
    /* (a dial that is not answered within PROBE_MS, or finds no route,
     * marks a member lost to silence, as missing heartbeats do: a host
     * cut off, whose kernel would answer a SYN at once were it reachable;
     * the quorum still counts it. A blocking connect() would wait out the
     * kernel's SYN retries, two minutes.) */
    int fd = -1, rc = rlx__sock_connect_within(rt->cards[w].tcp, PROBE_MS, &fd);
    if (fd >= 0)
      close(fd);
    int silent = rc == -ETIMEDOUT || rc == -EHOSTUNREACH || rc == -ENETUNREACH;
    if (rc == -ECONNREFUSED || silent) {
      char why[200];
      snprintf(why, sizeof why, "rank %d %s at %s during rlx_comm_shrink", w, /* (the world's) */
               silent ? "did not answer a connection" : "refused a connection", rt->cards[w].tcp);
      rlx__engine_lock(&rt->engine);
      rlx__p2p_mark_lost(&rt->p2p, w, silent, why);
      rlx__engine_unlock(&rt->engine);
    }
  }
}

/* One round: every member sends its view to every other, as messages on
 * a communicator of the round's own (id, and seq as the tag: the same on
 * every member that runs it). views[r] (words per member) receives every
 * member's view. Every receive is posted at once, so the loss of any
 * member fails the round as soon as the transport knows (a collective
 * would wait on one partner at a time, and a member waiting on one that
 * is in another round would not hear that a third is gone). */
static int round_exchange(const char *call, uint32_t id, uint64_t seq, uint64_t deadline,
                          const uint32_t *mine, int words, int *alive, int nalive, int me,
                          uint32_t *views) {
  rlx_comm_t *t = calloc(1, sizeof(*t));
  rlx_request_t **rq = calloc((size_t)(2 * nalive), sizeof(*rq));
  if (t == NULL || rq == NULL) {
    free(t), free(rq);
    return rlx__err(RLX_ERR_NOMEM, "%s: no memory", call);
  }
  t->id = id;
  t->rank = me;
  t->size = nalive;
  t->world = alive;
  t->shm_state = -1;
  /* The round ends by the shrink's own deadline: a member it waits for
   * that is silent but not yet known lost (a dial to a cut host has no
   * heartbeat to miss) would otherwise hold it for RLX_TIMEOUT's. */
  t->timeout_set = 1;
  if (deadline != 0) {
    uint64_t now = rlx__now_ns();
    t->timeout_s = deadline > now ? (double)(deadline - now) / 1e9 : 1e-9;
  } /* (else 0: no limit, as the communicator's) */
  rlx__loop_lock_init(&t->mtx);
  memcpy(views + (size_t)me * words, mine, sizeof(uint32_t) * (size_t)words);
  int tag = (int)(seq & 0x3fffffff), rc = RLX_OK, pending = 0;
  for (int i = 0; i < nalive && rc == RLX_OK; i++)
    if (i != me && (rc = rlx_irecv(views + (size_t)i * words, (size_t)words, RLX_UINT32, i, tag,
                                   t, &rq[i])) == RLX_OK)
      pending++;
  for (int i = 0; i < nalive && rc == RLX_OK; i++)
    if (i != me && (rc = rlx_isend(mine, (size_t)words, RLX_UINT32, i, tag, t,
                                   &rq[nalive + i])) == RLX_OK)
      pending++;
  struct timespec nap = {0, 200 * 1000};
  while (rc == RLX_OK && pending > 0) {
    int idx = -1, done = 0;
    if ((rc = rlx_testany(2 * nalive, rq, &idx, &done, NULL)) != RLX_OK)
      break; /* (that request is freed; its error says which member) */
    if (done && idx >= 0) {
      pending--;
      continue;
    }
    if (deadline != 0 && rlx__now_ns() > deadline) {
      const char *why;
      double limit = rlx__comm_timeout(t, &why);
      rc = rlx__err(RLX_ERR_TIMEOUT, "%s: a round among %d members did not end within %g s "
                    "(%s)", call, nalive, limit, why);
      break;
    }
    nanosleep(&nap, NULL);
  }
  for (int i = 0; i < 2 * nalive; i++)
    if (rq[i] != NULL)
      rlx__msg_abandon(rq[i]);
  free(rq);
  t->world = NULL; /* alive[] is the caller's */
  rlx__comm_release(t);
  free(t);
  return rc;
}

/* A set of world ranks as a number every member of it computes alike. */
static uint32_t set_hash(const int *alive, int nalive) {
  uint32_t h = RLX__FNV_START;
  for (int i = 0; i < nalive; i++)
    h = rlx__fnv1a(h, (uint32_t)alive[i], 4);
  return h;
}

static int popcount(const uint32_t *bits, int words) {
  int n = 0;
  for (int w = 0; w < words; w++)
    n += __builtin_popcount(bits[w]);
  return n;
}

/* The quorum (the file's head says what): RLX_OK if the agreed survivors
 * alive[nalive] go on. certain: the union of the members lost for
 * certain, as every survivor saw it. */
static int quorum(const rlx_comm_t *c, const char *call, uint32_t base, uint64_t deadline,
                  const uint32_t *certain, int words, int *alive, int nalive, int me) {
  struct rlx__runtime *rt = &rlx__rt;
  int counted = c->size - popcount(certain, words);
  if (rt->cfg.shrink_any || 2 * nalive > counted)
    return RLX_OK;
  if (2 * nalive < counted)
    return rlx__err(RLX_ERR_PEER_LOST, "%s: rank %d reaches %d of %d ranks (the others are "
                    "silent, not known dead: a partition?): fewer than half, so this side "
                    "stops (RLX_SHRINK_QUORUM=majority)", call, c->rank, nalive, counted);
  /* Exactly half: the side the rendezvous witnesses first goes on. */
  char why[300] = "no rendezvous to witness it (launched through PMIx)";
  int granted = 0;
  if (!rt->pmix && rt->cfg.rendezvous[0] != '\0') {
    uint64_t now = rlx__now_ns();
    int64_t left = deadline == 0 ? WITNESS_MS : deadline <= now ? 1
                   : (int64_t)((deadline - now) / 1000000u) + 1;
    int ms = left < WITNESS_MS ? (int)left : WITNESS_MS;
    int got = rlx__rdv_claim(rt->cfg.rendezvous, rt->cfg.job_key, base,
                             set_hash(alive, nalive), (uint32_t)rt->cfg.rank, ms, why, sizeof why);
    granted = got == 1;
    if (got == 0)
      snprintf(why, sizeof why, "the rendezvous witnessed the other side first");
  }
  /* Every survivor asked; all go on only if every one was granted (one
   * that could not reach the rendezvous, or whose answer was lost, holds
   * the side back rather than split it). */
  uint32_t mine = (uint32_t)granted, all[nalive];
  int rc = nalive == 1 ? (all[0] = mine, RLX_OK)
                       : round_exchange(call, base ^ 0x57544e53u /* "WTNS" */, 0, deadline,
                                        &mine, 1, alive, nalive, me, all);
  for (int i = 0; rc == RLX_OK && i < nalive; i++)
    granted &= (int)all[i];
  if (rc == RLX_OK && granted) {
    rlx__info("%s: %d of %d ranks, and the rendezvous witnessed this side: it goes on", call,
              nalive, counted);
    return RLX_OK;
  }
  return rlx__err(RLX_ERR_PEER_LOST, "%s: rank %d reaches %d of %d ranks (the others are "
                  "silent, not known dead: a partition?) and %s: this side stops "
                  "(RLX_SHRINK_QUORUM=majority)", call, c->rank, nalive, counted,
                  rc != RLX_OK ? "the survivors could not confirm the rendezvous's answer"
                  : !granted && mine ? "not every survivor here reached the rendezvous"
                  : why);
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
  /* a view: the bitmap of the lost, of those lost for certain, then (with
   * flags) this rank's flags */
  int words = (c->size + 31) / 32, rc = RLX_OK, stride = 2 * words + (flags != NULL);
  uint32_t *lost = calloc((size_t)stride, 4), *views = calloc((size_t)stride * c->size, 4);
  int *alive = malloc(sizeof(int) * (size_t)c->size);
  if (!lost || !views || !alive) {
    free(lost), free(views), free(alive);
    return rlx__err(RLX_ERR_NOMEM, "rlx_comm_shrink: no memory");
  }
  rlx__comm_lock(c);
  uint32_t base = c->id * 2654435761u ^ 0x5348524bu ^ ++c->children; /* "SHRK" */
  rlx__comm_unlock(c);
  const char *why;
  double limit = rlx__comm_timeout(c, &why);
  uint64_t deadline = rlx__comm_deadline(c, rlx__now_ns(), NULL);
  int nalive = 0, me = -1, agreed = 0;
  if (flags != NULL)
    lost[2 * words] = *flags;
  uint32_t *certain = lost + words, tried[SHRINK_ROUNDS_MAX];
  for (uint64_t round = 0; !agreed && round < SHRINK_ROUNDS_MAX; round++) {
    rc = RLX_OK; /* (a failed round's error is followed by another round) */
    if (deadline && rlx__now_ns() > deadline) {
      rc = rlx__err(RLX_ERR_TIMEOUT, "%s: the survivors did not agree within "
                    "%s (%g s)", call, why, limit);
      break;
    }
    if (probe_first || round > 0)
      probe(c);
    rlx__engine_lock(&rt->engine);
    for (int r = 0; r < c->size; r++) {
      if (is_lost(c->world[r]))
        lost[r / 32] |= 1u << (r % 32);
      if (c->world[r] != rt->cfg.rank && rlx__p2p_lost_certainly(&rt->p2p, c->world[r]))
        certain[r / 32] |= 1u << (r % 32);
    }
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
    /* the round's name: its set, and how often this rank tried that set
     * (an ABORT of a failed round would otherwise revoke the next) */
    uint32_t set = set_hash(alive, nalive);
    uint64_t attempt = 0;
    tried[round] = set;
    for (uint64_t k = 0; k < round; k++)
      attempt += tried[k] == set;
    rc = round_exchange(call, base ^ set * 0x9e3779b9u, attempt, deadline, lost, stride, alive,
                        nalive, me, views);
    if (rc != RLX_OK) {
      rlx__info("%s: round %llu failed (%s); again", call, (unsigned long long)round,
                rlx_errmsg());
      continue;
    }
    agreed = 1;
    for (int i = 0; i < nalive; i++)
      for (int w = 0; w < 2 * words; w++) {
        if (w < words && views[(size_t)i * stride + w] != lost[w])
          agreed = 0;
        lost[w] |= views[(size_t)i * stride + w];
      }
  }
  if (flags != NULL && agreed) /* the last round's views: the same on every rank */
    for (int i = 0; i < nalive; i++)
      *flags &= views[(size_t)i * stride + 2 * words];
  if (rc == RLX_OK && !agreed)
    rc = rlx__err(RLX_ERR_TIMEOUT, "%s: no agreement after %d rounds", call,
                  SHRINK_ROUNDS_MAX);
  /* (certain: the union of the last round's views, alike on every survivor) */
  if (rc == RLX_OK && nalive < c->size)
    rc = quorum(c, call, base, deadline, certain, words, alive, nalive, me);
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
