/* The remote backend (share.h): a model of a rank that computes on a
 * device another process of its job serves, every operation one request
 * there (rlx__share_join finds that process: share_join.c). Host buffers
 * the model makes (rlx_model_grad_buffer and the rest, through
 * host_alloc) are memfds both processes map, so a gradient is written
 * where this rank reads it; any other buffer goes through a staging
 * region, copied in before the request and out after the reply. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>
#include "compute/share.h"
#include "compute/cl_profile.h"
#include "compute/host_span.h"
#include "base/copy.h"
#include "base/internal.h"

struct remote {
  struct rlx__backend base;
  int fd, dead;
  pid_t server;
  struct {
    unsigned char *p;
    size_t len;
  } reg[RLX__SH_REGIONS]; /* [0]: staging */
  struct {
    int batch; /* 0: none */
    size_t first, stride;
  } pend; /* rlx_model_data_batch's gather, sent with the step that takes it */
  struct { /* RLX_COMPUTE_PROFILE (1 or host): a shared step's request there and back */
    int on;
    struct rlx__host_turns trip; /* (out: here, from a reply to the next request) */
  } prof;
};

static struct remote *remote_of(struct rlx__backend *b) { return (struct remote *)b; }

static long spin_budget_us(void) {
  long v, ranks = 1;
  const char *e = getenv("RLX_SPIN_US"), *n = getenv("RLX_LOCAL_SIZE");
  if (e && *e && rlx__parse_long(e, 0, 1000000, &v) == RLX_OK)
    return v;
  if (n && *n && rlx__parse_long(n, 1, 1 << 20, &v) == RLX_OK)
    ranks = v;
  return sysconf(_SC_NPROCESSORS_ONLN) >= 2 * ranks ? 50 : 0;
}

long rlx__share_spin_us(void) {
  static _Atomic long known = -1; /* (every thread computes the same) */
  long budget = atomic_load_explicit(&known, memory_order_relaxed);
  if (budget < 0)
    atomic_store_explicit(&known, budget = spin_budget_us(), memory_order_relaxed);
  return budget;
}

void rlx__share_spin(int fd) {
  long budget = rlx__share_spin_us();
  if (budget == 0)
    return;
  struct pollfd p = {.fd = fd, .events = POLLIN};
  uint64_t until = rlx__now_ns() + (uint64_t)budget * 1000;
  while (poll(&p, 1, 0) == 0 && rlx__now_ns() < until)
    ;
}

static int gone(struct remote *r, const char *how) {
  r->dead = 1;
  return rlx__err(RLX_ERR_DEVICE, "%s: the process serving it (pid %d) is gone (%s)", r->base.name,
                  (int)r->server, how);
}

ssize_t rlx__share_send(int s, const void *msg, size_t len, int fd) {
  union {
    char buf[CMSG_SPACE(sizeof(int))];
    struct cmsghdr align;
  } ctl;
  memset(&ctl, 0, sizeof ctl);
  struct iovec iov = {(void *)msg, len};
  struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1};
  if (fd >= 0) {
    mh.msg_control = ctl.buf;
    mh.msg_controllen = sizeof ctl.buf;
    struct cmsghdr *cm = CMSG_FIRSTHDR(&mh);
    cm->cmsg_level = SOL_SOCKET;
    cm->cmsg_type = SCM_RIGHTS;
    cm->cmsg_len = CMSG_LEN(sizeof(int));
    memcpy(CMSG_DATA(cm), &fd, sizeof fd);
  }
  ssize_t n;
  do
    n = sendmsg(s, &mh, MSG_NOSIGNAL);
  while (n < 0 && errno == EINTR);
  return n;
}

