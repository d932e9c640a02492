/* The round executor: drives any algorithm described as rounds of
 * concurrent transfers followed by local work (reduce, average, copy);
 * operations begin, end and are waited on here. How failures become
 * errors that name the call and the ranks, and what is remembered of
 * them, is exec_fail.c's. */
#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "engine/engine.h"
#include "base/internal.h"
#include "observe/observe.h"
#include "coll.h"
#include "shm_group.h"
#include "exec_internal.h"


void rlx__exec_describe(const struct rlx__op *op, char *buf, size_t len) {
  struct rlx__call c = {op->kind, (int)op->dt, (int)op->rop, op->root, op->count};
  rlx__call_describe(buf, len, op->call, &c);
}

/* Operations in flight, under the engine's loop lock. */
struct rlx__list rlx__exec_active = {&rlx__exec_active, &rlx__exec_active};

int rlx__exec_in_flight(void) { return !rlx__list_empty(&rlx__exec_active); }



static void settle_closed(uv_handle_t *h) { free(h); }

uint64_t rlx__op_now(const struct rlx__op *op) {
  return op->coarse_clock ? rlx__tick_ceil_ns() : rlx__now_ns();
}

/* The call's end, once no receiver may read its buffers any more. */
__attribute__((always_inline)) static inline void complete(struct rlx__op *op) {
  if (op->active.next != NULL) {
    rlx__list_remove(&op->active);
    op->active.next = op->active.prev = NULL;
  }
  rlx__exec_bump(&op->progress);
  if (op->on_done)
    op->on_done(op);
  /* (op is the caller's again once done is set: read nothing of it after) */
  struct rlx__engine *e = op->engine;
  atomic_store_explicit(&op->done, 1, memory_order_release);
  if (e != NULL) /* a caller sleeping until another drives */
    rlx__engine_notify(e);
}

/* Receivers that never acknowledged: dropped (their connection closed:
 * none can read the buffer once the call is done); the call is done. */
static void drop_unacked(struct rlx__op *op) {
  for (int l = 0; l < op->nlanes; l++)
    for (int i = 0; i < RLX__ROUND_MAX; i++)
      if (op->lane[l].active[i]) {
        rlx__p2p_cancel(op->p2p, &op->lane[l].xf[i]);
        op->lane[l].active[i] = 0;
      }
  op->draining = 0;
  complete(op);
}

/* RLX__DRAIN_MS passed before every acknowledgement came. */
static void drain_expired(uv_timer_t *t) {
  struct rlx__op *op = t->data;
  uv_close((uv_handle_t *)t, settle_closed);
  op->drain = NULL;
  drop_unacked(op);
}

/* A round-based call's transfers at its end: cancelled, but a send by
 * reference whose receiver may be reading the buffer right now: the call
 * waits for its acknowledgement (a receiver reads a collective's frame as
 * it comes, into the receive or, early, a buffer of its own, then
 * acknowledges; only a stopped or hung one keeps it waiting), where
 * cancelling it had to drop the peer, and a revocation then lost ranks
 * that were alive. 1 when the call is done later (drain_expired or the
 * last acknowledgement), 0 when it completes now. */
static int withdraw(struct rlx__op *op, int status) {
  for (int l = 0; l < op->nlanes; l++) {
    struct rlx__lane *ln = &op->lane[l];
    for (int i = 0; i < RLX__ROUND_MAX; i++) {
      if (!ln->active[i])
        continue;
      if (rlx__p2p_ref_unacked(&ln->xf[i]) && op->p2p->loop != NULL) {
        op->draining++;
        continue;
      }
      rlx__p2p_cancel(op->p2p, &ln->xf[i]);
      ln->active[i] = 0;
    }
  }
  if (op->draining == 0)
    return 0;
  rlx__debug("%s ended (%s) with %d send(s) by reference unacknowledged: done once their "
             "receivers acknowledge", op->call, rlx_strerror(status), op->draining);
  if ((op->drain = malloc(sizeof(*op->drain))) != NULL) {
    uv_timer_init(op->p2p->loop, op->drain);
    op->drain->data = op;
    uv_timer_start(op->drain, drain_expired, RLX__DRAIN_MS, 0);
  } else { /* (no memory for the timer: drop them now) */
    drop_unacked(op);
  }
  return 1;
}

void rlx__exec_finish(struct rlx__op *op, int status) {
  if (op->finished)
    return;
  if (op->nlanes > 0) /* round-based: under the loop lock (a shared-memory
                       * call finishes on its own thread, and exchanges no
                       * frames to look back at) */
    rlx__exec_remember_done(op);
  op->finished = 1;
  op->status = status;
  if (op->t_done == 0) /* (else the caller's: start's for a short call in the segment) */
    op->t_done = rlx__op_now(op);
  if (op->settle) {
    uv_timer_stop(op->settle);
    uv_close((uv_handle_t *)op->settle, settle_closed);
    op->settle = NULL;
  }
  /* (a call in the shared segment has no lanes: straight to complete, no
   * walk or drain tests, ~20 of a 2-rank 8-byte call's ~1,000
   * instructions on every rank) */
  if (op->nlanes > 0 && withdraw(op, status))
    return;
  complete(op);
}


