/* The public collectives, blocking and nonblocking: validate the call,
 * pick the algorithm, start the operation on the progress engine, wait for
 * it with its deadline, and turn a failure into an error that names the
 * ranks and the call. */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "base/fastdiv.h"
#include "base/hash.h"
#include "base/tuning.h"
#include "coll/shm_group.h"
#include "observe/observe.h"
#include "runtime/calls.h"

/* check_comm's refusal (calls.h), out of line with the revocation
 * reason's buffer: RLX_OK when what it looked at was another
 * communicator's revocation. */
__attribute__((cold)) int rlx__call_comm_refused(const char *call, rlx_comm_t *c) {
  if (!rlx__rt.initialized)
    return rlx__err(RLX_ERR_STATE, "%s: rlx_init has not been called", call);
  if (c == NULL)
    return rlx__err(RLX_ERR_ARG, "%s: communicator is NULL", call);
  if (c->revoked)
    return rlx__err(RLX_ERR_REVOKED, "%s: the communicator was revoked by an earlier error: %s",
                    call, c->revoked_why);
  char why[600];
  if (rlx__exec_revoked(c->id, why, sizeof(why)))
    return rlx__err(RLX_ERR_REVOKED, "%s: %s", call, why);
  return RLX_OK;
}

int rlx__refused(rlx_comm_t *c, int rc) {
  struct rlx__runtime *rt = &rlx__rt;
  if (rc != RLX_ERR_ARG || c == NULL || !rt->initialized || !rt->p2p_up || c->revoked ||
      c->size < 2)
    return rc;
  char own[480], why[600];
  snprintf(own, sizeof(own), "%s", rlx_errmsg());
  snprintf(why, sizeof(why), "rank %d's call failed its argument check: %s", c->rank, own);
  /* the segment is made at the first call, refused or not: the others
   * may be making it now (its error, if any, is not this call's) */
  int took;
  if (rlx__comm_take(c, "", 1, &took) != RLX_OK)
    return rlx__err(rc, "%s", own);
  int shm = rlx__comm_shm(c);
  if (took)
    rlx__comm_give(c);
  if (shm < 0)
    return rlx__err(rc, "%s", own);
  rlx__comm_lock(c);
  uint64_t seq = c->seq++;
  rlx__comm_unlock(c);
  static const uint8_t none[RLX__SIG_SIZE];
  rlx__engine_lock(&rt->engine);
  rlx__exec_refused(c->id, seq);
  rlx__exec_abort_members(&rt->p2p, c->world, c->size, c->rank, c->id, seq, none,
                          RLX_ERR_MISMATCH, why, -1);
  rlx__engine_unlock(&rt->engine);
  return rlx__err(rc, "%s", own);
}

/* The call is over (or failed on its way): what it took goes back. */
static void give_back(rlx_comm_t *c, struct rlx__op *op) {
  if (op->comm_taken)
    rlx__comm_give(c);
  op->comm_taken = 0;
}

__attribute__((cold)) int rlx__call_type_refused(const char *call, rlx_dtype_t dt, size_t count) {
  if ((unsigned)dt >= RLX_DTYPE_COUNT)
    return rlx__err(RLX_ERR_ARG, "%s: unknown dtype %d", call, (int)dt);
  return rlx__err(RLX_ERR_ARG, "%s: count %zu is too large", call, count);
}

static int check_op(const char *call, rlx_op_t op, rlx_dtype_t dt) {
  if ((unsigned)op >= RLX_OP_COUNT)
    return rlx__err(RLX_ERR_ARG, "%s: unknown op %d", call, (int)op);
  if (op == RLX_AVG && !rlx__dtype_is_float(dt))
    return rlx__err(RLX_ERR_ARG, "%s: RLX_AVG needs a floating dtype, not %s", call,
                    rlx_dtype_name(dt));
  if ((op == RLX_BAND || op == RLX_BOR || op == RLX_BXOR) && rlx__dtype_is_float(dt))
    return rlx__err(RLX_ERR_ARG, "%s: RLX_%s needs an integer dtype, not %s", call,
                    op == RLX_BAND ? "BAND" : op == RLX_BOR ? "BOR" : "BXOR", rlx_dtype_name(dt));
  return RLX_OK;
}

__attribute__((cold)) int rlx__call_root_refused(const char *call, int root, rlx_comm_t *c) {
  return rlx__err(RLX_ERR_ARG, "%s: root %d is not a rank of this communicator (size %d)", call,
                  root, c->size);
}

/* RLX_IN_PLACE goes in sendbuf only (or rlx_reduce's on the root): as a
 * destination it is no buffer at all. */