/* One request (with fd, if >= 0) and its reply. */
static int exchange(struct remote *r, const struct rlx__share_req *q, int fd,
                    struct rlx__share_rep *rep) {
  if (r->dead)
    return rlx__err(RLX_ERR_DEVICE, "%s: the process serving it (pid %d) is gone", r->base.name,
                    (int)r->server);
  ssize_t n = rlx__share_send(r->fd, q, sizeof *q, fd);
  if (n != (ssize_t)sizeof *q)
    return gone(r, n < 0 ? strerror(errno) : "a short send");
  rlx__share_spin(r->fd);
  do
    n = recv(r->fd, rep, sizeof *rep, 0);
  while (n < 0 && errno == EINTR);
  if (n != (ssize_t)sizeof *rep)
    return gone(r, n < 0 ? strerror(errno) : n == 0 ? "it closed the connection" : "a short reply");
  if (rep->rc != RLX_OK) {
    rep->msg[sizeof rep->msg - 1] = '\0';
    return rlx__err(rep->rc, "%s", rep->msg);
  }
  return RLX_OK;
}

/* Region i becomes a fresh memfd of bytes, shared with the server; sealed
 * against shrinking, so that the server's mapping can never fault. */
static int share_region(struct remote *r, int i, size_t bytes) {
  struct rlx__share_req q = {.op = RLX__SH_MAP, .i = i, .u = {bytes, 0}};
  struct rlx__share_rep rep;
  int fd = memfd_create("rlx-compute", MFD_CLOEXEC | MFD_ALLOW_SEALING);
  if (fd < 0 || ftruncate(fd, (off_t)bytes) != 0 ||
      fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_SEAL) != 0) {
    int e = errno;
    if (fd >= 0)
      close(fd);
    return rlx__err(RLX_ERR_NOMEM, "%s: no shared memory of %zu bytes: %s", r->base.name, bytes,
                    strerror(e));
  }
  void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  int rc = p == MAP_FAILED ? rlx__err(RLX_ERR_NOMEM, "%s: cannot map %zu bytes: %s", r->base.name,
                                      bytes, strerror(errno))
                           : exchange(r, &q, fd, &rep);
  close(fd);
  if (rc != RLX_OK) {
    if (p != MAP_FAILED)
      munmap(p, bytes);
    return rc;
  }
  if (r->reg[i].p)
    munmap(r->reg[i].p, r->reg[i].len);
  r->reg[i].p = p;
  r->reg[i].len = bytes;
  return RLX_OK;
}

/* The shared region (1..) holding p's bytes, or 0. */
static int region_of(const struct remote *r, const void *p, size_t bytes) {
  const unsigned char *c = p;
  for (int i = 1; p && i < RLX__SH_REGIONS; i++)
    if (r->reg[i].p && c >= r->reg[i].p && (size_t)(c - r->reg[i].p) <= r->reg[i].len &&
        bytes <= r->reg[i].len - (size_t)(c - r->reg[i].p))
      return i;
  return 0;
}

/* One buffer of a request: its bytes, read before (in) or written after
 * (out); both NULL for none. */
struct xfer {
  const void *in;
  void *out;
  size_t bytes;
};

/* A gather still pending goes as a request of its own before any other
 * request than the step that takes it (rlx_model_data_batch's order of
 * effects kept: a new order, for one, drops the batch gathered). */
static int flush_gather(struct remote *r) {
  if (r->pend.batch == 0)
    return RLX_OK;
  struct rlx__share_req q = {.op = RLX__SH_DATA_BATCH, .i = r->pend.batch,
                             .u = {r->pend.first, r->pend.stride}};
  struct rlx__share_rep rep;
  r->pend.batch = 0;
  return exchange(r, &q, -1, &rep);
}

/* Send q with its buffers where the server can reach them; the reply in
 * rep. */
