/* When a communicator gets a shared segment for its collectives: every
 * member on this host, shared memory allowed (RLX_TRANSPORT auto or shm,
 * RLX_SHM_COLL not off), at its first collective, blocking or not (all
 * members make that call, so all set the segment up at the same point;
 * only blocking calls then run in it). The decision is the same on every
 * rank; the setup agrees on the outcome. */
#include <stdlib.h>
#include <string.h>
#include "coll/shm_group.h"
#include "runtime/runtime.h"

static int shm_allowed(const rlx_comm_t *c) {
  const struct rlx__runtime *rt = &rlx__rt;
  if (!rt->cfg.shm_coll || !rt->p2p_up)
    return 0;
  for (int r = 0; r < c->size; r++) /* frames to each go through this host's memory */
    if (!rlx__p2p_in_memory(&rt->p2p, c->world[r]))
      return 0;
  return 1;
}

static int eligible(const rlx_comm_t *c) { return c->size >= 2 && shm_allowed(c); }

/* Every member's ok, the least of them. */
static int agree(void *ctx, int *ok) {
  int32_t all = 0;
  int rc = rlx__comm_least(ctx, "rlx_comm (shared segment)", *ok, &all, 1);
  *ok = rc == RLX_OK && all != 0;
  return rc;
}

int rlx__comm_least(rlx_comm_t *c, const char *call, int32_t mine, int32_t *least,
                    int internal) {
  struct rlx__op op;
  rlx__internal_op(&op, RLX__CK_COMM, call, RLX_INT32, 1, &mine, least,
                   rlx__comm_internal_algo(c, RLX__CK_ALLREDUCE, sizeof mine, &rlx__allreduce_rd));
  op.rop = RLX_MIN;
  if (internal)
    op.seq = RLX__SEQ_INTERNAL | c->internal_seq++;
  *least = mine;
  return c->size > 1 ? rlx__run_op(c, &op) : RLX_OK;
}

const struct rlx__algo *rlx__comm_internal_algo(const rlx_comm_t *c, int kind, size_t bytes,
                                                const struct rlx__algo *p2p) {
  const struct rlx__algo *a =
      rlx__comm_in_shm(c) ? rlx__select_shm(kind, bytes, c->size, NULL) : NULL;
  return a != NULL ? a : p2p;
}

/* The ranks a new segment's layout holds: RLX_MAX_NP in a job that may
 * grow (up to RLX__SHMG_CAP_MAX), so that the grown communicator can take
 * the segment over (rlx__comm_shm_take_over); else the communicator's size.
 * Job-wide settings: the same on every rank, joiners too. */
static int layout_cap(int n) {
  const struct rlx__runtime *rt = &rlx__rt;
  int m = rt->cfg.max_np;
  return m > n && m <= RLX__SHMG_CAP_MAX && !rt->pmix ? m : n;
}

static uint64_t setup_deadline(const rlx_comm_t *c) {
  return rlx__comm_deadline(c, rlx__now_ns(), NULL);
}

int rlx__comm_in_shm(const rlx_comm_t *c) { return c->shm != NULL && c->size > 1; }

/* c's segment made (rank 0) or taken, laid out for layout_cap ranks: the
 * members' agreement's error, else 0 (c->shm NULL: none). */
static int make_segment(rlx_comm_t *c) {
  struct rlx__runtime *rt = &rlx__rt;
  int err = 0;
  c->shm = rlx__shmg_setup(&rt->engine, &rt->p2p, c->id, c->world, c->size, c->rank,
                           layout_cap(c->size), setup_deadline(c), agree, c, &err);
  c->shm_state = c->shm != NULL ? 1 : -1;
  return err;
}

/* rlx__comm_shm's first call on c (out of line: every later call of c
 * only reads the state it leaves) */