uint32_t rlx__call_counts_hash(const size_t *counts, int p, size_t *total) {
  uint32_t h = RLX__FNV_START;
  *total = 0;
  for (int i = 0; i < p; i++) {
    *total += counts[i];
    h = rlx__fnv1a(h, counts[i], 8);
  }
  return h;
}

int rlx__call_not_in_place(const char *call, const char *name, const void *buf) {
  if (buf == RLX_IN_PLACE)
    return rlx__err(RLX_ERR_ARG, "%s: %s cannot be RLX_IN_PLACE (only sendbuf can)", call, name);
  return RLX_OK;
}

static int grow(void **buf, size_t *cap, size_t len) {
  if (len <= *cap)
    return RLX_OK;
  void *p = realloc(*buf, len);
  if (p == NULL)
    return rlx__err(RLX_ERR_NOMEM, "no memory for %zu bytes of scratch", len);
  *buf = p;
  *cap = len;
  return RLX_OK;
}

/* Say at RLX_LOG=info which algorithm a collective uses, each time the
 * choice changes (per kind, so rlx_iallreduce and rlx_allreduce share). */
static void note_choice(const struct rlx__op *op, size_t bytes, int n) {
  static const struct rlx__algo *_Atomic last[RLX__CK_MAX + 1];
  if (op->kind > 0 && op->kind <= RLX__CK_MAX &&
      atomic_load_explicit(&last[op->kind], memory_order_relaxed) != op->algo &&
      atomic_exchange(&last[op->kind], op->algo) != op->algo)
    rlx__info("%s: %zu bytes on %d ranks: %s", op->call, bytes, n, op->algo->name);
}

/* blocking: the call may run in the communicator's shared segment. */
int rlx__call_pick(struct rlx__op *op, rlx_comm_t *c, size_t bytes, const char *forced,
                int blocking) {
  int rc = rlx__comm_take(c, op->call, blocking, &op->comm_taken);
  if (rc != RLX_OK)
    return rc;
  /* Every rank makes the segment at its first collective, blocking or not
   * (a nonblocking one waits for that once), so that all do it at the
   * same call whatever they call; only blocking calls run in it. */
  int shm = rlx__comm_shm(c);
  if (shm < 0) {
    give_back(c, op);
    return shm;
  }
  op->algo = shm && blocking ? rlx__select_shm(op->kind, bytes, c->size, forced) : NULL;
  if (op->algo == NULL)
    op->algo = rlx__select(op->kind, bytes, c->size, forced);
  if (op->algo == NULL) {
    give_back(c, op);
    char names[160];
    return rlx__err(RLX_ERR_ARG, "%s: no algorithm \"%s\" (try %s)", op->call, forced,
                    rlx__algo_names(op->kind, names, sizeof(names)));
  }
  note_choice(op, bytes, c->size);
  return RLX_OK;
}

static void widen(struct rlx_request *rq) {
  size_t n = rq->op.count;
  if (rq->op.dt == RLX_FLOAT16)
    rlx__f16_to_f32_n(rq->out, rq->op.dst, n);
  else
    rlx__bf16_to_f32_n(rq->out, rq->op.dst, n);
}