static int call(struct remote *r, struct rlx__share_req *q, const struct xfer *x, int nx,
                struct rlx__share_rep *rep) {
  int rc = flush_gather(r);
  if (rc != RLX_OK)
    return rc;
  size_t stage[RLX__SH_REFS] = {0}, used = 0;
  int staged[RLX__SH_REFS] = {0};
  for (int k = 0; k < RLX__SH_REFS; k++) {
    const unsigned char *p = k < nx ? (x[k].in ? x[k].in : x[k].out) : NULL;
    q->ref[k].region = -1;
    if (!p)
      continue;
    int i = region_of(r, p, x[k].bytes);
    if (i > 0) {
      q->ref[k].region = i;
      q->ref[k].off = (uint64_t)(p - r->reg[i].p);
    } else {
      stage[k] = (used + 63) / 64 * 64;
      used = stage[k] + x[k].bytes;
      staged[k] = 1;
      q->ref[k].region = 0;
      q->ref[k].off = stage[k];
    }
  }
  if (used > r->reg[0].len) {
    size_t want = r->reg[0].len * 2 > used ? r->reg[0].len * 2 : used;
    if ((rc = share_region(r, 0, want < (1u << 20) ? 1u << 20 : want)) != RLX_OK)
      return rc;
  }
  for (int k = 0; k < nx; k++)
    if (staged[k] && x[k].in)
      rlx__copy(r->reg[0].p + stage[k], x[k].in, x[k].bytes); /* (base/copy.h) */
  rc = exchange(r, q, -1, rep);
  for (int k = 0; rc == RLX_OK && k < nx; k++)
    if (staged[k] && x[k].out)
      rlx__copy(x[k].out, r->reg[0].p + stage[k], x[k].bytes);
  return rc;
}

static size_t param_bytes(struct rlx__backend *b) { return sizeof(float) * b->lo->nparams; }
static size_t row_bytes(struct rlx__backend *b, int batch) {
  return sizeof(float) * (size_t)batch * (size_t)b->lo->sizes[0];
}

static void remote_destroy(struct rlx__backend *b) {
  struct remote *r = remote_of(b);
  if (r->prof.trip.in.n)
    fprintf(stderr, "rlx: %s: %ld shared steps through pid %d: %.1f us (mean; max %.1f) from a "
            "request to its reply, %.1f us here from a reply to the next request\n", b->name,
            r->prof.trip.in.n, (int)r->server, rlx__host_span_us(&r->prof.trip.in),
            r->prof.trip.in.max_ns / 1e3, rlx__host_span_us(&r->prof.trip.out));
  if (r->fd >= 0)
    close(r->fd); /* the server frees the model when the connection ends */
  for (int i = 0; i < RLX__SH_REGIONS; i++)
    if (r->reg[i].p)
      munmap(r->reg[i].p, r->reg[i].len);
  free(r);
}

static float *remote_host_alloc(struct rlx__backend *b, size_t n) {
  struct remote *r = remote_of(b);
  for (int i = 1; i < RLX__SH_REGIONS; i++)
    if (!r->reg[i].p)
      return share_region(r, i, n ? n * sizeof(float) : 4) == RLX_OK ? (float *)r->reg[i].p : NULL;
  return NULL;
}

static int remote_host_free(struct rlx__backend *b, float *p) {
  struct remote *r = remote_of(b);
  for (int i = 1; i < RLX__SH_REGIONS; i++)
    if (p && r->reg[i].p == (unsigned char *)p) {
      struct rlx__share_req q = {.op = RLX__SH_UNMAP, .i = i};
      struct rlx__share_rep rep;
      exchange(r, &q, -1, &rep); /* (a server gone has nothing to unmap) */
      munmap(r->reg[i].p, r->reg[i].len);
      r->reg[i].p = NULL;
      return 1;
    }
  return 0;
}

