/* A running job grows: rlx_comm_grow admits the ranks waiting at the
 * rendezvous (started with RLX_JOIN=1), rlx_comm_joiners says how many
 * wait, and a joiner's rlx_init ends in the grown communicator.
 *
 * Admission, on the members of c (every one calls rlx_comm_grow), in two
 * halves so that the job never waits for a joiner to connect. The first
 * call that finds joiners waiting:
 *   1. the leader asks the rendezvous for up to max_np - size waiting
 *      joiners: their cards, with the job indices and the generation the
 *      rendezvous gave them (indices are never reused in a job);
 *   2. it broadcasts them on c; every member adds them to its cards and
 *      its point-to-point layer, then a barrier on c says all have, so no
 *      joiner reaches a member that does not know it yet;
 *   3. the leader sends the rendezvous the grown communicator (its id, the
 *      job's RLX_MAX_NP, every member's card in order), which hands it to
 *      each joiner; the call returns a communicator of c's members, and the
 *      joiners connect to every member meanwhile (pend, below).
 * A failure before step 3 gives the joiners back to the rendezvous (they
 * wait for the next growth) and fails the call on the members. A later
 * call, once every member has every joiner connected (or lost):
 *   4. members and joiners end with rlx_comm_shrink's agreement on the
 *      grown communicator: one round when nobody failed; a joiner or a
 *      member that died meanwhile is left out the same way on every
 *      survivor. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "runtime/runtime.h"
#include "base/byteorder.h"
#include "coll/shm_group.h"

#define GROW_MIX 0x47524f57u  /* "GROW" */

/* Add cards (n of them, rank = job index) to the runtime's and to the
 * point-to-point layer. */
static int add_cards(struct rlx__runtime *rt, const struct rlx__card *cards, int n) {
  int total = rt->ncards;
  for (int i = 0; i < n; i++)
    if ((int)cards[i].rank >= total)
      total = (int)cards[i].rank + 1;
  struct rlx__card *all = calloc((size_t)total, sizeof(*all));
  if (all == NULL)
    return rlx__err(RLX_ERR_NOMEM, "rlx_comm_grow: no memory for %d cards", total);
  if (rt->ncards > 0)
    memcpy(all, rt->cards, sizeof(*all) * (size_t)rt->ncards);
  for (int i = 0; i < n; i++)
    all[cards[i].rank] = cards[i];
  rlx__engine_lock(&rt->engine);
  int rc = rlx__p2p_grow(&rt->p2p, total);
  struct rlx__card *old = rt->cards;
  if (rc == RLX_OK) {
    rt->cards = all;
    rt->ncards = total;
    rt->cfg.size = total;
    rlx__p2p_start(&rt->p2p, rt->cards);
  }
  rlx__engine_unlock(&rt->engine);
  free(rc == RLX_OK ? old : all);
  return rc;
}

static int decode_cards(const uint8_t *in, int n, struct rlx__card *out) {
  for (int i = 0; i < n; i++)
    if (rlx__card_decode(in + (size_t)i * RLX__CARD_SIZE, &out[i]) != 0)
      return rlx__err(RLX_ERR_BOOTSTRAP, "rlx_comm_grow: a joiner's card is malformed");
  return RLX_OK;
}

/* One of the library's calls on c, as rlx_comm_split makes them (kind:
 * the collective; algo: its point-to-point algorithm). */
static int run_on(rlx_comm_t *c, int kind, const struct rlx__algo *algo, void *buf, size_t bytes,
                  int root) {
  struct rlx__op op;
  rlx__internal_op(&op, RLX__CK_COMM, "rlx_comm_grow", RLX_UINT8, bytes, buf, buf,
                   rlx__comm_internal_algo(c, kind, bytes, algo));
  op.root = root;
  return rlx__run_op(c, &op);
}

/* The job's ranks on this host are now c's here (it grew): spin or yield
 * by them, alike on every one of them. */
static void retune(const rlx_comm_t *c) {
  struct rlx__runtime *rt = &rlx__rt;
  const char *host = rt->cards[rt->cfg.rank].host;
  int here = 0;
  for (int i = 0; i < c->size; i++)
    here += strcmp(rt->cards[c->world[i]].host, host) == 0;
  rlx__engine_lock(&rt->engine);
  rt->local_size = here;
  long spin_us = rlx__tune_waiting(rt);
  rlx__engine_unlock(&rt->engine);
  rlx__info("%d ranks on this host's %d cores: %s, spin %ld us", here, rt->ncores,
            rt->engine.yield ? "oversubscribed: yielding" : "spinning", spin_us);
}