/* Start rq->op on c. Blocking calls keep c->mtx until rlx__finish. */
static int start(rlx_comm_t *c, struct rlx_request *rq) {
  struct rlx__runtime *rt = &rlx__rt;
  struct rlx__op *op = &rq->op;
  int rc, took = 0;
  if (!op->comm_taken && (rc = rlx__comm_take(c, op->call, !rq->nonblocking, &took)) != RLX_OK)
    return rc;
  op->comm_taken |= took;
  rlx__comm_lock(c);
  rq->comm = c;
  op->p2p = &rt->p2p;
  op->engine = &rt->engine;
  op->world = c->world;
  op->rank = c->rank;
  op->size = c->size;
  op->comm_id = c->id;
  op->parent_comm = c->parent_id;
  op->parent_seq = c->parent_seq;
  if (!(op->seq & RLX__SEQ_INTERNAL)) /* (the library's own calls bring theirs) */
    op->seq = c->seq++;
  op->coarse_clock = !RLX__TRACING() && !RLX__STATS_ON();
  op->t_start = rlx__op_now(op);
  op->ticket = rlx__flight_enter(op->comm_id, op->seq, op->kind, op->call, op->dt, op->rop,
                                 op->root, op->count, op->algo->name, op->t_start);
  size_t need = op->algo->setup(op);
  if (rq->nonblocking) {
    rq->scratch = need ? malloc(need) : NULL;
    if (need && rq->scratch == NULL)
      rc = rlx__err(RLX_ERR_NOMEM, "%s: no memory for %zu bytes of scratch", op->call, need);
    else
      rc = RLX_OK;
    op->tmp = rq->scratch;
    op->tmp_len = need;
  } else {
    rc = grow(&c->scratch, &c->scratch_len, need);
    op->tmp = c->scratch;
    op->tmp_len = c->scratch_len;
  }
  if (rc != RLX_OK) {
    rlx__flight_leave(op->ticket, rc, rlx__now_ns());
    rlx__comm_unlock(c);
    give_back(c, op);
    return rc;
  }
  rq->deadline = rlx__comm_deadline(c, op->t_start, &op->deadline_from);
  op->deadline = rq->deadline;
  if (op->algo->run != NULL) { /* in the shared segment, on this thread */
    op->shm = c->shm;
    uint64_t step = c->shm->step;
    /* an ABORT that came first fails it at once */
    rc = rlx__exec_begin(op, &rt->engine) ? op->status : op->algo->run(op);
    if (rc == RLX_OK && op->coarse_clock && !op->waited && c->shm->step - step <= 1)
      op->t_done = op->t_start; /* (coll.h: within the tick it started in) */
    char msg[160];
    if (rc != RLX_OK) /* (the algorithm's own message, when it ended the call, stays) */
      snprintf(msg, sizeof(msg), "%s failed in shared memory on rank %d", op->call, op->rank);
    rlx__exec_end(op, rc, rc != RLX_OK ? msg : NULL);
    return RLX_OK;
  }
  if (rlx__comm_in_shm(c)) { /* blocking calls of other ranks wait for ours in the segment */
    rlx__exec_sign(op);
    rlx__shmg_p2p_call(c->shm, op->seq, op->sig);
  }
  rlx__engine_lock(&rt->engine);
  rlx__exec_start(op);
  if (rq->nonblocking) /* let the loop register what the start asked for (rings too: rlx_test) */
    rlx__engine_turn(&rt->engine);
  rlx__engine_unlock(&rt->engine);
  if (rq->nonblocking && atomic_load_explicit(&rt->engine.beside, memory_order_relaxed))
    rlx__engine_kick(&rt->engine); /* it polls while the call is in flight */
  if (rq->nonblocking)
    rlx__comm_unlock(c);
  return RLX_OK;
}

_Static_assert(RLX__CK_MAX < RLX__STATS_KINDS, "RLX_STATS keeps a row for every kind of call");

/* RLX_TRACE and RLX_STATS hear of a call of the program's that is over. */
static void tell(uint32_t comm_id, uint64_t seq, int kind, const char *call, size_t count,
                 rlx_dtype_t dt, size_t bytes, const char *algo, int rc, uint64_t t0,
                 uint64_t t1) {
  if (RLX__TRACING()) {
    char args[256];
    snprintf(args, sizeof(args),
             "\"comm\":%u,\"seq\":%llu,\"count\":%zu,\"dtype\":\"%s\",\"bytes\":%zu,"
             "\"algorithm\":\"%s\",\"status\":\"%s\"",
             comm_id, (unsigned long long)seq, count, rlx_dtype_name(dt), bytes, algo,
             rc == RLX_OK ? "ok" : rlx__err_name(rc));
    rlx__trace_span(RLX__TRACK_CALLS, "collective", call, t0, t1, args);
  }
  if (RLX__STATS_ON() && kind != RLX__CK_FINALIZE)
    rlx__stats_call(kind, rlx__call_name(kind), bytes, algo, t1 - t0, rc);
}

/* The call is over: the flight recorder, RLX_TRACE and RLX_STATS hear of it;
 * a failure writes the flight recorder when RLX_FLIGHT_DUMP=error. */
static void record(const struct rlx__op *op, int rc) {
  uint64_t end = op->t_done ? op->t_done : rlx__op_now(op);
  rlx__flight_leave(op->ticket, rc, end);
  if ((RLX__TRACING() || RLX__STATS_ON()) && !(op->seq & RLX__SEQ_INTERNAL)) /* (else the
                                                        * library's own: flight recorder only) */
    tell(op->comm_id, op->seq, op->kind, op->call, op->count, op->dt, op->count * op->esize,
         op->algo->name, rc, op->t_start, end);
  /* rlx_finalize's barrier failing is not the program's failure (it
   * returns RLX_OK): no table for it. */
  if (rc != RLX_OK && op->kind != RLX__CK_FINALIZE && rlx__flight_dump_on_error()) {
    rlx__engine_lock(&rlx__rt.engine);
    rlx__flight_dump(op->msg, rlx__exec_waiting_for);
    rlx__engine_unlock(&rlx__rt.engine);
  }
}

