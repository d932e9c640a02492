/* The serving side of a shared device (share.h): a thread accepts this
 * user's ranks on the device's socket, and each connection gets a thread
 * of its own that holds one model's OpenCL backend in this process's
 * context and runs its requests. A request is checked as the public API
 * checks a call (shapes, ranges, labels, the regions it names) before it
 * reaches the device: a corrupt one ends that connection alone
 * (RLX_ERR_CORRUPT, told to the client). */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include "compute/share.h"
#include "base/internal.h"

struct conn {
  int fd, d;
  pid_t peer;
  struct {
    unsigned char *p;
    size_t len;
    void *pin; /* pinned for the device's transfers while mapped */
  } reg[RLX__SH_REGIONS];
  struct rlx__layout lo;
  struct rlx__backend *be;
  size_t count, norder; /* the training set attached, its order's positions */
  int gathered;         /* rows of the batch gathered last, 0: none */
};

static atomic_int live; /* connections open, for the wait at exit */

/* Region r's bytes [off, off + bytes), or NULL (and 0) for a ref to none;
 * -1 when the ref names memory the client did not share. */
static int at(const struct conn *c, const struct rlx__share_ref *ref, size_t bytes, void **out) {
  *out = NULL;
  if (ref->region < 0)
    return 0;
  if (ref->region >= RLX__SH_REGIONS || c->reg[ref->region].p == NULL ||
      ref->off > c->reg[ref->region].len || bytes > c->reg[ref->region].len - ref->off)
    return -1;
  *out = c->reg[ref->region].p + ref->off;
  return 0;
}

static int bad(const struct conn *c, const char *what) {
  return rlx__err(RLX_ERR_CORRUPT, "device share: pid %d sent %s", (int)c->peer, what);
}

static int labels_ok(const struct conn *c, const int32_t *y, int batch) {
  int classes = c->lo.sizes[c->lo.nlayers];
  for (int r = 0; r < batch; r++)
    if (y[r] < 0 || y[r] >= classes)
      return 0;
  return 1;
}

/* x and y of a grad, step or eval: both given (shared, labels in range),
 * or both none with that batch gathered on the device. */
static int batch_refs(struct conn *c, const struct rlx__share_req *q, float **x, int32_t **y) {
  int batch = q->i;
  if (batch < 1 || batch > c->lo.max_batch)
    return bad(c, "a batch out of range");
  if (at(c, &q->ref[0], sizeof(float) * (size_t)batch * c->lo.sizes[0], (void **)x) ||
      at(c, &q->ref[1], sizeof(int32_t) * (size_t)batch, (void **)y))
    return bad(c, "a batch outside the memory it shares");
  if (!*x != !*y || (!*x && batch != c->gathered))
    return bad(c, "a batch that was not gathered");
  if (*y && !labels_ok(c, *y, batch))
    return bad(c, "a label that is not a class");
  return RLX_OK;
}

static int create(struct conn *c, const struct rlx__share_req *q, struct rlx__share_rep *r) {
  if (c->be)
    return bad(c, "a second model on one connection");
  if (q->nsizes < 2 || q->nsizes > RLX__MAX_LAYERS + 1 || q->device != c->d)
    return bad(c, "a model this device is not serving");
  int sizes[RLX__MAX_LAYERS + 1];
  for (int i = 0; i < q->nsizes; i++)
    sizes[i] = q->sizes[i];
  rlx_model_desc_t d = {.nsizes = q->nsizes, .sizes = sizes, .max_batch = q->max_batch,
                        .momentum = q->momentum};
  int rc = rlx__layout_init(&c->lo, &d);
  if (rc != RLX_OK)
    return rc;
  char why[400];
  rc = rlx__opencl_create_on(&c->lo, q->momentum, c->d, &c->be, why, sizeof why);
  if (rc != RLX_OK)
    return rlx__err(rc, "%s", why);
  snprintf(c->be->owner, sizeof c->be->owner, "pid %d", (int)c->peer);
  snprintf(r->msg, sizeof r->msg, "%s", c->be->name);
  snprintf(r->note, sizeof r->note, "%s", c->be->note);
  rlx__info("compute: device %d: computing a model for pid %d here (%s)", c->d, (int)c->peer,
            c->be->name);
  return RLX_OK;
}

static void unmap_region(struct conn *c, int i) {
  if (!c->reg[i].p)
    return;
  if (c->be)
    rlx__opencl_finish(c->be); /* nothing queued may still use it */
  rlx__opencl_host_unpin(c->reg[i].pin);
  munmap(c->reg[i].p, c->reg[i].len);
  c->reg[i].p = NULL;
  c->reg[i].pin = NULL;
}