/* g, a communicator of c's members in c's order that rlx_comm_grow
 * returned (nobody admitted in this call): when c is the job's newest (the
 * world, or the one rlx_finalize's copy was made from), g is now, so the
 * admission that a later call ends on it (from g or its successors) is the
 * job's too, and members and joiners finalize on the same communicator. */
static void follow_last(const rlx_comm_t *c, const rlx_comm_t *g) {
  struct rlx__runtime *rt = &rlx__rt;
  if (rt->last == NULL ? c != &rt->world : c->id != rt->last_src)
    return; /* a communicator of the program's own */
  if (rt->last == NULL)
    rlx__set_last(NULL, g); /* (once: a copy of the world's members) */
  else
    rt->last_src = g->id;
}

/* The joiners' welcome: the grown communicator (id, RLX_MAX_NP, its
 * ranks' cards) and how many of them are members whose shared segment the
 * joiners are sent to map (0: none is sent). */
#define WELCOME_HEAD 16
static uint8_t *welcome_block(const rlx_comm_t *g, int offered, size_t *len) {
  struct rlx__runtime *rt = &rlx__rt;
  *len = WELCOME_HEAD + (size_t)g->size * RLX__CARD_SIZE;
  uint8_t *b = malloc(*len);
  if (b == NULL)
    return NULL;
  rlx__put32(b, g->id);
  rlx__put32(b + 4, (uint32_t)rt->cfg.max_np);
  rlx__put32(b + 8, (uint32_t)g->size);
  rlx__put32(b + 12, (uint32_t)offered);
  for (int i = 0; i < g->size; i++) {
    struct rlx__card card = rt->cards[g->world[i]];
    card.rank = (uint32_t)g->world[i];
    rlx__card_encode(&card, b + WELCOME_HEAD + (size_t)i * RLX__CARD_SIZE);
  }
  return b;
}

/* c's members as a communicator of its own (nobody admitted now). */
static int same_members(rlx_comm_t *c, rlx_comm_t **out) {
  return rlx__comm_copy(c, GROW_MIX, out);
}

/* The leader asks the rendezvous for the joiners waiting (as many as c
 * has room for; waiting: rlx__rdv_member_joiners's count, just read) and
 * reads the answer at a later look: from rlx_comm_joiners (which then
 * counts them), or the grow call that finds none taken. Under
 * member_mtx. */
static void ask_ahead(const rlx_comm_t *c, int waiting) {
  struct rlx__runtime *rt = &rlx__rt;
  int room = rt->cfg.max_np - c->size;
  if (room <= 0 || waiting <= 0 || rt->member.asked > 0 || rt->member.answered)
    return;
  int e = rlx__rdv_member_ask(&rt->member, (uint32_t)(waiting < room ? waiting : room));
  if (e != 0)
    rlx__warn("rlx_comm_grow: asking the rendezvous for the joiners failed: %s", strerror(-e));
}

/* The joiners an earlier ask took, if its answer has come: 0 and *n = 0
 * when it has not (or nothing was asked), or a negative errno. More than
 * c has room for (asked for another communicator): given back. Under
 * member_mtx. */
static int take_answer(const rlx_comm_t *c, uint32_t *gen, uint8_t **cards, int *n) {
  struct rlx__runtime *rt = &rlx__rt;
  int e = rlx__rdv_member_answer(&rt->member, gen, cards, n);
  if (e > 0 && *n > rt->cfg.max_np - c->size) {
    free(*cards);
    *cards = NULL;
    *n = 0;
    return rlx__rdv_member_release(&rt->member);
  }
  return e < 0 ? e : 0;
}

/* The communicator that follows c on the same members (a grow's, or the
 * grown one on the members) takes c's scratch too: the next large call
 * point to point (2 ranks) would fault a fresh one in, ~0.2 ms for the
 * 1 MB a ring at 2 ranks takes. c regrows its own if it is called again.
 * (c is taken: no blocking call on it runs meanwhile.) */
static void take_scratch(rlx_comm_t *c, rlx_comm_t *to) {
  rlx__comm_lock(c);
  (void)rlx__comm_adopt_scratch(to, &c->scratch, &c->scratch_len);
  rlx__comm_unlock(c);
}

/* Steps 1-3 on the members; *g is the grown communicator (still to be
 * agreed on), or a communicator of c's members when nobody was admitted;
 * *offer: the serial of c's segment the welcome offered the joiners (0:
 * none; alike on every member: rank 0 sends it exactly then). */