/* Wait for a started operation, apply its outcome, release what it held. */
static int finish(struct rlx_request *rq) {
  struct rlx__runtime *rt = &rlx__rt;
  struct rlx__op *op = &rq->op;
  rlx_comm_t *c = rq->comm;
  int rc, w;
  if (!atomic_load(&op->done) &&
      (w = rlx__engine_wait(&rt->engine, &op->done, &op->progress, rq->deadline)) != 0) {
    rlx__engine_lock(&rt->engine);
    if (!atomic_load(&op->done)) {
      char call[160], waiting[400], msg[640];
      const char *why;
      double limit = rlx__comm_timeout(c, &why);
      rlx__exec_describe(op, call, sizeof(call));
      rlx__exec_waiting_on(op, waiting, sizeof(waiting));
      if (w == -2)
        snprintf(msg, sizeof(msg), "%s on rank %d was interrupted (by the program: a signal?) "
                 "while waiting for %s", call, c->rank, waiting[0] ? waiting : "its own progress");
      else
        snprintf(msg, sizeof(msg), "%s on rank %d timed out after %g s (a timeout set by %s) "
                 "waiting for %s", call, c->rank, limit, why,
                 waiting[0] ? waiting : "its own progress");
      rlx__exec_abort(op, w == -2 ? RLX_ERR_INTERRUPTED : RLX_ERR_TIMEOUT, msg);
    }
    rlx__engine_unlock(&rt->engine);
  }
  rc = op->status;
  record(op, rc);
  if (rq->nonblocking)
    rlx__comm_lock(c);
  if (rc != RLX_OK) {
    c->revoked = rc;
    snprintf(c->revoked_why, sizeof(c->revoked_why), "%s", op->msg);
    rlx__err(rc, "%s", op->msg);
  } else if (rq->out != NULL) {
    widen(rq);
  }
  rlx__comm_unlock(c);
  give_back(c, op);
  return rc;
}

void rlx__internal_op(struct rlx__op *op, int kind, const char *call, rlx_dtype_t dt,
                      size_t count, const void *src, void *dst, const struct rlx__algo *algo) {
  memset(op, 0, sizeof(*op));
  op->kind = kind;
  op->call = call;
  op->dt = dt;
  op->esize = rlx_dtype_size(dt);
  op->count = count;
  op->src = src;
  op->dst = dst;
  op->algo = algo;
}

int rlx__run_op(rlx_comm_t *c, struct rlx__op *op) {
  struct rlx_request rq;
  memset(&rq, 0, sizeof(rq));
  rq.op = *op;
  int rc = start(c, &rq);
  if (rc == RLX_OK)
    rc = finish(&rq);
  *op = rq.op;
  return rc;
}

/* Run rq now (blocking) or hand it back through *req (nonblocking). */
int rlx__call_launch(rlx_comm_t *c, struct rlx_request *rq, rlx_request_t **req) {
  int rc;
  if (req == NULL) {
    rc = start(c, rq);
    return rc == RLX_OK ? finish(rq) : rc;
  }
  struct rlx_request *h = malloc(sizeof(*h));
  if (h == NULL)
    return rlx__err(RLX_ERR_NOMEM, "%s: no memory for a request", rq->op.call);
  memcpy(h, rq, sizeof(*h));
  h->nonblocking = 1;
  if ((rc = start(c, h)) != RLX_OK) {
    free(h->half);
    free(h);
    return rc;
  }
  atomic_fetch_add(&c->in_flight, 1); /* rlx_comm_free refuses until rlx_wait */
  *req = h;
  return RLX_OK;
}

void rlx__call_fill(struct rlx_request *rq, int kind, const char *call, rlx_dtype_t dt, rlx_op_t op,
                 size_t count, size_t es, int root, const void *src, void *dst) {
  /* only the op's fields that start zero (coll.h: the others are written
   * on the call's way; the message and lanes are exec's to clear) */
  rlx__clear(&rq->op.seq, offsetof(struct rlx__op, msg) - offsetof(struct rlx__op, seq));
  rq->is_msg = 0;
  memset((char *)rq + offsetof(struct rlx_request, comm), 0,
         sizeof(*rq) - offsetof(struct rlx_request, comm));
  rq->op.kind = kind;
  rq->op.call = call;
  rq->op.dt = dt;
  rq->op.rop = op;
  rq->op.count = count;
  rq->op.esize = es;
  rq->op.root = root;
  rq->op.src = src;
  rq->op.dst = dst;
}