static int map_region(struct conn *c, const struct rlx__share_req *q, int fd) {
  struct stat st;
  int seals = fd < 0 ? -1 : fcntl(fd, F_GET_SEALS);
  /* sealed against shrinking: a mapping past the file's end would fault
   * (SIGBUS) in this process */
  if (fd < 0 || q->i < 0 || q->i >= RLX__SH_REGIONS || q->u[0] == 0 || fstat(fd, &st) != 0 ||
      (uint64_t)st.st_size < q->u[0] || seals < 0 || !(seals & F_SEAL_SHRINK))
    return bad(c, "a region it did not pass, or one it could shrink");
  void *p = mmap(NULL, q->u[0], PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (p == MAP_FAILED)
    return rlx__err(RLX_ERR_NOMEM, "device share: cannot map %zu bytes of pid %d: %s",
                    (size_t)q->u[0], (int)c->peer, strerror(errno));
  unmap_region(c, q->i);
  c->reg[q->i].p = p;
  c->reg[q->i].len = q->u[0];
  /* a transfer from memory the driver did not pin is copied through its
   * own staging: 4-5x slower */
  if (c->be && (c->reg[q->i].pin = rlx__opencl_host_pin(c->be, p, q->u[0])) == NULL)
    rlx__info("compute: device %d: %zu bytes of pid %d not pinned", c->d, (size_t)q->u[0],
              (int)c->peer);
  return RLX_OK;
}

/* rlx_model_data_batch's gather (its own request, or one coming with a
 * step), checked against the order. */
static int gather(struct conn *c, int batch, uint64_t first, uint64_t stride) {
  size_t n = c->norder;
  if (n == 0 || batch < 1 || batch > c->lo.max_batch || first >= n ||
      (batch > 1 && (stride == 0 || (n - 1 - first) / stride < (uint64_t)batch - 1)))
    return bad(c, "a batch outside the order");
  c->gathered = 0;
  int rc = c->be->ops->data_batch(c->be, (size_t)first, (size_t)stride, batch);
  c->gathered = rc == RLX_OK ? batch : 0;
  return rc;
}

/* One request, checked, run; the reply's values filled. */
static int run(struct conn *c, const struct rlx__share_req *q, int fd, struct rlx__share_rep *r) {
  if (q->op == RLX__SH_CREATE)
    return create(c, q, r);
  if (q->op == RLX__SH_MAP)
    return map_region(c, q, fd);
  if (q->op == RLX__SH_UNMAP) {
    if (q->i < 0 || q->i >= RLX__SH_REGIONS || !c->reg[q->i].p)
      return bad(c, "a region it had not passed");
    unmap_region(c, q->i);
    return RLX_OK;
  }
  if (!c->be || q->op >= RLX__SH_OPS)
    return bad(c, "an unknown request");
  struct rlx__backend *b = c->be;
  const struct rlx__backend_ops *ops = b->ops;
  size_t P = c->lo.nparams, F = sizeof(float) * P;
  void *p0, *p2;
  float *x;
  int32_t *y;
  int rc, half = q->j & 2, bf16 = (q->j & 4) != 0;
  float *loss = q->j & 1 ? &r->loss : NULL;
  int *correct = q->j & 16 ? &r->correct : NULL;
  if (q->gather.batch != 0) {
    if (q->op != RLX__SH_GRAD && q->op != RLX__SH_STEP && q->op != RLX__SH_STEP_SHARED)
      return bad(c, "a gather with a request that takes no batch");
    if ((rc = gather(c, q->gather.batch, q->gather.first, q->gather.stride)) != RLX_OK)
      return rc;
  }
  switch (q->op) {
  case RLX__SH_SET_PARAMS:
  case RLX__SH_GET_PARAMS:
  case RLX__SH_VELOCITY:
    if (at(c, &q->ref[0], F, &p0) || !p0)
      return bad(c, "parameters outside the memory it shares");
    if (q->op == RLX__SH_SET_PARAMS)
      return ops->set_params(b, p0);
    if (q->op == RLX__SH_GET_PARAMS)
      return ops->get_params(b, p0);
    return ops->velocity(b, p0, q->i != 0);
  case RLX__SH_GRAD:
    if ((rc = batch_refs(c, q, &x, &y)) != RLX_OK)
      return rc;
    if (at(c, &q->ref[2], half ? sizeof(uint16_t) * P : F, &p2) || !p2)
      return bad(c, "a gradient outside the memory it shares");
    if (half)
      return ops->grad_half(b, x, y, q->i, p2, bf16, loss, correct);
    return ops->grad(b, x, y, q->i, p2, loss, correct);
  case RLX__SH_APPLY:
  case RLX__SH_APPLY_RANGE:
    if (at(c, &q->ref[0], half ? sizeof(uint16_t) * P : F, &p0) || !p0)
      return bad(c, "a gradient outside the memory it shares");
    /* the client's rlx_model_grad_buffer: an update from it need not wait */
    b->own_grad = q->j & 8 ? p0 : NULL;
    if (q->op == RLX__SH_APPLY_RANGE) {
      if (q->u[0] > P || q->u[1] > P - q->u[0])
        return bad(c, "a range outside the parameters");
      return ops->apply_range(b, p0, q->u[0], q->u[1], q->f);
    }
    return half ? ops->apply_half(b, p0, bf16, q->f) : ops->apply(b, p0, q->f);
  case RLX__SH_STEP:
  case RLX__SH_STEP_SHARED:
    if ((rc = batch_refs(c, q, &x, &y)) != RLX_OK)
      return rc;
    if (q->op == RLX__SH_STEP)
      return ops->step(b, x, y, q->i, q->f, loss, correct);
    if (q->u[1] < 1 || q->u[1] > 64 || q->u[0] >= q->u[1])
      return bad(c, "a member's index or count out of range");
    return ops->step_shared(b, x, y, q->i, (int)q->u[0], (int)q->u[1], q->f, loss, correct);
  case RLX__SH_EVAL: {
    if ((rc = batch_refs(c, q, &x, &y)) != RLX_OK)
      return rc;
    if (!x)
      return bad(c, "an evaluation without its batch");
    long n = 0;
    rc = ops->eval(b, x, y, q->i, &r->loss_sum, &n);
    r->correct_sum = n;
    return rc;
  }
  case RLX__SH_PREFETCH:
    if (q->ref[0].region < 0 && q->ref[1].region < 0)
      return ops->prefetch(b, NULL, NULL, 0);
    if ((rc = batch_refs(c, q, &x, &y)) != RLX_OK)
      return rc;
    return x ? ops->prefetch(b, x, y, q->i) : bad(c, "a prefetch without its batch");
  case RLX__SH_DATA_ATTACH: {
    size_t n = q->u[0], dim = (size_t)c->lo.sizes[0];
    uint8_t *pix, *lab;
    void *lut;
    if (n == 0 || n > UINT32_MAX || at(c, &q->ref[0], n * dim, (void **)&pix) || !pix ||
        at(c, &q->ref[1], n, (void **)&lab) || !lab ||
        at(c, &q->ref[2], 256 * sizeof(float), &lut) || !lut)
      return bad(c, "a training set outside the memory it shares");
    for (size_t i = 0; i < n; i++)
      if (lab[i] >= c->lo.sizes[c->lo.nlayers])
        return bad(c, "a label that is not a class");
    rc = ops->data_attach(b, pix, lab, n, lut, q->u[1]);
    if (rc == RLX_OK) {
      c->count = n;
      c->norder = 0;
      c->gathered = 0;
    }
    return rc;
  }
  case RLX__SH_DATA_ORDER: {
    size_t n = q->u[0];
    uint32_t *order;
    if (c->count == 0 || n == 0 || n > c->count ||
        at(c, &q->ref[0], sizeof(uint32_t) * n, (void **)&order) || !order)
      return bad(c, "an order outside the memory it shares or the training set");
    for (size_t i = 0; i < n; i++)
      if (order[i] >= c->count)
        return bad(c, "an order naming an example not attached");
    c->gathered = 0;
    rc = ops->data_order(b, order, n);
    c->norder = rc == RLX_OK ? n : 0;
    return rc;
  }
  case RLX__SH_DATA_BATCH:
    return gather(c, q->i, q->u[0], q->u[1]);
  case RLX__SH_TOTALS: {
    long n = 0;
    rc = ops->totals(b, &r->loss_sum, &n);
    r->correct_sum = n;
    return rc;
  }
  default:
    return bad(c, "an unknown request");
  }
}

/* A request and the descriptor that may come with it: 1, 0 at the end
 * (or on a message that is not a request), -1 on an error. */
static int receive(int s, struct rlx__share_req *q, int *fd) {
  union {
    char buf[CMSG_SPACE(sizeof(int))];
    struct cmsghdr align;
  } ctl;
  struct iovec iov = {q, sizeof *q};
  struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl.buf,
                      .msg_controllen = sizeof ctl.buf};
  ssize_t n;
  *fd = -1;
  rlx__share_spin(s);
  do
    n = recvmsg(s, &mh, MSG_CMSG_CLOEXEC);
  while (n < 0 && errno == EINTR);
  for (struct cmsghdr *cm = CMSG_FIRSTHDR(&mh); n >= 0 && cm; cm = CMSG_NXTHDR(&mh, cm))
    if (cm->cmsg_level == SOL_SOCKET && cm->cmsg_type == SCM_RIGHTS &&
        cm->cmsg_len == CMSG_LEN(sizeof(int)))
      memcpy(fd, CMSG_DATA(cm), sizeof(int));
  if (n == (ssize_t)sizeof *q && !(mh.msg_flags & (MSG_TRUNC | MSG_CTRUNC)))
    return 1;
  if (*fd >= 0)
    close(*fd);
  if (n > 0)
    rlx__warn("compute: device share: a message of %zd bytes that is no request: connection "
              "closed", n);
  return n < 0 ? -1 : 0;
}