static int admit(rlx_comm_t *c, rlx_comm_t **g, int *admitted, uint64_t *offer, uint64_t t[4]) {
  struct rlx__runtime *rt = &rlx__rt;
  t[0] = rlx__now_ns();
  uint64_t deadline = rt->cfg.timeout_s > 0 ? t[0] + (uint64_t)(rt->cfg.timeout_s * 1e9) : 0;
  uint8_t *cards = NULL;
  int n = 0, rc = RLX_OK, taken = 0;
  *admitted = 0;
  *offer = 0;
  pthread_mutex_lock(&rt->member_mtx);
  if (c->rank == c->leader) {
    uint32_t gen = 0;
    int e = take_answer(c, &gen, &cards, &n);
    if (e < 0) /* the others hear of it as nobody admitted */
      rlx__warn("rlx_comm_grow: asking the rendezvous for the joiners failed: %s", strerror(-e));
    taken = n > 0;
    /* none now: ask for the ones waiting; the answer is read at a later
     * call, which admits them (no call waits for the round trip) */
    if (n == 0)
      ask_ahead(c, rlx__rdv_member_joiners(&rt->member));
  } else if (rt->member.asked > 0 || rt->member.answered) {
    (void)rlx__rdv_member_release(&rt->member); /* (asked as another communicator's leader) */
  }
  pthread_mutex_unlock(&rt->member_mtx);
  t[1] = rlx__now_ns();
  /* How many the leader took, as the least of every member's (the leader
   * gives -n, the others 0): an allreduce, which no member completes
   * before every one has come, where a broadcast's root could finish and
   * go on while a member fails it (a member lost meanwhile): then members
   * would shrink different communicators. */
  int32_t least = 0;
  if ((rc = rlx__comm_least(c, "rlx_comm_grow", c->rank == c->leader ? -n : 0, &least, 0)) != RLX_OK)
    goto fail;
  n = -least;
  if (n < 0 || n > (1 << 20)) {
    rc = rlx__err(RLX_ERR_CORRUPT, "rlx_comm_grow: the leader announced %d joiners", n);
    goto fail;
  }
  if (n == 0) {
    free(cards);
    return same_members(c, g);
  }
  struct rlx__card *dec = NULL;
  if (cards == NULL && (cards = malloc((size_t)n * RLX__CARD_SIZE)) == NULL) {
    rc = rlx__err(RLX_ERR_NOMEM, "rlx_comm_grow: no memory");
    goto fail;
  }
  if (c->size > 1 && (rc = run_on(c, RLX__CK_BCAST, &rlx__bcast_binomial, cards,
                                  (size_t)n * RLX__CARD_SIZE, c->leader)) != RLX_OK)
    goto fail;
  if ((dec = calloc((size_t)n, sizeof(*dec))) == NULL) {
    rc = rlx__err(RLX_ERR_NOMEM, "rlx_comm_grow: no memory");
    goto fail;
  }
  if ((rc = decode_cards(cards, n, dec)) == RLX_OK)
    rc = add_cards(rt, dec, n);
  free(dec);
  if (rc != RLX_OK)
    goto fail;
  int *world = malloc(sizeof(int) * (size_t)(c->size + n));
  if (world == NULL) {
    rc = rlx__err(RLX_ERR_NOMEM, "rlx_comm_grow: no memory");
    goto fail;
  }
  memcpy(world, c->world, sizeof(int) * (size_t)c->size);
  for (int i = 0; i < n; i++)
    world[c->size + i] = (int)rlx__get32(cards + (size_t)i * RLX__CARD_SIZE + 4);
  rlx__comm_lock(c);
  uint32_t child = ++c->children;
  rlx__comm_unlock(c);
  *g = rlx__comm_new(rlx__id_mix(rlx__id_mix(c->id, child), GROW_MIX), world, c->size + n, c->rank);
  if (*g == NULL) {
    free(world);
    rc = rlx__err(RLX_ERR_NOMEM, "rlx_comm_grow: no memory");
    goto fail;
  }
  t[2] = rlx__now_ns();
  /* every member knows the joiners now: they may be told */
  if (c->size > 1 && (rc = run_on(c, RLX__CK_BARRIER, &rlx__barrier_dissemination, NULL, 0, 0)) != RLX_OK)
    goto fail;
  t[3] = rlx__now_ns();
  *offer = rlx__comm_shm_offer(c, *g);
  if (c->rank == c->leader) {
    size_t len;
    uint8_t *blk = welcome_block(*g, *offer != 0 ? c->size : 0, &len);
    pthread_mutex_lock(&rt->member_mtx);
    int e = blk ? rlx__rdv_member_welcome(&rt->member, blk, len, deadline) : -ENOMEM;
    pthread_mutex_unlock(&rt->member_mtx);
    free(blk);
    taken = 0;
    if (e != 0) /* the joiners never hear: members give them up at RLX_TIMEOUT */
      rlx__warn("rlx_comm_grow: welcoming the joiners failed: %s", strerror(-e));
  }
  free(cards);
  *admitted = n;
  return RLX_OK;
fail:
  if (taken) { /* they wait for the next growth */
    pthread_mutex_lock(&rt->member_mtx);
    (void)rlx__rdv_member_release(&rt->member);
    pthread_mutex_unlock(&rt->member_mtx);
  }
  free(cards);
  if (*g != NULL) {
    rlx__comm_release(*g);
    free(*g);
    *g = NULL;
  }
  return rc;
}