/* An already-finished request, for calls with nothing to communicate. */
int rlx__call_done(rlx_request_t **req) {
  if (req == NULL)
    return RLX_OK;
  struct rlx_request *h = calloc(1, sizeof(*h));
  if (h == NULL)
    return rlx__err(RLX_ERR_NOMEM, "no memory for a request");
  atomic_store(&h->op.done, 1);
  h->nonblocking = 1;
  *req = h;
  return RLX_OK;
}

int rlx__call_alone(rlx_comm_t *c, int kind, const char *call, rlx_dtype_t dt, rlx_op_t rop,
                    size_t count, int root, const void *src, void *dst, size_t bytes,
                    rlx_request_t **req) {
  int took, rc = rlx__comm_take(c, call, req == NULL, &took);
  if (rc != RLX_OK)
    return rc;
  rlx__comm_lock(c);
  uint64_t seq = c->seq++;
  rlx__comm_unlock(c);
  int fine = RLX__TRACING() || RLX__STATS_ON();
  uint64_t t0 = fine ? rlx__now_ns() : rlx__tick_ceil_ns();
  uint64_t ticket = rlx__flight_enter(c->id, seq, kind, call, dt, rop, root, count, "alone", t0);
  if (bytes > 0 && src != dst)
    memmove(dst, src, bytes);
  uint64_t t1 = fine ? rlx__now_ns() : t0;
  rlx__flight_leave(ticket, RLX_OK, t1);
  if (fine)
    tell(c->id, seq, kind, call, count, dt, bytes, "alone", RLX_OK, t0, t1);
  if (took)
    rlx__comm_give(c);
  return rlx__call_done(req);
}

static int allreduce(const char *call, const void *sendbuf, void *recvbuf, size_t count,
                     rlx_dtype_t dt, rlx_op_t op, rlx_comm_t *c, rlx_request_t **req) {
  struct rlx_request rq;
  size_t es;
  int rc;
  if ((rc = rlx__call_check_comm(call, c)) != RLX_OK ||
      (rc = rlx__call_check_type(call, dt, count, &es)) != RLX_OK ||
      (rc = check_op(call, op, dt)) != RLX_OK)
    return rc;
  if (count == 0)
    return rlx__call_done(req);
  if (recvbuf == NULL || sendbuf == NULL)
    return rlx__err(RLX_ERR_ARG, "%s: %s is NULL with count %zu", call,
                    recvbuf == NULL ? "recvbuf" : "sendbuf", count);
  if ((rc = rlx__call_not_in_place(call, "recvbuf", recvbuf)) != RLX_OK)
    return rc;
  const void *src = sendbuf == RLX_IN_PLACE ? recvbuf : sendbuf;
  if (c->size == 1)
    return rlx__call_alone(c, RLX__CK_ALLREDUCE, call, dt, op, count, 0, src, recvbuf, count * es,
                           req);
  rlx__call_fill(&rq, RLX__CK_ALLREDUCE, call, dt, op, count, es, 0, src, recvbuf);
  int wire = rlx__rt.cfg.wire;
  if (wire != RLX__WIRE_F32 && dt == RLX_FLOAT32) { /* (more than one rank: one returned above) */
    /* Half-width wire: run the allreduce on a half copy (each step widens
     * to float32, reduces, and rounds back), then widen the result. */
    void *half;
    if (req == NULL) {
      if ((rc = grow(&c->wire, &c->wire_len, count * 2)) != RLX_OK)
        return rc;
      half = c->wire;
    } else if ((half = malloc(count * 2)) == NULL) {
      return rlx__err(RLX_ERR_NOMEM, "%s: no memory for the half-width copy", call);
    }
    rq.op.dt = wire == RLX__WIRE_F16 ? RLX_FLOAT16 : RLX_BFLOAT16;
    rq.op.esize = 2;
    if (wire == RLX__WIRE_F16)
      rlx__f32_to_f16_n(half, src, count);
    else
      rlx__f32_to_bf16_n(half, src, count);
    rq.op.src = rq.op.dst = half;
    rq.out = recvbuf;
    rq.half = req != NULL ? half : NULL; /* a nonblocking request owns its copy */
    es = 2;
  }
  if ((rc = rlx__call_pick(&rq.op, c, count * es, rlx__rt.cfg.allreduce_algo, req == NULL)) !=
      RLX_OK) {
    free(rq.half);
    return rc;
  }
  return rlx__call_launch(c, &rq, req);
}

int rlx_allreduce(const void *sendbuf, void *recvbuf, size_t count, rlx_dtype_t dt, rlx_op_t op,
                  rlx_comm_t *c) {
  return rlx__refused(c, allreduce("rlx_allreduce", sendbuf, recvbuf, count, dt, op, c, NULL));
}