static void *serve_conn(void *arg) {
  struct conn *c = arg;
  struct rlx__share_req q;
  struct rlx__share_rep *r = malloc(sizeof *r);
  int fd;
  while (r && receive(c->fd, &q, &fd) == 1) {
    memset(r, 0, sizeof *r);
    rlx__err_setmsg("");
    r->rc = run(c, &q, fd, r);
    if (fd >= 0)
      close(fd);
    if (r->rc != RLX_OK)
      snprintf(r->msg, sizeof r->msg, "%s", rlx_errmsg());
    if (send(c->fd, r, sizeof *r, MSG_NOSIGNAL) != (ssize_t)sizeof *r || r->rc == RLX_ERR_CORRUPT)
      break; /* a corrupt request ends its connection, told why */
  }
  for (int i = 0; i < RLX__SH_REGIONS; i++)
    unmap_region(c, i);
  if (c->be)
    c->be->ops->destroy(c->be);
  close(c->fd);
  rlx__debug("compute: device %d: pid %d is done with it", c->d, (int)c->peer);
  free(r);
  free(c);
  atomic_fetch_sub(&live, 1);
  return NULL;
}

struct listener {
  int fd, d;
};

static void *listen_loop(void *arg) {
  struct listener *l = arg;
  for (;;) {
    int s = accept4(l->fd, NULL, NULL, SOCK_CLOEXEC);
    if (s < 0) {
      if (errno == EMFILE || errno == ENFILE) /* out of descriptors: a while, not a spin */
        nanosleep(&(struct timespec){0, 10 * 1000 * 1000}, NULL);
      if (errno == EINTR || errno == ECONNABORTED || errno == EMFILE || errno == ENFILE)
        continue;
      rlx__warn("compute: device %d: no longer serving other ranks: %s", l->d, strerror(errno));
      return NULL;
    }
    struct ucred cr;
    socklen_t len = sizeof cr;
    struct conn *c = NULL;
    pthread_t t;
    if (getsockopt(s, SOL_SOCKET, SO_PEERCRED, &cr, &len) != 0 || cr.uid != getuid()) {
      rlx__warn("compute: device %d: refused a process of another user", l->d);
    } else if ((c = calloc(1, sizeof *c)) != NULL) {
      c->fd = s;
      c->d = l->d;
      c->peer = cr.pid;
      atomic_fetch_add(&live, 1);
      pthread_attr_t at;
      pthread_attr_init(&at);
      pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
      int e = pthread_create(&t, &at, serve_conn, c);
      pthread_attr_destroy(&at);
      if (e == 0)
        continue;
      atomic_fetch_sub(&live, 1);
      free(c);
    }
    close(s);
  }
}