__attribute__((noinline)) static int shm_first(rlx_comm_t *c) {
  if (!eligible(c)) {
    c->shm_state = -1;
    return 0;
  }
  int err = make_segment(c);
  if (err != 0)
    return err;
  /* (2 ranks of a job that may grow: large allreduces run point to point
   * here and never touch the slots or the result; the grown
   * communicator's first one would fault them in, 2 -> 3 ranks: the
   * members' part of the admission step's first allreduce, 260-320 us
   * against 190-230 in the steps after, 16 cores) */
  int made = c->shm != NULL && c->size == 2 && c->shm->cap > 2;
  if (made)
    rlx__shmg_touch_own(c->shm, 1);
  rlx__info("communicator %u: %d ranks, collectives %s%s", c->id, c->size,
            c->shm ? "in shared memory" : "point to point (no shared segment)",
            made ? "; its slots and result made for the ranks it may grow to" : "");
  return c->shm != NULL;
}

int rlx__comm_shm(rlx_comm_t *c) { return c->shm_state != 0 ? rlx__comm_in_shm(c) : shm_first(c); }

int rlx__comm_shm_solo(rlx_comm_t *c) {
  if (c->size != 1 || c->shm_state > 0 || layout_cap(1) < 2 || !shm_allowed(c))
    return c->shm_state > 0;
  (void)make_segment(c); /* (one rank: no agreement to fail) */
  if (c->shm == NULL)
    return 0;
  rlx__shmg_touch_own(c->shm, 0);
  rlx__info("communicator %u: 1 rank, a shared segment for up to %d ready for joiners", c->id,
            layout_cap(1));
  return 1;
}

struct rlx__shm_group *rlx__comm_shm_receive(const rlx_comm_t *c, int from) {
  struct rlx__runtime *rt = &rlx__rt;
  if (!eligible(c))
    return NULL;
  return rlx__shmg_receive(&rt->engine, &rt->p2p, from, c->world, c->size, c->rank,
                           layout_cap(c->size), setup_deadline(c));
}

uint64_t rlx__comm_shm_offer(const rlx_comm_t *c, const rlx_comm_t *grown) {
  const struct rlx__shm_group *g = c->shm_state > 0 ? c->shm : NULL;
  return g != NULL && g->cap >= grown->size && g->n == c->size && g->me == c->rank &&
                 eligible(grown)
             ? g->serial
             : 0;
}

void rlx__comm_shm_take_over(rlx_comm_t *s, rlx_comm_t *from, struct rlx__shm_group *joined,
                             int *world) {
  struct rlx__shm_group *g = from != NULL ? from->shm : joined;
  memcpy(world, s->world, sizeof(int) * (size_t)s->size);
  rlx__shmg_take_over(g, from != NULL, s->id, world, s->size, s->rank);
  s->shm = g;
  s->shm_state = 1;
  if (from != NULL) {
    from->shm = NULL;
    from->shm_state = -1;
    rlx__info("communicator %u: %d ranks, collectives in the shared segment of communicator %u "
              "(taken over)", s->id, s->size, from->id);
  } else {
    rlx__info("communicator %u: %d ranks, collectives in the job's shared segment (taken over)",
              s->id, s->size);
  }
}

void rlx__comm_shm_free(rlx_comm_t *c) {
  rlx__shmg_free(c->shm);
  c->shm = NULL;
  c->shm_state = 0;
}

/* rlx_comm_grow returns a communicator of the same members in the same
 * order when it admits nobody (or an admission is under way), at a step
 * boundary where a program swaps communicators every step: a segment of
 * its own would cost its set-up and the faults of its first touch each
 * time (~75-300 us here). It takes over c's instead, with c's numbering of
 * calls (a line's record of a point-to-point call names a seq, which must
 * not come round again in the segment), and c goes on point to point.
 * Every member does this in the same call, so all agree where each
 * communicator's calls run. */
void rlx__comm_shm_hand_over(rlx_comm_t *c, rlx_comm_t *to) {
  struct rlx__runtime *rt = &rlx__rt;
  to->seq = c->seq;
  to->internal_seq = c->internal_seq;
  if (c->shm == NULL || to->shm_state != 0)
    return;
  rlx__engine_lock(&rt->engine); /* (the loop looks groups up by id) */
  c->shm->comm_id = to->id;
  rlx__engine_unlock(&rt->engine);
  to->shm = c->shm;
  to->shm_state = 1;
  c->shm = NULL;
  c->shm_state = -1;
}