int rlx_iallreduce(const void *sendbuf, void *recvbuf, size_t count, rlx_dtype_t dt, rlx_op_t op,
                   rlx_comm_t *c, rlx_request_t **req) {
  RLX__NEED_REQ("rlx_iallreduce");
  return rlx__refused(c, allreduce("rlx_iallreduce", sendbuf, recvbuf, count, dt, op, c, req));
}

static int bcast(const char *call, void *buf, size_t count, rlx_dtype_t dt, int root,
                 rlx_comm_t *c, rlx_request_t **req) {
  struct rlx_request rq;
  size_t es;
  int rc;
  if ((rc = rlx__call_check_comm(call, c)) != RLX_OK ||
      (rc = rlx__call_check_type(call, dt, count, &es)) != RLX_OK ||
      (rc = rlx__call_check_root(call, root, c)) != RLX_OK)
    return rc;
  if (count == 0 || c->size == 1)
    return rlx__call_done(req);
  if (buf == NULL)
    return rlx__err(RLX_ERR_ARG, "%s: buf is NULL with count %zu", call, count);
  if ((rc = rlx__call_not_in_place(call, "buf", buf)) != RLX_OK)
    return rc;
  rlx__call_fill(&rq, RLX__CK_BCAST, call, dt, RLX_SUM, count, es, root, buf, buf);
  if ((rc = rlx__call_pick(&rq.op, c, count * es, rlx__rt.cfg.bcast_algo, req == NULL)) != RLX_OK)
    return rc;
  return rlx__call_launch(c, &rq, req);
}

int rlx_bcast(void *buf, size_t count, rlx_dtype_t dt, int root, rlx_comm_t *c) {
  return rlx__refused(c, bcast("rlx_bcast", buf, count, dt, root, c, NULL));
}

int rlx_ibcast(void *buf, size_t count, rlx_dtype_t dt, int root, rlx_comm_t *c,
               rlx_request_t **req) {
  RLX__NEED_REQ("rlx_ibcast");
  return rlx__refused(c, bcast("rlx_ibcast", buf, count, dt, root, c, req));
}

static int reduce(const char *call, const void *sendbuf, void *recvbuf, size_t count,
                  rlx_dtype_t dt, rlx_op_t op, int root, rlx_comm_t *c, rlx_request_t **req) {
  struct rlx_request rq;
  size_t es;
  int rc;
  if ((rc = rlx__call_check_comm(call, c)) != RLX_OK ||
      (rc = rlx__call_check_type(call, dt, count, &es)) != RLX_OK ||
      (rc = check_op(call, op, dt)) != RLX_OK ||
      (rc = rlx__call_check_root(call, root, c)) != RLX_OK)
    return rc;
  if (count == 0)
    return rlx__call_done(req);
  int is_root = c->rank == root;
  if (sendbuf == NULL || (is_root && recvbuf == NULL) || (!is_root && sendbuf == RLX_IN_PLACE))
    return rlx__err(RLX_ERR_ARG, "%s: %s", call,
                    sendbuf == NULL ? "sendbuf is NULL"
                    : is_root && recvbuf == NULL ? "recvbuf is NULL on the root"
                                                 : "RLX_IN_PLACE is for the root only");
  if (is_root && (rc = rlx__call_not_in_place(call, "recvbuf", recvbuf)) != RLX_OK)
    return rc;
  if (c->size == 1) /* (the root) */
    return rlx__call_alone(c, RLX__CK_REDUCE, call, dt, op, count, root,
                           sendbuf == RLX_IN_PLACE ? recvbuf : sendbuf, recvbuf, count * es, req);
  rlx__call_fill(&rq, RLX__CK_REDUCE, call, dt, op, count, es, root,
       sendbuf == RLX_IN_PLACE ? recvbuf : sendbuf, is_root ? recvbuf : NULL);
  if ((rc = rlx__call_pick(&rq.op, c, count * es, "", req == NULL)) != RLX_OK)
    return rc;
  return rlx__call_launch(c, &rq, req);
}