/* ---- the admission's second half ------------------------------------------- */

/* An admission between its halves (one at a time): the joiners were
 * welcomed and connect to every member while the job goes on; g is the
 * grown communicator as welcomed (the nbase members of the communicator
 * that admitted them, then the joiners), still to be agreed on. Used by
 * the members' rlx_comm_grow, which they call in step; rlx_comm_joiners
 * reads it under member_mtx. */
static struct {
  rlx_comm_t *g;
  int nbase;
  uint64_t t_welcome, t_dialed;
  /* The members' segment, offered to the joiners (its serial; 0: none):
   * rank 0 sends each joiner a copy of memfd once it connected (bit i of
   * sent: joiner i), ahead of the admission, which then only agrees. */
  uint64_t serial;
  int sender, memfd; /* memfd: -errno when the sender could not copy it */
  uint64_t sent;
} pend = {.memfd = -1};

/* Every member of c was one of the base, and every base member not in c
 * is lost (c is the base, a dup of it, or what it shrank to): only then
 * do c's members end the admission, or some member would be missing
 * from its agreement. */
static int pending_fits(const rlx_comm_t *c) {
  struct rlx__runtime *rt = &rlx__rt;
  int found = 0;
  if (c->size == pend.nbase && memcmp(c->world, pend.g->world, sizeof(int) * (size_t)c->size) == 0)
    return 1; /* (the base itself, or a copy of it: no lock needed) */
  for (int i = 0; i < c->size; i++) {
    int in = 0;
    for (int b = 0; b < pend.nbase && !in; b++)
      in = pend.g->world[b] == c->world[i];
    if (!in)
      return 0;
    found++;
  }
  rlx__engine_lock(&rt->engine);
  for (int b = 0; b < pend.nbase; b++) {
    int in = 0;
    for (int i = 0; i < c->size && !in; i++)
      in = c->world[i] == pend.g->world[b];
    if (!in && rlx__p2p_lost_reason(&rt->p2p, pend.g->world[b]) == NULL)
      found = -1;
  }
  rlx__engine_unlock(&rt->engine);
  return found == c->size;
}

/* The segment's memfd to joiner i (world rank w) when this rank has it
 * to send: 1 sent at an earlier look (or nothing to send), 0 not yet or
 * just now. A joiner maps and faults in the segment as soon as it has
 * it: counting it in only from the next look (a step later) leaves it
 * that step for it, rather than the admission's agreement waiting for it
 * (0.2-0.35 ms at 1 -> 2 ranks on 2 cores, where no other member waits
 * for the joiner's dial, which comes after its faulting-in). A joiner
 * that cannot be sent it is lost: it would wait for it. Under member_mtx
 * and the loop lock. */
static int offer_segment(int i, int w) {
  struct rlx__runtime *rt = &rlx__rt;
  if (!pend.sender || (pend.sent >> i & 1))
    return 1;
  int st = rlx__p2p_shm_state(&rt->p2p, w), rc;
  if (pend.memfd < 0)
    rc = pend.memfd; /* (the copy failed) */
  else if (st <= 0)
    rc = st == 0 ? -EAGAIN : -EPROTO; /* (its shared-memory ring not ready, or none) */
  else
    rc = rlx__p2p_send_fd(&rt->p2p, w, pend.memfd);
  if (rc == -EAGAIN)
    return 0;
  pend.sent |= 1ull << i;
  if (rc != 0) {
    char why[160];
    snprintf(why, sizeof why, "the shared segment could not be sent to joining rank %d: %s",
             pend.nbase + i, strerror(-rc));
    rlx__p2p_mark_lost(&rt->p2p, w, 0, why);
  }
  return rc != 0; /* (sent now: from the next look) */
}