static void advance(struct rlx__op *op, int l);

/* A lane's pending count while its round's transfers are being posted:
 * a transfer that completes during the posting (from its callback) then
 * cannot bring the count to zero and advance the lane under our feet. */
#define POSTING (1 << 20)

static int lane_of(const struct rlx__op *op, const struct rlx__xfer *x) {
  for (int l = 0; l < op->nlanes; l++)
    if (x >= op->lane[l].xf && x < op->lane[l].xf + RLX__ROUND_MAX)
      return l;
  return 0;
}

/* RLX_TRACE: how long this transfer of a round waited on its peer. */
static void trace_wait(const struct rlx__op *op, int l, int i) {
  const struct rlx__lane *ln = &op->lane[l];
  char name[48], args[128];
  snprintf(name, sizeof(name), "%s rank %d", ln->round.x[i].send ? "send to" : "recv from",
           ln->round.x[i].peer);
  snprintf(args, sizeof(args), "\"comm\":%u,\"seq\":%llu,\"round\":%d,\"bytes\":%zu,\"ok\":%d",
           op->comm_id, (unsigned long long)op->seq, ln->k, ln->round.x[i].len,
           ln->xf[i].status == RLX_OK);
  rlx__trace_span(RLX__TRACK_XFER(l, i), "wait", name, ln->posted[i], rlx__now_ns(), args);
}

static void xfer_done(struct rlx__xfer *x) {
  struct rlx__op *op = x->owner;
  int l = lane_of(op, x);
  struct rlx__lane *ln = &op->lane[l];
  ln->active[x - ln->xf] = 0;
  if (RLX__TRACING() && ln->posted[x - ln->xf] && !(op->seq & RLX__SEQ_INTERNAL))
    trace_wait(op, l, (int)(x - ln->xf));
  if (op->finished) {
    /* a send the call's end waited for: acknowledged (or its peer lost) */
    if (op->draining > 0 && --op->draining == 0) {
      if (op->drain) {
        uv_timer_stop(op->drain);
        uv_close((uv_handle_t *)op->drain, settle_closed);
        op->drain = NULL;
      }
      complete(op);
    }
    return;
  }
  assert(ln->pending > 0 && !ln->finished);
  if (x->status != RLX_OK) {
    rlx__exec_fail_xfer(op, x);
    return;
  }
  int slot = (int)(x - ln->xf), from = ln->round.x[slot].peer;
  if (!ln->round.x[slot].send && from >= 0 && from < 256)
    op->heard[from / 8] |= (uint8_t)(1u << (from % 8));
  rlx__exec_bump(&op->progress);
  if (--ln->pending == 0)
    advance(op, l);
}

/* Run lane l forward until it waits on a transfer or has no more rounds. */
static void advance(struct rlx__op *op, int l) {
  struct rlx__lane *ln = &op->lane[l];
  for (;;) {
    if (op->finished || ln->finished)
      return;
    if (ln->k >= 0)
      rlx__round_work(op, &ln->round);
    ln->k++;
    memset(&ln->round, 0, sizeof(ln->round));
    if (!op->algo->round(op, l, ln->k, &ln->round)) {
      ln->finished = 1;
      if (--op->lanes_left == 0)
        rlx__exec_finish(op, RLX_OK);
      return;
    }
    if (ln->round.n == 0 && ln->round.skip_to > ln->k + 1)
      ln->k = ln->round.skip_to - 1;
    int pending = 0;
    assert(ln->round.n >= 0 && ln->round.n <= RLX__ROUND_MAX);
    ln->pending = POSTING;
    uint64_t t_post = RLX__TRACING() && l < RLX__LANES_MAX ? rlx__now_ns() : 0;
    for (int i = 0; i < ln->round.n; i++) {
      struct rlx__xfer *x = &ln->xf[i];
      ln->posted[i] = t_post;
      memset(&x->hdr, 0, sizeof(x->hdr));
      x->peer = op->world[ln->round.x[i].peer];
      memcpy(x->hdr.sig, op->sig, RLX__SIG_SIZE);
      x->hdr.comm_id = op->comm_id;
      x->hdr.seq = op->seq;
      /* unique within the operation: lanes interleave their rounds */
      x->hdr.segment = (uint32_t)(ln->k * op->nlanes + l);
      x->buf = ln->round.x[i].buf;
      x->len = ln->round.x[i].len;
      x->cb = xfer_done;
      x->owner = op;
      x->status = RLX_OK;
      int now = ln->round.x[i].send ? rlx__p2p_send(op->p2p, x) : rlx__p2p_recv(op->p2p, x);
      if (now) {
        if (x->status != RLX_OK) {
          rlx__exec_fail_xfer(op, x);
          return;
        }
      } else {
        ln->active[i] = 1;
        pending++;
      }
    }
    ln->pending = pending;
    if (pending > 0)
      return;
  }
}