static int allgather(const char *call, const void *sendbuf, void *recvbuf, size_t count,
                     rlx_dtype_t dt, rlx_comm_t *c, rlx_request_t **req) {
  struct rlx_request rq;
  size_t es;
  int rc;
  if ((rc = rlx__call_check_comm(call, c)) != RLX_OK ||
      (rc = rlx__call_check_type(call, dt, count, &es)) != RLX_OK)
    return rc;
  if (count == 0)
    return rlx__call_done(req);
  if (sendbuf == NULL || recvbuf == NULL)
    return rlx__err(RLX_ERR_ARG, "%s: %s is NULL", call, sendbuf == NULL ? "sendbuf" : "recvbuf");
  if ((rc = rlx__call_not_in_place(call, "recvbuf", recvbuf)) != RLX_OK)
    return rc;
  const void *src = sendbuf == RLX_IN_PLACE ? (char *)recvbuf + (size_t)c->rank * count * es
                                            : sendbuf;
  if (c->size == 1)
    return rlx__call_alone(c, RLX__CK_ALLGATHER, call, dt, RLX_SUM, count, 0, src, recvbuf,
                           count * es, req);
  rlx__call_fill(&rq, RLX__CK_ALLGATHER, call, dt, RLX_SUM, count, es, 0, src, recvbuf);
  if ((rc = rlx__call_pick(&rq.op, c, count * es * (size_t)c->size, rlx__rt.cfg.allgather_algo,
                           req == NULL)) != RLX_OK)
    return rc;
  return rlx__call_launch(c, &rq, req);
}

/* rlx_reduce_scatterv's recvcounts: each in range; their total, and a
 * hash of them (FNV-1a, 32 bits) that the call's signature carries, so
 * that ranks passing different counts fail with RLX_ERR_MISMATCH at once. */
static int check_recvcounts(const char *call, const size_t *recvcounts, int p, size_t es,
                            size_t *total, uint32_t *hash) {
  if (recvcounts == NULL)
    return rlx__err(RLX_ERR_ARG, "%s: recvcounts is NULL", call);
  for (int i = 0; i < p; i++)
    if (recvcounts[i] > (size_t)RLX__UNEVEN_BLOCK_MAX / es)
      return rlx__err(RLX_ERR_ARG, "%s: recvcounts[%d] is over 1 GiB (a block of an uneven call "
                      "is at most that)", call, i);
  *hash = rlx__call_counts_hash(recvcounts, p, total);
  return RLX_OK;
}

/* kind RLX__CK_REDUCE_SCATTER: recvcount per rank; RLX__CK_REDUCE_SCATTERV:
 * recvcounts[i] for rank i (recvcount unused). */
static int reduce_scatter(int kind, const char *call, const void *sendbuf, void *recvbuf,
                          size_t recvcount, const size_t *recvcounts, rlx_dtype_t dt,
                          rlx_op_t op, rlx_comm_t *c, rlx_request_t **req) {
  struct rlx_request rq;
  size_t es, total = 0;
  uint32_t hash = 0;
  int rc, v = kind == RLX__CK_REDUCE_SCATTERV;
  if ((rc = rlx__call_check_comm(call, c)) != RLX_OK ||
      (rc = rlx__call_check_type(call, dt, v ? 0 : recvcount, &es)) != RLX_OK ||
      (rc = check_op(call, op, dt)) != RLX_OK ||
      (v && (rc = check_recvcounts(call, recvcounts, c->size, es, &total, &hash)) != RLX_OK))
    return rc;
  if (v)
    recvcount = recvcounts[c->rank];
  else
    total = recvcount * (size_t)c->size;
  if (total == 0)
    return rlx__call_done(req);
  if (sendbuf == NULL || (recvbuf == NULL && recvcount > 0))
    return rlx__err(RLX_ERR_ARG, "%s: %s is NULL", call, sendbuf == NULL ? "sendbuf" : "recvbuf");
  if (sendbuf == RLX_IN_PLACE && recvbuf == NULL)
    return rlx__err(RLX_ERR_ARG, "%s: recvbuf is NULL (in place, it holds the input)", call);
  if ((rc = rlx__call_not_in_place(call, "recvbuf", recvbuf)) != RLX_OK)
    return rc;
  /* In place: recvbuf holds all p blocks on entry and block 0.. gets the result. */
  const void *src = sendbuf == RLX_IN_PLACE ? recvbuf : sendbuf;
  if (c->size == 1) /* (its one block: recvcount elements) */
    return rlx__call_alone(c, kind, call, dt, op, recvcount, 0, src, recvbuf, recvcount * es, req);
  void *in_copy = NULL;
  if (sendbuf == RLX_IN_PLACE) {
    /* the ring reads every input block until its last step: keep a copy */
    size_t bytes = total * es;
    if ((in_copy = malloc(bytes)) == NULL)
      return rlx__err(RLX_ERR_NOMEM, "%s: no memory for the in-place input", call);
    memcpy(in_copy, recvbuf, bytes);
    src = in_copy;
  }
  /* (v: count is the total, root the counts' hash; call.h) */
  rlx__call_fill(&rq, kind, call, dt, op, v ? total : recvcount, es, (int)hash, src, recvbuf);
  rq.op.counts = recvcounts;
  rq.half = req != NULL ? in_copy : NULL; /* a nonblocking request owns the copy */
  if ((rc = rlx__call_pick(&rq.op, c, total * es, "", req == NULL)) == RLX_OK) {
    rc = rlx__call_launch(c, &rq, req);
    if (rc == RLX_OK && req != NULL)
      in_copy = NULL;
  }
  free(in_copy);
  return rc;
}