/* Call up job rank w from a member's call, outside the loop: the progress
 * thread, asleep in poll() until an event of the handles it knew, is woken
 * to run it (libuv registers the new connection only then). */
static void call_up(int w) {
  rlx__p2p_dial(&rlx__rt.p2p, w);
  rlx__engine_kick(&rlx__rt.engine);
}

/* The admission's agreement exchanges with the ranks 1, 2, 4, ... before
 * and after this one in the grown communicator (Bruck's allgather, or
 * recursive doubling on a power of two): its members connect to those
 * now (the one of the higher job index dials, as every connection goes),
 * not in the agreement, where each connection cost ~0.15 ms on 16 cores;
 * 1 once all are connected (or lost). (Joiners dial every member anyway.)
 * Under member_mtx and the loop lock. */
static int neighbours_connected(void) {
  struct rlx__runtime *rt = &rlx__rt;
  int n = pend.g->size, r = pend.g->rank, all = 1;
  for (int d = 1; d < n; d *= 2)
    for (int sign = -1; sign <= 1; sign += 2) {
      int nb = ((r + sign * d) % n + n) % n, w = pend.g->world[nb];
      if (nb >= pend.nbase || rlx__p2p_connected(&rt->p2p, w) ||
          rlx__p2p_lost_reason(&rt->p2p, w) != NULL)
        continue;
      all = 0;
      if (w < rt->cfg.rank)
        call_up(w);
    }
  return all;
}

/* Has every joiner connected to this rank (or been lost)? (0 also when the
 * progress thread holds the loop's lock: this is asked every step, and
 * the answer may come a step later.) Joiners slow to connect are called
 * up (a dead one refuses: lost; a stopped one keeps the admission
 * waiting, not the job); one not connected RLX_TIMEOUT after its welcome
 * is given up. Under member_mtx. */
static int pending_connected(void) {
  struct rlx__runtime *rt = &rlx__rt;
  uint64_t now = rlx__now_ns();
  int dial = now - pend.t_welcome > 100000000ull && now - pend.t_dialed > 1000000000ull;
  int expired = rt->cfg.timeout_s > 0 && now - pend.t_welcome > (uint64_t)(rt->cfg.timeout_s * 1e9);
  if (!rlx__engine_trylock(&rt->engine))
    return 0; /* (the progress thread has the lock: look next time) */
  /* (the agreement's ring too: connected while the job goes on) */
  int all = neighbours_connected();
  for (int i = pend.nbase; i < pend.g->size; i++) {
    int w = pend.g->world[i];
    if (rlx__p2p_lost_reason(&rt->p2p, w) != NULL)
      continue;
    if (rlx__p2p_connected(&rt->p2p, w)) {
      if (!offer_segment(i - pend.nbase, w))
        all = 0;
      continue;
    }
    if (expired) {
      char why[160];
      snprintf(why, sizeof why, "joining rank %d did not connect within RLX_TIMEOUT (%g s) of "
               "its admission", i, rt->cfg.timeout_s);
      rlx__p2p_mark_lost(&rt->p2p, w, 1, why);
      continue;
    }
    all = 0;
    if (dial)
      call_up(w);
  }
  rlx__engine_unlock(&rt->engine);
  if (dial)
    pend.t_dialed = now;
  return all;
}

static void drop_pending(void) {
  struct rlx__runtime *rt = &rlx__rt;
  pthread_mutex_lock(&rt->member_mtx);
  rlx_comm_t *g = pend.g;
  pend.g = NULL;
  atomic_store(&rt->engine.wake_until, 0);
  if (pend.memfd >= 0)
    close(pend.memfd);
  pend.memfd = -1;
  pend.serial = 0;
  pend.sender = 0;
  pend.sent = 0;
  pthread_mutex_unlock(&rt->member_mtx);
  if (g != NULL) {
    rlx__comm_release(g);
    free(g);
  }
}

void rlx__grow_fini(void) { drop_pending(); }

/* Every member of the communicator the joiners were welcomed into
 * (base: its first nbase ranks, the members) is in s, the agreed one, in
 * front: only then does s take the members' segment over (alike on every
 * rank: base and s are). */
static int keeps_members(const rlx_comm_t *s, const int *base, int nbase) {
  return nbase > 0 && s->size > nbase &&
         memcmp(s->world, base, sizeof(int) * (size_t)nbase) == 0;
}