static int params_call(struct rlx__backend *b, int op, const float *in, float *out, int set) {
  struct rlx__share_req q = {.op = (uint32_t)op, .i = set};
  struct rlx__share_rep rep;
  struct xfer x[] = {{in, out, param_bytes(b)}};
  return call(remote_of(b), &q, x, 1, &rep);
}
static int remote_set_params(struct rlx__backend *b, const float *p) {
  return params_call(b, RLX__SH_SET_PARAMS, p, NULL, 0);
}
static int remote_get_params(struct rlx__backend *b, float *p) {
  return params_call(b, RLX__SH_GET_PARAMS, NULL, p, 0);
}
static int remote_velocity(struct rlx__backend *b, float *v, int set) {
  return params_call(b, RLX__SH_VELOCITY, set ? v : NULL, set ? NULL : v, set);
}

/* grad, grad_half and step: the batch (or none: gathered on the device),
 * the gradient out (g, of gbytes; NULL for step), the loss and right
 * answers where asked for. */
static int batch_call(struct rlx__backend *b, int op, const float *x, const int32_t *y, int batch,
                      void *g, size_t gbytes, int j, float lr, float *loss, int *correct,
                      uint64_t u0, uint64_t u1) {
  struct remote *r = remote_of(b);
  struct rlx__share_req q = {.op = (uint32_t)op, .i = batch, .f = lr, .u = {u0, u1},
                             .j = j | (loss ? 1 : 0) | (correct ? 16 : 0)};
  struct rlx__share_rep rep;
  if (x == NULL && r->pend.batch) { /* the batch gathered for this step: its gather comes along */
    q.gather.batch = r->pend.batch;
    q.gather.first = r->pend.first;
    q.gather.stride = r->pend.stride;
    r->pend.batch = 0;
  }
  struct xfer xs[] = {{x, NULL, x ? row_bytes(b, batch) : 0},
                      {y, NULL, y ? sizeof(int32_t) * (size_t)batch : 0},
                      {NULL, g, gbytes}};
  int rc = call(r, &q, xs, 3, &rep);
  if (rc == RLX_OK && loss)
    *loss = rep.loss;
  if (rc == RLX_OK && correct)
    *correct = rep.correct;
  return rc;
}
static int remote_grad(struct rlx__backend *b, const float *x, const int32_t *y, int batch,
                       float *g, float *loss, int *correct) {
  return batch_call(b, RLX__SH_GRAD, x, y, batch, g, param_bytes(b), 0, 0, loss, correct, 0, 0);
}
static int remote_grad_half(struct rlx__backend *b, const float *x, const int32_t *y, int batch,
                            uint16_t *g, int bf16, float *loss, int *correct) {
  return batch_call(b, RLX__SH_GRAD, x, y, batch, g, sizeof(uint16_t) * b->lo->nparams,
                    2 | (bf16 ? 4 : 0), 0, loss, correct, 0, 0);
}
static int remote_step(struct rlx__backend *b, const float *x, const int32_t *y, int batch,
                       float lr, float *loss, int *correct) {
  return batch_call(b, RLX__SH_STEP, x, y, batch, NULL, 0, 0, lr, loss, correct, 0, 0);
}
static int remote_step_shared(struct rlx__backend *b, const float *x, const int32_t *y, int batch,
                              int index, int members, float lr, float *loss, int *correct) {
  struct remote *r = remote_of(b);
  uint64_t t0 = r->prof.on ? rlx__now_ns() : 0;
  int rc = batch_call(b, RLX__SH_STEP_SHARED, x, y, batch, NULL, 0, 0, lr, loss, correct,
                      (uint64_t)index, (uint64_t)members);
  if (r->prof.on)
    rlx__host_turn(&r->prof.trip, t0, rlx__now_ns());
  return rc;
}