/* At exit, the ranks computing here get a while to finish (they are
 * usually in their last call, one collective behind this rank). */
static void wait_for_clients(void) {
  for (int i = 0; i < 3000 && atomic_load(&live) > 0; i++) {
    if (i == 0)
      rlx__info("compute: waiting for %d rank(s) computing through this process",
                atomic_load(&live));
    nanosleep(&(struct timespec){0, 10 * 1000 * 1000}, NULL);
  }
}

static void register_wait(void) { atexit(wait_for_clients); }

int rlx__share_serve(int fd, int d, char *why, size_t whylen) {
  static pthread_once_t once = PTHREAD_ONCE_INIT;
  struct listener *l = malloc(sizeof *l);
  pthread_t t;
  if (!l) {
    snprintf(why, whylen, "out of memory");
    return RLX_ERR_NOMEM;
  }
  l->fd = fd;
  l->d = d;
  pthread_attr_t at;
  pthread_attr_init(&at);
  pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
  int e = pthread_create(&t, &at, listen_loop, l);
  pthread_attr_destroy(&at);
  if (e != 0) {
    free(l);
    snprintf(why, whylen, "cannot start the thread serving the device: %s", strerror(e));
    return RLX_ERR_SYS;
  }
  pthread_once(&once, register_wait);
  return RLX_OK;
}