/* The second half: once every member has every joiner connected, all of
 * them (joiners too, whose rlx_init waits in it) agree on who is in. */
static int end_admission(rlx_comm_t *c, rlx_comm_t **out) {
  struct rlx__runtime *rt = &rlx__rt;
  pthread_mutex_lock(&rt->member_mtx);
  int32_t ready = 0, mine = pending_connected();
  pthread_mutex_unlock(&rt->member_mtx);
  int rc = rlx__comm_least(c, "rlx_comm_grow", mine, &ready, 0);
  if (rc != RLX_OK)
    return rc;
  if (!ready)
    return same_members(c, out);
  rlx_comm_t *s = NULL;
  /* (joiners' job indices are above every earlier rank's) */
  int admitted = pend.g->size - pend.nbase, first = pend.g->world[pend.nbase];
  uint64_t t0 = rlx__now_ns();
  /* (waiting as the grown job's ranks on this host may: a joiner that
   * makes them outnumber the cores needs them to yield) */
  retune(pend.g);
  /* The segment the joiners were sent, still c's? Then the agreement
   * also says whether every rank can take it over. */
  uint32_t can = pend.serial != 0 && rlx__comm_shm_offer(c, pend.g) == pend.serial;
  int *world = can ? malloc(sizeof(int) * (size_t)pend.g->size) : NULL;
  if ((can = world != NULL))
    rlx__shmg_mark_adopt(c->shm);
  rc = rlx__comm_agree(pend.g, "rlx_comm_grow", 0, &can, &s);
  int take = rc == RLX_OK && can && keeps_members(s, pend.g->world, pend.nbase);
  drop_pending();
  if (!take)
    free(world);
  if (rc != RLX_OK)
    return rc;
  int in = 0;
  for (int i = 0; i < s->size; i++)
    in += s->world[i] >= first;
  if (in < admitted)
    rlx__warn("rlx_comm_grow: %d of %d joining rank(s) left out: lost during their admission",
              admitted - in, admitted);
  if (take)
    rlx__comm_shm_take_over(s, c, NULL, world);
  take_scratch(c, s);
  rlx__set_last(c, s);
  retune(s); /* (the agreed communicator: without the ranks lost meanwhile) */
  rlx__info("rlx_comm_grow: %d joiner(s) admitted; %d ranks now (were %d), leader rank %d; "
            "agreement %.0f us", in, s->size, c->size, s->leader,
            (double)(rlx__now_ns() - t0) / 1e3);
  *out = s;
  return RLX_OK;
}

int rlx_comm_grow(rlx_comm_t *c, rlx_comm_t **out) {
  struct rlx__runtime *rt = &rlx__rt;
  if (out == NULL)
    return rlx__err(RLX_ERR_ARG, "rlx_comm_grow: out is NULL");
  *out = NULL;
  if (!rt->initialized || c == NULL)
    return rlx__err(c == NULL ? RLX_ERR_ARG : RLX_ERR_STATE, "rlx_comm_grow: %s",
                    c == NULL ? "communicator is NULL" : "rlx_init has not been called");
  /* A job that cannot grow (no RLX_MAX_NP, or launched through PMIx,
   * which has no rendezvous for joiners to reach) admits nobody: a dup.
   * (Job-wide settings: every member decides alike.) */
  if (rt->cfg.max_np <= 0 || rt->pmix)
    return rlx_comm_dup(c, out);
  if (c->revoked)
    return rlx__err(RLX_ERR_REVOKED, "rlx_comm_grow: the communicator was revoked: %s",
                    c->revoked_why);
  int took, rc = rlx__comm_take(c, "rlx_comm_grow", 1, &took), admitted = 0;
  uint64_t offer = 0, t[4] = {0, 0, 0, 0};
  if (rc != RLX_OK)
    return rc;
  rlx_comm_t *g = NULL;
  if (c->size > 1 && (rc = rlx__comm_shm(c)) < 0)
    goto out;
  if (pend.g != NULL) { /* an admission is under way: end it, or wait */
    rc = pending_fits(c) ? end_admission(c, &g) : same_members(c, &g);
    goto out;
  }
  /* The first half: take the joiners waiting now and welcome them; they
   * connect to every member while the job goes on in a communicator of
   * the same members, and a later call ends the admission. */
  rc = admit(c, &g, &admitted, &offer, t);
  if (rc != RLX_OK || admitted == 0)
    goto out;
  pthread_mutex_lock(&rt->member_mtx);
  pend.g = g;
  pend.nbase = c->size;
  pend.t_welcome = rlx__now_ns();
  /* (the joiners dial us while we compute: the progress thread answers) */
  atomic_store(&rt->engine.wake_until, pend.t_welcome + RLX__GROW_WAKE_NS);
  pend.t_dialed = 0;
  pend.serial = offer;
  pend.sent = 0;
  pend.sender = offer != 0 && c->rank == 0;
  pend.memfd = -1;
  /* (a segment with room keeps its memfd on rank 0; without a copy each
   * joiner is lost: it waits for the segment) */
  if (pend.sender && (pend.memfd = fcntl(c->shm->memfd, F_DUPFD_CLOEXEC, 0)) < 0)
    pend.memfd = -errno;
  pthread_mutex_unlock(&rt->member_mtx);
  g = NULL;
  rlx__info("rlx_comm_grow: %d joiner(s) welcomed; they connect while the job goes on "
            "(the rendezvous %.0f us, their cards to every member %.0f us, a barrier %.0f us, "
            "the welcome %.0f us)", admitted, (double)(t[1] - t[0]) / 1e3,
            (double)(t[2] - t[1]) / 1e3, (double)(t[3] - t[2]) / 1e3,
            (double)(rlx__now_ns() - t[3]) / 1e3);
  rc = same_members(c, &g);
out:
  /* the same members in the same order (nobody admitted now): the new
   * communicator takes over c's segment, alike on every member */
  if (rc == RLX_OK && g != NULL && g->size == c->size &&
      memcmp(g->world, c->world, sizeof(int) * (size_t)c->size) == 0) {
    rlx__comm_shm_hand_over(c, g);
    follow_last(c, g);
    take_scratch(c, g);
  }
  if (took)
    rlx__comm_give(c);
  if (rc < 0 && g != NULL) {
    rlx__comm_release(g);
    free(g);
    g = NULL;
  }
  *out = rc == RLX_OK ? g : NULL;
  return rc < 0 ? rc : RLX_OK;
}