static int apply_call(struct rlx__backend *b, int op, const void *g, size_t bytes, int j, float lr,
                      size_t off, size_t n) {
  struct rlx__share_req q = {.op = (uint32_t)op, .f = lr, .u = {off, n},
                             .j = j | (g == (const void *)b->own_grad ? 8 : 0)};
  struct rlx__share_rep rep;
  struct xfer x[] = {{g, NULL, bytes}};
  return call(remote_of(b), &q, x, 1, &rep);
}
static int remote_apply(struct rlx__backend *b, const float *g, float lr) {
  return apply_call(b, RLX__SH_APPLY, g, param_bytes(b), 0, lr, 0, 0);
}
static int remote_apply_half(struct rlx__backend *b, const uint16_t *g, int bf16, float lr) {
  return apply_call(b, RLX__SH_APPLY, g, sizeof(uint16_t) * b->lo->nparams, 2 | (bf16 ? 4 : 0),
                    lr, 0, 0);
}
static int remote_apply_range(struct rlx__backend *b, const float *g, size_t off, size_t n,
                              float lr) {
  return apply_call(b, RLX__SH_APPLY_RANGE, g, param_bytes(b), 0, lr, off, n);
}

static int remote_eval(struct rlx__backend *b, const float *x, const int32_t *y, int batch,
                       double *loss_sum, long *correct) {
  struct rlx__share_req q = {.op = RLX__SH_EVAL, .i = batch};
  struct rlx__share_rep rep;
  struct xfer xs[] = {{x, NULL, row_bytes(b, batch)}, {y, NULL, sizeof(int32_t) * (size_t)batch}};
  int rc = call(remote_of(b), &q, xs, 2, &rep);
  if (rc == RLX_OK) { /* added to, as every backend's eval does (the server's start at 0) */
    *loss_sum += rep.loss_sum;
    *correct += (long)rep.correct_sum;
  }
  return rc;
}

/* A prefetch names the batch's memory, which the device reads later: only
 * memory both processes map can be named so (rlx_model_next_input_buffer
 * is); from any other the step uploads it itself. */
static int remote_prefetch(struct rlx__backend *b, const float *x, const int32_t *y, int batch) {
  struct remote *r = remote_of(b);
  struct rlx__share_req q = {.op = RLX__SH_PREFETCH, .i = batch};
  struct rlx__share_rep rep;
  struct xfer xs[] = {{x, NULL, x ? row_bytes(b, batch) : 0},
                      {y, NULL, y ? sizeof(int32_t) * (size_t)batch : 0}};
  if (x && !(region_of(r, x, xs[0].bytes) && region_of(r, y, xs[1].bytes)))
    return RLX_OK;
  return call(r, &q, xs, x ? 2 : 0, &rep);
}

static int remote_data_attach(struct rlx__backend *b, const uint8_t *pix, const uint8_t *lab,
                              size_t count, const float lut[256], size_t limit) {
  struct rlx__share_req q = {.op = RLX__SH_DATA_ATTACH, .u = {count, limit}};
  struct rlx__share_rep rep;
  struct xfer xs[] = {{pix, NULL, count * (size_t)b->lo->sizes[0]},
                      {lab, NULL, count},
                      {lut, NULL, 256 * sizeof(float)}};
  return call(remote_of(b), &q, xs, 3, &rep);
}

static int remote_data_order(struct rlx__backend *b, const uint32_t *order, size_t n) {
  struct rlx__share_req q = {.op = RLX__SH_DATA_ORDER, .u = {n, 0}};
  struct rlx__share_rep rep;
  struct xfer xs[] = {{order, NULL, sizeof(uint32_t) * n}};
  return call(remote_of(b), &q, xs, 1, &rep);
}

/* Deferred: sent with the step that takes the batch (or before any other
 * request); the arguments were checked by rlx_model_data_batch, a
 * device's failure to gather is that step's. */
static int remote_data_batch(struct rlx__backend *b, size_t first, size_t stride, int batch) {
  struct remote *r = remote_of(b);
  r->pend.batch = batch;
  r->pend.first = first;
  r->pend.stride = stride;
  return RLX_OK;
}

