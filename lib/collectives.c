/* The public collectives: validate the call, pick the algorithm, run the
 * operation on the progress engine with its deadline, and turn a failure
 * into an error that names the ranks and the call. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "runtime.h"

static int check_comm(const char *call, rlx_comm_t *c) {
  if (!rlx__rt.initialized)
    return rlx__err(RLX_ERR_STATE, "%s: rlx_init has not been called", call);
  if (c == NULL)
    return rlx__err(RLX_ERR_ARG, "%s: communicator is NULL", call);
  if (c->revoked)
    return rlx__err(RLX_ERR_REVOKED, "%s: the communicator was revoked by an earlier error: %s",
                    call, c->revoked_why);
  return RLX_OK;
}

static int check_type(const char *call, rlx_dtype_t dt, size_t count, size_t *esize) {
  if ((unsigned)dt >= RLX_DTYPE_COUNT)
    return rlx__err(RLX_ERR_ARG, "%s: unknown dtype %d", call, (int)dt);
  *esize = rlx_dtype_size(dt);
  if (count > (SIZE_MAX / 2) / *esize)
    return rlx__err(RLX_ERR_ARG, "%s: count %zu is too large", call, count);
  return RLX_OK;
}

static int grow_scratch(rlx_comm_t *c, size_t len) {
  if (len <= c->scratch_len)
    return RLX_OK;
  void *p = realloc(c->scratch, len);
  if (p == NULL)
    return rlx__err(RLX_ERR_NOMEM, "no memory for %zu bytes of scratch", len);
  c->scratch = p;
  c->scratch_len = len;
  return RLX_OK;
}

int rlx__run_op(rlx_comm_t *c, struct rlx__op *op) {
  struct rlx__runtime *rt = &rlx__rt;
  int rc;
  pthread_mutex_lock(&c->mtx);
  op->p2p = &rt->p2p;
  op->world = c->world;
  op->rank = c->rank;
  op->size = c->size;
  op->comm_id = c->id;
  op->seq = c->seq++;
  if ((rc = grow_scratch(c, op->algo->setup(op))) != RLX_OK) {
    pthread_mutex_unlock(&c->mtx);
    return rc;
  }
  op->tmp = c->scratch;
  op->tmp_len = c->scratch_len;
  uint64_t deadline =
      rt->cfg.timeout_s > 0 ? rlx__now_ns() + (uint64_t)(rt->cfg.timeout_s * 1e9) : 0;

  rlx__engine_lock(&rt->engine);
  rlx__exec_start(op);
  rlx__engine_unlock(&rt->engine);
  if (!atomic_load(&op->done) &&
      rlx__engine_wait(&rt->engine, &op->done, &op->progress, deadline) != 0) {
    rlx__engine_lock(&rt->engine);
    if (!atomic_load(&op->done)) {
      char call[160], waiting[400], msg[640];
      rlx__exec_describe_call(call, sizeof(call), op->call, op->kind, op->dt, op->rop, op->root,
                              op->count);
      rlx__exec_waiting_on(op, waiting, sizeof(waiting));
      snprintf(msg, sizeof(msg), "%s on rank %d timed out after %g s (RLX_TIMEOUT) waiting for %s",
               call, c->rank, rt->cfg.timeout_s, waiting[0] ? waiting : "its own progress");
      rlx__exec_abort(op, RLX_ERR_TIMEOUT, msg);
    }
    rlx__engine_unlock(&rt->engine);
  }
  rc = op->status;
  if (rc != RLX_OK) {
    c->revoked = rc;
    snprintf(c->revoked_why, sizeof(c->revoked_why), "%s", op->msg);
    rlx__err(rc, "%s", op->msg);
  }
  pthread_mutex_unlock(&c->mtx);
  return rc;
}

int rlx_allreduce(const void *sendbuf, void *recvbuf, size_t count, rlx_dtype_t dt, rlx_op_t op,
                  rlx_comm_t *c) {
  struct rlx__op o;
  size_t es;
  int rc;
  if ((rc = check_comm("rlx_allreduce", c)) != RLX_OK ||
      (rc = check_type("rlx_allreduce", dt, count, &es)) != RLX_OK)
    return rc;
  if ((unsigned)op >= RLX_OP_COUNT)
    return rlx__err(RLX_ERR_ARG, "rlx_allreduce: unknown op %d", (int)op);
  if (op == RLX_AVG && !rlx__dtype_is_float(dt))
    return rlx__err(RLX_ERR_ARG, "rlx_allreduce: RLX_AVG needs a floating dtype, not %s",
                    rlx_dtype_name(dt));
  if (count == 0)
    return RLX_OK;
  if (recvbuf == NULL || sendbuf == NULL)
    return rlx__err(RLX_ERR_ARG, "rlx_allreduce: %s is NULL with count %zu",
                    recvbuf == NULL ? "recvbuf" : "sendbuf", count);
  memset(&o, 0, sizeof(o));
  o.kind = RLX__CK_ALLREDUCE;
  o.call = "rlx_allreduce";
  o.dt = dt;
  o.rop = op;
  o.count = count;
  o.esize = es;
  o.src = sendbuf == RLX_IN_PLACE ? recvbuf : sendbuf;
  o.dst = recvbuf;
  o.algo = rlx__select_allreduce(count * es, c->size, rlx__rt.cfg.allreduce_algo);
  return rlx__run_op(c, &o);
}

int rlx_bcast(void *buf, size_t count, rlx_dtype_t dt, int root, rlx_comm_t *c) {
  struct rlx__op o;
  size_t es;
  int rc;
  if ((rc = check_comm("rlx_bcast", c)) != RLX_OK ||
      (rc = check_type("rlx_bcast", dt, count, &es)) != RLX_OK)
    return rc;
  if (root < 0 || root >= c->size)
    return rlx__err(RLX_ERR_ARG, "rlx_bcast: root %d is not a rank of this communicator (size %d)",
                    root, c->size);
  if (count == 0 || c->size == 1)
    return RLX_OK;
  if (buf == NULL)
    return rlx__err(RLX_ERR_ARG, "rlx_bcast: buf is NULL with count %zu", count);
  memset(&o, 0, sizeof(o));
  o.kind = RLX__CK_BCAST;
  o.call = "rlx_bcast";
  o.dt = dt;
  o.rop = RLX_SUM;
  o.count = count;
  o.esize = es;
  o.root = root;
  o.src = buf;
  o.dst = buf;
  o.algo = &rlx__bcast_binomial;
  return rlx__run_op(c, &o);
}

int rlx_barrier(rlx_comm_t *c) {
  struct rlx__op o;
  int rc;
  if ((rc = check_comm("rlx_barrier", c)) != RLX_OK)
    return rc;
  if (c->size == 1)
    return RLX_OK;
  memset(&o, 0, sizeof(o));
  o.kind = RLX__CK_BARRIER;
  o.call = "rlx_barrier";
  o.dt = RLX_UINT8;
  o.esize = 1;
  o.algo = &rlx__barrier_dissemination;
  return rlx__run_op(c, &o);
}
