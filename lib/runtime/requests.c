/* Requests of either kind, a nonblocking collective's or a message's:
 * wait for one, test one, wait for all, test any. Each completes and frees
 * the request and sets the caller's handle NULL. */
#include <stdlib.h>
#include <string.h>
#include "runtime/runtime.h"

static void free_request(struct rlx_request *h) {
  free(h->scratch);
  free(h->half);
  free(h);
}

/* Complete h (waiting as long as it takes) and free it. */
static int complete(struct rlx_request *h, rlx_status_t *st) {
  if (h->is_msg) {
    return rlx__msg_complete(h, st);
  }
  int rc = h->comm ? rlx__coll_finish(h) : RLX_OK;
  if (st != NULL)
    memset(st, 0, sizeof(*st));
  if (h->comm)
    atomic_fetch_sub(&h->comm->in_flight, 1);
  free_request(h);
  return rc;
}

int rlx_wait_status(rlx_request_t **req, rlx_status_t *st) {
  if (req == NULL || *req == NULL)
    return rlx__err(RLX_ERR_ARG, "rlx_wait: no request");
  struct rlx_request *h = *req;
  *req = NULL;
  return complete(h, st);
}

int rlx_wait(rlx_request_t **req) { return rlx_wait_status(req, NULL); }

/* Has h completed, or passed its deadline (then waiting fails it at once)? */
static int ready(struct rlx_request *h) {
  if (h->is_msg) {
    struct rlx__msg_req *m = (struct rlx__msg_req *)h;
    return atomic_load(&m->done) || (m->deadline != 0 && rlx__now_ns() >= m->deadline);
  }
  if (atomic_load(&h->op.done) || h->comm == NULL)
    return 1;
  return h->deadline != 0 && rlx__now_ns() >= h->deadline;
}

/* Lend this thread to the loop for one pass, if nobody else runs it:
 * libuv and the shared-memory rings together. A pass of libuv alone could
 * take the doorbell meant to wake the sleeping progress thread, and what
 * it announced would wait in the ring until that thread's next timeout
 * (100 ms: seen as a joiner's first step). */
static void one_pass(void) {
  struct rlx__engine *e = &rlx__rt.engine;
  if (rlx__engine_trylock(e)) {
    rlx__engine_turn(e);
    rlx__engine_unlock(e);
  }
}

int rlx_test(rlx_request_t **req, int *done) {
  if (req == NULL || *req == NULL || done == NULL)
    return rlx__err(RLX_ERR_ARG, "rlx_test: %s", done == NULL ? "done is NULL" : "no request");
  *done = 0;
  if (!ready(*req)) {
    one_pass();
    if (!ready(*req))
      return RLX_OK;
  }
  *done = 1;
  return rlx_wait(req);
}

int rlx_waitall(int n, rlx_request_t **reqs, rlx_status_t *sts) {
  if (n < 0 || (n > 0 && reqs == NULL))
    return rlx__err(RLX_ERR_ARG, "rlx_waitall: %s", n < 0 ? "n is negative" : "reqs is NULL");
  int first = RLX_OK;
  char msg[700] = "";
  for (int i = 0; i < n; i++) {
    rlx_status_t *st = sts != NULL ? &sts[i] : NULL;
    if (reqs[i] == NULL) {
      if (st != NULL)
        memset(st, 0, sizeof(*st));
      continue;
    }
    int rc = rlx_wait_status(&reqs[i], st);
    if (rc != RLX_OK && first == RLX_OK) {
      first = rc;
      snprintf(msg, sizeof(msg), "%s", rlx_errmsg());
    }
  }
  return first == RLX_OK ? RLX_OK : rlx__err(first, "%s", msg);
}

int rlx_testany(int n, rlx_request_t **reqs, int *index, int *done, rlx_status_t *st) {
  if (n < 0 || (n > 0 && reqs == NULL) || index == NULL || done == NULL)
    return rlx__err(RLX_ERR_ARG, "rlx_testany: %s",
                    n < 0 ? "n is negative" : index == NULL || done == NULL
                                ? "index or done is NULL" : "reqs is NULL");
  *index = -1;
  *done = 0;
  int any = 0;
  for (int pass = 0; pass < 2; pass++) {
    for (int i = 0; i < n; i++) {
      if (reqs[i] == NULL)
        continue;
      any = 1;
      if (ready(reqs[i])) {
        *index = i;
        *done = 1;
        return rlx_wait_status(&reqs[i], st);
      }
    }
    if (!any)
      break;
    if (pass == 0)
      one_pass();
  }
  if (!any) { /* nothing left to test: done, no index (MPI's MPI_UNDEFINED) */
    *done = 1;
    if (st != NULL)
      memset(st, 0, sizeof(*st));
  }
  return RLX_OK;
}