static int remote_totals(struct rlx__backend *b, double *loss_sum, long *correct) {
  struct rlx__share_req q = {.op = RLX__SH_TOTALS};
  struct rlx__share_rep rep;
  int rc = call(remote_of(b), &q, NULL, 0, &rep);
  if (rc == RLX_OK) {
    *loss_sum = rep.loss_sum;
    *correct = (long)rep.correct_sum;
  }
  return rc;
}

static const struct rlx__backend_ops remote_ops = {
    .destroy = remote_destroy,
    .set_params = remote_set_params,
    .get_params = remote_get_params,
    .grad = remote_grad,
    .apply = remote_apply,
    .eval = remote_eval,
    .host_alloc = remote_host_alloc,
    .host_free = remote_host_free,
    .step = remote_step,
    .velocity = remote_velocity,
    .host_state = NULL, /* the device holds them */
    .grad_half = remote_grad_half,
    .apply_half = remote_apply_half,
    .grad_layers = NULL, /* model.c hands layers over after the whole gradient */
    .apply_range = remote_apply_range,
    .prefetch = remote_prefetch,
    .data_attach = remote_data_attach,
    .data_order = remote_data_order,
    .data_batch = remote_data_batch,
    .totals = remote_totals,
    .step_shared = remote_step_shared,
};

static int connect_to(struct remote *r, const char *path, int d, const char *name,
                      const struct rlx__layout *lo, float momentum, char *why, size_t whylen) {
  struct ucred cr;
  socklen_t len = sizeof cr;
  if (getsockopt(r->fd, SOL_SOCKET, SO_PEERCRED, &cr, &len) != 0 || cr.uid != getuid()) {
    snprintf(why, whylen, "%s: %s is not served by this user", name, path);
    return RLX_ERR_AUTH;
  }
  r->server = cr.pid;
  r->base.share_key = (uint64_t)cr.pid << 8 | (uint64_t)(d & 0xff);
  r->base.ops = &remote_ops;
  r->base.lo = lo;
  r->base.momentum = momentum;
  snprintf(r->base.name, sizeof r->base.name, "opencl: %s", name);
  struct rlx__share_req q = {.op = RLX__SH_CREATE, .nsizes = lo->nlayers + 1,
                             .max_batch = lo->max_batch, .device = d, .momentum = momentum};
  for (int i = 0; i <= lo->nlayers; i++)
    q.sizes[i] = lo->sizes[i];
  struct rlx__share_rep *rep = malloc(sizeof *rep);
  int rc = rep ? exchange(r, &q, -1, rep) : RLX_ERR_NOMEM;
  if (rc == RLX_OK) {
    rep->msg[sizeof rep->msg - 1] = rep->note[sizeof rep->note - 1] = '\0';
    snprintf(r->base.name, sizeof r->base.name, "%.120s, through pid %d", rep->msg,
             (int)r->server);
    snprintf(r->base.note, sizeof r->base.note, "%s", rep->note);
    rlx__info("compute: OpenCL device %d (%s) is served by pid %d: this rank computes there",
              d, name, (int)r->server);
  } else {
    snprintf(why, whylen, "%s", rc == RLX_ERR_NOMEM ? "out of memory" : rlx_errmsg());
  }
  free(rep);
  return rc;
}

int rlx__share_remote(int fd, const char *path, int d, const char *name,
                      const struct rlx__layout *lo, float momentum, struct rlx__backend **out,
                      char *why, size_t whylen) {
  struct remote *r = calloc(1, sizeof *r);
  if (!r) {
    close(fd);
    snprintf(why, whylen, "out of memory");
    return RLX_ERR_NOMEM;
  }
  r->fd = fd;
  char pwhy[96];
  r->prof.on = rlx__cl_prof_wanted(pwhy, sizeof pwhy) > 0;
  int rc = connect_to(r, path, d, name, lo, momentum, why, whylen);
  if (rc != RLX_OK) {
    remote_destroy(&r->base);
    return rc;
  }
  *out = &r->base;
  return RLX_OK;
}