int rlx_comm_joiners(const rlx_comm_t *c) {
  struct rlx__runtime *rt = &rlx__rt;
  if (c == NULL)
    return rlx__err(RLX_ERR_ARG, "rlx_comm_joiners: communicator is NULL");
  if (!rt->initialized)
    return rlx__err(RLX_ERR_STATE, "rlx_comm_joiners: rlx_init has not been called");
  if (rt->cfg.max_np <= 0 || rt->member.fd < 0)
    return 0;
  pthread_mutex_lock(&rt->member_mtx);
  int n = rlx__rdv_member_joiners(&rt->member), pending = -1;
  /* Welcomed joiners count once every one has connected here or is lost:
   * then a grow ends their admission. (Until then the job goes on, and
   * the ones slow to connect are called up.) */
  if (pend.g != NULL) {
    pending = pending_connected() ? pend.g->size - pend.nbase : 0;
  } else if (c->rank == c->leader) {
    /* The leader takes them now (the answer is read by a later look or
     * the grow) and counts them: the others hear that fewer wait. */
    ask_ahead(c, n);
    n += rt->member.asked + (rt->member.answered ? rt->member.ncards : 0);
  }
  pthread_mutex_unlock(&rt->member_mtx);
  if (pending >= 0)
    return pending;
  int room = rt->cfg.max_np - c->size;
  return n < room ? n : room > 0 ? room : 0;
}

int rlx_joined(void) { return rlx__rt.initialized && rlx__rt.joined; }

/* ---- the joiner's side ----------------------------------------------------- */

/* The welcome's members offering their segment (0: none); set once, by
 * rlx_init's admission, before any other thread of the library runs. */
static int joined_offer;