int rlx_reduce(const void *sendbuf, void *recvbuf, size_t count, rlx_dtype_t dt, rlx_op_t op,
               int root, rlx_comm_t *c) {
  return rlx__refused(c, reduce("rlx_reduce", sendbuf, recvbuf, count, dt, op, root, c, NULL));
}

int rlx_allgather(const void *sendbuf, void *recvbuf, size_t count, rlx_dtype_t dt,
                  rlx_comm_t *c) {
  return rlx__refused(c, allgather("rlx_allgather", sendbuf, recvbuf, count, dt, c, NULL));
}

int rlx_reduce_scatter(const void *sendbuf, void *recvbuf, size_t recvcount, rlx_dtype_t dt,
                       rlx_op_t op, rlx_comm_t *c) {
  return rlx__refused(c, reduce_scatter(RLX__CK_REDUCE_SCATTER, "rlx_reduce_scatter",
                                        sendbuf, recvbuf, recvcount, NULL, dt, op, c, NULL));
}

int rlx_reduce_scatterv(const void *sendbuf, void *recvbuf, const size_t *recvcounts,
                        rlx_dtype_t dt, rlx_op_t op, rlx_comm_t *c) {
  return rlx__refused(c, reduce_scatter(RLX__CK_REDUCE_SCATTERV, "rlx_reduce_scatterv",
                                        sendbuf, recvbuf, 0, recvcounts, dt, op, c, NULL));
}

static int barrier(const char *call, rlx_comm_t *c, rlx_request_t **req) {
  struct rlx_request rq;
  int rc;
  if ((rc = rlx__call_check_comm(call, c)) != RLX_OK)
    return rc;
  if (c->size == 1)
    return rlx__call_done(req);
  rlx__call_fill(&rq, RLX__CK_BARRIER, call, RLX_UINT8, RLX_SUM, 0, 1, 0, NULL, NULL);
  if ((rc = rlx__call_pick(&rq.op, c, 0, "", req == NULL)) != RLX_OK)
    return rc;
  return rlx__call_launch(c, &rq, req);
}

int rlx_barrier(rlx_comm_t *c) { return barrier("rlx_barrier", c, NULL); }

/* The nonblocking forms: a request each (rlx_iallreduce(3)). */

int rlx_ireduce(const void *sendbuf, void *recvbuf, size_t count, rlx_dtype_t dt, rlx_op_t op,
                int root, rlx_comm_t *c, rlx_request_t **req) {
  RLX__NEED_REQ("rlx_ireduce");
  return rlx__refused(c, reduce("rlx_ireduce", sendbuf, recvbuf, count, dt, op, root, c, req));
}

int rlx_iallgather(const void *sendbuf, void *recvbuf, size_t count, rlx_dtype_t dt,
                   rlx_comm_t *c, rlx_request_t **req) {
  RLX__NEED_REQ("rlx_iallgather");
  return rlx__refused(c, allgather("rlx_iallgather", sendbuf, recvbuf, count, dt, c, req));
}

int rlx_ireduce_scatter(const void *sendbuf, void *recvbuf, size_t recvcount, rlx_dtype_t dt,
                        rlx_op_t op, rlx_comm_t *c, rlx_request_t **req) {
  RLX__NEED_REQ("rlx_ireduce_scatter");
  return rlx__refused(c, reduce_scatter(RLX__CK_REDUCE_SCATTER, "rlx_ireduce_scatter",
                                        sendbuf, recvbuf, recvcount, NULL, dt, op, c, req));
}

int rlx_ireduce_scatterv(const void *sendbuf, void *recvbuf, const size_t *recvcounts,
                         rlx_dtype_t dt, rlx_op_t op, rlx_comm_t *c, rlx_request_t **req) {
  RLX__NEED_REQ("rlx_ireduce_scatterv");
  return rlx__refused(c, reduce_scatter(RLX__CK_REDUCE_SCATTERV, "rlx_ireduce_scatterv",
                                        sendbuf, recvbuf, 0, recvcounts, dt, op, c, req));
}

int rlx_ibarrier(rlx_comm_t *c, rlx_request_t **req) {
  RLX__NEED_REQ("rlx_ibarrier");
  return rlx__refused(c, barrier("rlx_ibarrier", c, req));
}

int rlx__coll_finish(struct rlx_request *rq) { return finish(rq); }