void rlx__exec_sign(struct rlx__op *op) {
  struct rlx__call call = {op->kind, (int)op->dt, (int)op->rop, op->root,
                           rlx__call_counted(op->kind) ? op->count : 0};
  rlx__call_encode(&call, op->sig);
}

/* What every operation does first: its signature, its outcome cleared. */
static void ready(struct rlx__op *op) {
  rlx__exec_sign(op);
  op->finished = 0;
  op->status = RLX_OK;
  op->msg[0] = '\0';
  op->active.next = op->active.prev = NULL;
  op->settle = NULL;
  memset(op->heard, 0, sizeof(op->heard));
  /* relaxed: the op reaches the progress thread under the loop lock, or
   * never (a blocking call in a shared segment); a sequentially
   * consistent store is a locked instruction, which waits for every store
   * before it: the last call's arrival in the segment, whose line the
   * other ranks were reading (a cross-core round trip, every call) */
  atomic_store_explicit(&op->done, 0, memory_order_relaxed);
}

void rlx__exec_start(struct rlx__op *op) {
  if (op->nlanes < 1 || op->nlanes > RLX__LANES_MAX)
    op->nlanes = 1;
  ready(op);
  /* only the lanes it uses (each 2 KiB: all four were a tenth of a small
   * call's own time) */
  memset(op->lane, 0, sizeof(op->lane[0]) * (size_t)op->nlanes);
  if (rlx__exec_take_early(op))
    return;
  rlx__list_push(&rlx__exec_active, &op->active);
  struct rlx__frame_hdr early_h;
  int from = rlx__p2p_early_mismatch(op->p2p, op->comm_id, op->seq, op->sig, &early_h);
  if (from >= 0) { /* a partner called something else and sent first */
    rlx__exec_fail_mismatch(op, from, early_h.sig);
    return;
  }
  op->lanes_left = op->nlanes;
  for (int l = 0; l < op->nlanes; l++)
    op->lane[l].k = -1;
  for (int l = 0; l < op->nlanes && !op->finished; l++)
    advance(op, l);
}

int rlx__exec_begin(struct rlx__op *op, struct rlx__engine *e) {
  op->nlanes = 0; /* no transfers of ours to withdraw */
  op->lanes_left = 0;
  ready(op);
  return rlx__exec_claim_abort(op, e);
}



void rlx__exec_end(struct rlx__op *op, int status, const char *msg) {
  if (op->finished)
    return;
  if (msg != NULL)
    snprintf(op->msg, sizeof(op->msg), "%s", msg);
  rlx__exec_finish(op, status);
}


void rlx__exec_waiting_for(uint32_t comm_id, uint64_t seq, char *buf, size_t len) {
  buf[0] = '\0';
  for (struct rlx__list *l = rlx__exec_active.next; l != &rlx__exec_active; l = l->next) {
    struct rlx__op *op = rlx__container_of(l, struct rlx__op, active);
    if (op->comm_id == comm_id && op->seq == seq) {
      rlx__exec_waiting_on(op, buf, len);
      return;
    }
  }
  rlx__shmg_waiting_for(comm_id, seq, buf, len); /* a call in a shared segment */
}

void rlx__exec_waiting_on(const struct rlx__op *op, char *buf, size_t len) {
  size_t used = 0;
  buf[0] = '\0';
  for (int l = 0; l < op->nlanes; l++) {
    const struct rlx__lane *ln = &op->lane[l];
    for (int i = 0; i < ln->round.n && i < RLX__ROUND_MAX; i++) {
      if (!ln->active[i])
        continue;
      int peer = ln->round.x[i].peer;
      int heard = peer >= 0 && peer < 256 && (op->heard[peer / 8] & (1u << (peer % 8)));
      /* Nothing at all from it in this call means it has not entered the
       * call, or waits in it on someone else; which one, only that rank
       * knows: the flight recorder (rlxrun's table) says. */
      int n = snprintf(buf + used, len - used, "%srank %d (%s)", used ? ", " : "", peer,
                       ln->round.x[i].send ? "not reading what we send"
                       : heard || peer >= 256 ? "nothing received for this step"
                                              : "nothing received from it in this call");
      if (n < 0 || (size_t)n >= len - used)
        return;
      used += (size_t)n;
    }
  }
}