int rlx__join_admitted(struct rlx__runtime *rt, uint32_t index, const uint8_t *blk, size_t len,
                       int rdv_fd) {
  if (len < WELCOME_HEAD)
    return rlx__err(RLX_ERR_BOOTSTRAP, "the job's welcome is truncated");
  uint32_t id = rlx__get32(blk), max_np = rlx__get32(blk + 4), n = rlx__get32(blk + 8);
  uint32_t offered = rlx__get32(blk + 12);
  if (n == 0 || n > (1u << 20) || len != WELCOME_HEAD + (size_t)n * RLX__CARD_SIZE ||
      offered >= n)
    return rlx__err(RLX_ERR_BOOTSTRAP, "the job's welcome is malformed (%u ranks, %u members "
                    "offering their segment, %zu bytes)", n, offered, len);
  struct rlx__card *cards = calloc(n, sizeof(*cards));
  int *world = malloc(sizeof(int) * n), me = -1, rc;
  if (cards == NULL || world == NULL) {
    free(cards);
    free(world);
    return rlx__err(RLX_ERR_NOMEM, "no memory for the job's %u ranks", n);
  }
  if ((rc = decode_cards(blk + WELCOME_HEAD, (int)n, cards)) != RLX_OK)
    goto out;
  joined_offer = (int)offered;
  for (uint32_t i = 0; i < n; i++) {
    world[i] = (int)cards[i].rank;
    if (cards[i].rank == index)
      me = (int)i;
  }
  if (me < 0) {
    rc = rlx__err(RLX_ERR_BOOTSTRAP, "the job's welcome does not name this rank (%u)", index);
    goto out;
  }
  rt->cfg.rank = (int)index;
  rt->p2p.rank = (int)index;
  rlx__log_rank = (int)index;
  rt->cfg.max_np = (int)max_np;
  if ((rc = add_cards(rt, cards, (int)n)) != RLX_OK)
    goto out;
  memset(&rt->world, 0, sizeof(rt->world));
  rt->world.id = id;
  rt->world.rank = me;
  rt->world.size = (int)n;
  rt->world.world = world;
  world = NULL;
  rt->world.leader = rlx__elect(rt->world.world, rt->world.size);
  rlx__loop_lock_init(&rt->world.mtx);
  rt->joined = 1;
  if (max_np > 0 && rlx__rdv_member_start(&rt->member, rdv_fd) == 0)
    rdv_fd = -1;
out:
  if (rdv_fd >= 0)
    close(rdv_fd);
  free(cards);
  free(world);
  return rc;
}

/* A joiner connects to the world's ranks from..to-1 that came before it
 * (a later joiner connects to it). */
static void dial_below(struct rlx__runtime *rt, int from, int to) {
  rlx__engine_lock(&rt->engine);
  for (int i = from; i < to; i++)
    if (rt->world.world[i] < rt->cfg.rank)
      rlx__p2p_dial(&rt->p2p, rt->world.world[i]);
  rlx__engine_unlock(&rt->engine);
}

int rlx__join_confirm(void) {
  struct rlx__runtime *rt = &rlx__rt;
  rlx_comm_t *s = NULL;
  /* Connect to every member now: they end the admission once all their
   * joiners have (the job goes on meanwhile), and meet us in the
   * agreement. With the members' segment offered, to their rank 0 first:
   * it sends the segment once we are connected, and we map it and fault
   * it in before the others see us, so that no member waits for that in
   * the admission or in our first call. */
  int first = joined_offer > 0 ? 1 : rt->world.size;
  dial_below(rt, 0, first);
  /* The members' segment, sent by their rank 0 once we connected: mapped
   * now, while they go on; the agreement says whether all take it over. */
  struct rlx__shm_group *seg = joined_offer > 0
                                   ? rlx__comm_shm_receive(&rt->world, rt->world.world[0]) : NULL;
  if (seg != NULL)
    rlx__shmg_prefault(seg, rt->world.rank, rt->world.size);
  dial_below(rt, first, rt->world.size);
  int *world = seg != NULL ? malloc(sizeof(int) * (size_t)rt->world.size) : NULL;
  uint32_t can = world != NULL;
  int rc = rlx__comm_agree(&rt->world, "rlx_comm_grow", 0, &can, &s);
  if (rc != RLX_OK || !can || !keeps_members(s, rt->world.world, joined_offer)) {
    rlx__shmg_free(seg);
    seg = NULL;
    free(world);
  }
  if (rc != RLX_OK)
    return rc;
  /* the world becomes the agreed communicator */
  free(rt->world.world);
  memset(&rt->world, 0, sizeof(rt->world));
  rt->world.id = s->id;
  rt->world.rank = s->rank;
  rt->world.size = s->size;
  rt->world.world = s->world;
  rt->world.leader = s->leader;
  rlx__loop_lock_init(&rt->world.mtx);
  s->world = NULL;
  rlx__comm_release(s);
  free(s);
  if (seg != NULL)
    rlx__comm_shm_take_over(&rt->world, NULL, seg, world);
  rlx__comm_take_reserve(rt, &rt->world);
  rlx__set_last(NULL, &rt->world);
  retune(&rt->world);
  rlx__info("joined the job as rank %d of %d (job index %d), leader rank %d", rt->world.rank,
            rt->world.size, rt->cfg.rank, rt->world.leader);
  return RLX_OK;
}
