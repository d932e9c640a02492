/* Comm's collectives: every one of librlxcoll's, blocking (allreduce) and
 * nonblocking (iallreduce: a Request whose wait() returns what the
 * blocking form returns), both parsed by one function. Buffers come
 * through the buffer protocol; the uneven forms take their counts as
 * sequences of ints, the blocks packed in rank order. */
#include <string.h>
#include "module.h"

/* One call: its buffers, its other arguments, and what runs it,
 * blocking (req NULL) or not. */
struct call {
  struct bufs b;
  rlx_comm_t *c;
  rlx_op_t op;
  int root;
  size_t *counts; /* the uneven forms: send counts, displs, recv counts, displs (PyMem) */
  int (*go)(struct call *k, rlx_request_t **req);
};

typedef int (*parse_fn)(struct call *k, PyObject *args, PyObject *kw, const char *name);

/* A format for PyArg_ParseTupleAndKeywords naming the call in its errors. */
static const char *fmt(char *buf, size_t len, const char *spec, const char *name) {
  snprintf(buf, len, "%s:%s", spec, name);
  return buf;
}

static int one_byte_float(int d) {
  if (d == -2)
    PyErr_SetString(PyExc_TypeError, "1-byte floats are not supported");
  return d != 0;
}

/* The buffers of a reduction or a bcast: in place into buf (no out), or
 * from buf into out, which holds count * mul / div items (allgather: x
 * size; reduce_scatter: / size); in_place_ok 0: out is required. */
static int prepare(struct bufs *b, PyObject *buf, PyObject *out, PyObject *dtype, size_t mul,
                   size_t div, int in_place_ok, const char *call) {
  int in_place = out == NULL || out == Py_None;
  if (in_place && !in_place_ok) {
    PyErr_Format(PyExc_TypeError, "%s needs out= (its result differs in size from buf)", call);
    return -1;
  }
  if (rlxpy_view(buf, &b->in, in_place, "buf") != 0)
    return -1;
  b->have_in = 1;
  if (one_byte_float(rlxpy_dtype_of(&b->in, dtype, &b->dt)))
    goto fail;
  b->count = (size_t)(b->in.len / b->in.itemsize);
  if (b->count % div != 0) {
    PyErr_Format(PyExc_ValueError, "%s: buf's %zu items do not split into %zu equal parts", call,
                 b->count, div);
    goto fail;
  }
  if (in_place) {
    b->send = RLX_IN_PLACE;
    b->recv = b->in.buf;
    Py_INCREF(buf);
    b->result = buf;
    return 0;
  }
  if (rlxpy_view(out, &b->out, 1, "out") != 0)
    goto fail;
  b->have_out = 1;
  rlx_dtype_t odt;
  if (rlxpy_dtype_of(&b->out, dtype, &odt) != 0)
    goto fail;
  size_t want = b->count * mul / div;
  if (odt != b->dt || (size_t)(b->out.len / b->out.itemsize) != want) {
    PyErr_Format(PyExc_ValueError, "%s: out must hold %zu items of buf's dtype, it holds %zd",
                 call, want, b->out.len / b->out.itemsize);
    goto fail;
  }
  b->send = b->out.buf == b->in.buf ? RLX_IN_PLACE : b->in.buf; /* (the same memory: in place) */
  b->recv = b->out.buf;
  Py_INCREF(out);
  b->result = out;
  return 0;
fail:
  rlxpy_bufs_release(b);
  return -1;
}

/* The buffers of the calls that move blocks: buf and out, either may be
 * None (where the call does not read or write it on this rank), of one
 * dtype; the result is out (or None). */
static int two_bufs(struct bufs *b, PyObject *buf, PyObject *out, PyObject *dtype,
                    const char *call) {
  int have_in = buf != NULL && buf != Py_None, have_out = out != NULL && out != Py_None;
  if (!have_in && !have_out) {
    PyErr_Format(PyExc_TypeError, "%s needs buf or out", call);
    return -1;
  }
  if (have_in) {
    if (rlxpy_view(buf, &b->in, 0, "buf") != 0)
      return -1;
    b->have_in = 1;
  }
  if (have_out) {
    if (rlxpy_view(out, &b->out, 1, "out") != 0)
      goto fail;
    b->have_out = 1;
  }
  if (one_byte_float(rlxpy_dtype_of(have_in ? &b->in : &b->out, dtype, &b->dt)))
    goto fail;
  rlx_dtype_t odt;
  if (have_in && have_out) {
    if (rlxpy_dtype_of(&b->out, dtype, &odt) != 0)
      goto fail;
    if (odt != b->dt) {
      PyErr_Format(PyExc_ValueError, "%s: buf and out must be of one dtype", call);
      goto fail;
    }
  }
  b->send = have_in ? b->in.buf : NULL;
  b->recv = have_out ? b->out.buf : NULL;
  b->result = have_out ? out : Py_None;
  Py_INCREF(b->result);
  return 0;
fail:
  rlxpy_bufs_release(b);
  return -1;
}

static size_t items(const Py_buffer *v, int have) {
  return have ? (size_t)(v->len / v->itemsize) : 0;
}

/* gather/scatter/alltoall: count items per rank; big_in/big_out: that
 * side holds p blocks of them. */
static int even_blocks(struct bufs *b, int big_in, int big_out, int p, const char *call) {
  size_t in = items(&b->in, b->have_in), out = items(&b->out, b->have_out);
  size_t count = b->have_in ? (big_in ? in / (size_t)p : in) : (big_out ? out / (size_t)p : out);
  if ((b->have_in && (big_in ? count * (size_t)p : count) != in) ||
      (b->have_out && (big_out ? count * (size_t)p : count) != out)) {
    PyErr_Format(PyExc_ValueError, "%s: buf has %zu items and out %zu: they must be %s", call, in,
                 out,
                 big_in && big_out ? "equal, and split in as many blocks as ranks"
                 : big_in          ? "size x and 1 x the count"
                                   : "1 x and size x the count");
    return -1;
  }
  b->count = count;
  return 0;
}

/* counts (a sequence of p ints >= 0) into c[], their prefix sums into
 * d[]; the total, or -1 with an exception set. */
static Py_ssize_t counts_of(PyObject *seq, int p, size_t *c, size_t *d, const char *what,
                            const char *call) {
  if (seq == NULL || seq == Py_None) {
    PyErr_Format(PyExc_TypeError, "%s needs %s on this rank", call, what);
    return -1;
  }
  PyObject *fast = PySequence_Fast(seq, "counts must be a sequence of ints");
  if (fast == NULL)
    return -1;
  if (PySequence_Fast_GET_SIZE(fast) != p) {
    PyErr_Format(PyExc_ValueError, "%s: %s has %zd counts for %d ranks", call, what,
                 PySequence_Fast_GET_SIZE(fast), p);
    Py_DECREF(fast);
    return -1;
  }
  size_t total = 0;
  for (int i = 0; i < p; i++) {
    long long v = PyLong_AsLongLong(PySequence_Fast_GET_ITEM(fast, i));
    if ((v == -1 && PyErr_Occurred()) || v < 0) {
      if (!PyErr_Occurred())
        PyErr_Format(PyExc_ValueError, "%s: %s[%d] is negative", call, what, i);
      Py_DECREF(fast);
      return -1;
    }
    c[i] = (size_t)v;
    d[i] = total;
    total += (size_t)v;
  }
  Py_DECREF(fast);
  return (Py_ssize_t)total;
}

/* The uneven forms' four arrays of p counts (send counts and displs, recv
 * counts and displs): k->counts. */
static size_t *counts_room(struct call *k) {
  int p = rlx_comm_size(k->c);
  k->counts = PyMem_Calloc((size_t)p * 4, sizeof(size_t));
  if (k->counts == NULL)
    PyErr_NoMemory();
  return k->counts;
}
#define SC(k) ((k)->counts)
#define SD(k) ((k)->counts + rlx_comm_size((k)->c))
#define RC(k) ((k)->counts + 2 * rlx_comm_size((k)->c))
#define RD(k) ((k)->counts + 3 * rlx_comm_size((k)->c))

/* A parsed call given up (an exception set): -1. */
static int drop(struct call *k) {
  rlxpy_bufs_release(&k->b);
  Py_CLEAR(k->b.result);
  return -1;
}

static int wrong_size(struct call *k, const char *call, const char *which, size_t has,
                      size_t want) {
  PyErr_Format(PyExc_ValueError, "%s: %s holds %zu items where the counts add up to %zu", call,
               which, has, want);
  return drop(k);
}

/* ---- the reductions and bcast -------------------------------------------------- */

static int go_allreduce(struct call *k, rlx_request_t **req) {
  struct bufs *b = &k->b;
  return req ? rlx_iallreduce(b->send, b->recv, b->count, b->dt, k->op, k->c, req)
             : rlx_allreduce(b->send, b->recv, b->count, b->dt, k->op, k->c);
}

static int parse_allreduce(struct call *k, PyObject *args, PyObject *kw, const char *name) {
  static char *kwlist[] = {"buf", "op", "out", "dtype", NULL};
  PyObject *buf, *opo = NULL, *out = NULL, *dtype = NULL;
  char f[48];
  k->go = go_allreduce;
  if (!PyArg_ParseTupleAndKeywords(args, kw, fmt(f, sizeof f, "O|OOO", name), kwlist, &buf, &opo,
                                   &out, &dtype) ||
      (opo && rlxpy_op_of(opo, &k->op)))
    return -1;
  return prepare(&k->b, buf, out, dtype, 1, 1, 1, name);
}

static int go_reduce(struct call *k, rlx_request_t **req) {
  struct bufs *b = &k->b;
  return req ? rlx_ireduce(b->send, b->recv, b->count, b->dt, k->op, k->root, k->c, req)
             : rlx_reduce(b->send, b->recv, b->count, b->dt, k->op, k->root, k->c);
}

static int parse_reduce(struct call *k, PyObject *args, PyObject *kw, const char *name) {
  static char *kwlist[] = {"buf", "op", "root", "out", "dtype", NULL};
  PyObject *buf, *opo = NULL, *out = NULL, *dtype = NULL;
  char f[48];
  k->go = go_reduce;
  if (!PyArg_ParseTupleAndKeywords(args, kw, fmt(f, sizeof f, "O|OiOO", name), kwlist, &buf, &opo,
                                   &k->root, &out, &dtype) ||
      (opo && rlxpy_op_of(opo, &k->op)) || prepare(&k->b, buf, out, dtype, 1, 1, 1, name))
    return -1;
  if (k->b.send == RLX_IN_PLACE && k->root != rlx_comm_rank(k->c))
    k->b.send = k->b.recv; /* in place means nothing off the root: buf is what it sends */
  return 0;
}

static int go_bcast(struct call *k, rlx_request_t **req) {
  struct bufs *b = &k->b;
  return req ? rlx_ibcast(b->recv, b->count, b->dt, k->root, k->c, req)
             : rlx_bcast(b->recv, b->count, b->dt, k->root, k->c);
}

static int parse_bcast(struct call *k, PyObject *args, PyObject *kw, const char *name) {
  static char *kwlist[] = {"buf", "root", "dtype", NULL};
  PyObject *buf, *dtype = NULL;
  char f[48];
  k->go = go_bcast;
  if (!PyArg_ParseTupleAndKeywords(args, kw, fmt(f, sizeof f, "O|iO", name), kwlist, &buf,
                                   &k->root, &dtype))
    return -1;
  return prepare(&k->b, buf, NULL, dtype, 1, 1, 1, name);
}

static int not_in_place(struct call *k, const char *name) {
  if (k->b.send != RLX_IN_PLACE)
    return 0;
  PyErr_Format(PyExc_ValueError, "%s: out must not be buf", name);
  return drop(k);
}

static int go_allgather(struct call *k, rlx_request_t **req) {
  struct bufs *b = &k->b;
  return req ? rlx_iallgather(b->send, b->recv, b->count, b->dt, k->c, req)
             : rlx_allgather(b->send, b->recv, b->count, b->dt, k->c);
}

static int parse_allgather(struct call *k, PyObject *args, PyObject *kw, const char *name) {
  static char *kwlist[] = {"buf", "out", "dtype", NULL};
  PyObject *buf, *out = NULL, *dtype = NULL;
  char f[48];
  k->go = go_allgather;
  if (!PyArg_ParseTupleAndKeywords(args, kw, fmt(f, sizeof f, "OO|O", name), kwlist, &buf, &out,
                                   &dtype) ||
      prepare(&k->b, buf, out, dtype, (size_t)rlx_comm_size(k->c), 1, 0, name))
    return -1;
  return not_in_place(k, name);
}

static int go_reduce_scatter(struct call *k, rlx_request_t **req) {
  struct bufs *b = &k->b;
  size_t n = b->count / (size_t)rlx_comm_size(k->c);
  return req ? rlx_ireduce_scatter(b->send, b->recv, n, b->dt, k->op, k->c, req)
             : rlx_reduce_scatter(b->send, b->recv, n, b->dt, k->op, k->c);
}

static int parse_reduce_scatter(struct call *k, PyObject *args, PyObject *kw, const char *name) {
  static char *kwlist[] = {"buf", "out", "op", "dtype", NULL};
  PyObject *buf, *out = NULL, *opo = NULL, *dtype = NULL;
  char f[48];
  k->go = go_reduce_scatter;
  if (!PyArg_ParseTupleAndKeywords(args, kw, fmt(f, sizeof f, "OO|OO", name), kwlist, &buf, &out,
                                   &opo, &dtype) ||
      (opo && rlxpy_op_of(opo, &k->op)) ||
      prepare(&k->b, buf, out, dtype, 1, (size_t)rlx_comm_size(k->c), 0, name))
    return -1;
  return not_in_place(k, name);
}

static int go_barrier(struct call *k, rlx_request_t **req) {
  return req ? rlx_ibarrier(k->c, req) : rlx_barrier(k->c);
}

static int parse_barrier(struct call *k, PyObject *args, PyObject *kw, const char *name) {
  static char *kwlist[] = {NULL};
  char f[48];
  k->go = go_barrier;
  if (!PyArg_ParseTupleAndKeywords(args, kw, fmt(f, sizeof f, "", name), kwlist))
    return -1;
  Py_INCREF(Py_None);
  k->b.result = Py_None;
  return 0;
}

/* ---- gather, scatter, all-to-all ------------------------------------------------- */

static int go_gather(struct call *k, rlx_request_t **req) {
  struct bufs *b = &k->b;
  return req ? rlx_igather(b->send, b->recv, b->count, b->dt, k->root, k->c, req)
             : rlx_gather(b->send, b->recv, b->count, b->dt, k->root, k->c);
}

static int parse_gather(struct call *k, PyObject *args, PyObject *kw, const char *name) {
  static char *kwlist[] = {"buf", "out", "root", "dtype", NULL};
  PyObject *buf, *out = NULL, *dtype = NULL;
  char f[48];
  k->go = go_gather;
  if (!PyArg_ParseTupleAndKeywords(args, kw, fmt(f, sizeof f, "O|OiO", name), kwlist, &buf, &out,
                                   &k->root, &dtype) ||
      two_bufs(&k->b, buf, out, dtype, name))
    return -1;
  return even_blocks(&k->b, 0, 1, rlx_comm_size(k->c), name) ? drop(k) : 0;
}

static int go_scatter(struct call *k, rlx_request_t **req) {
  struct bufs *b = &k->b;
  return req ? rlx_iscatter(b->send, b->recv, b->count, b->dt, k->root, k->c, req)
             : rlx_scatter(b->send, b->recv, b->count, b->dt, k->root, k->c);
}

static int parse_scatter(struct call *k, PyObject *args, PyObject *kw, const char *name) {
  static char *kwlist[] = {"buf", "out", "root", "dtype", NULL};
  PyObject *buf, *out, *dtype = NULL;
  char f[48];
  k->go = go_scatter;
  if (!PyArg_ParseTupleAndKeywords(args, kw, fmt(f, sizeof f, "OO|iO", name), kwlist, &buf, &out,
                                   &k->root, &dtype) ||
      two_bufs(&k->b, buf, out, dtype, name))
    return -1;
  return even_blocks(&k->b, 1, 0, rlx_comm_size(k->c), name) ? drop(k) : 0;
}

static int go_alltoall(struct call *k, rlx_request_t **req) {
  struct bufs *b = &k->b;
  return req ? rlx_ialltoall(b->send, b->recv, b->count, b->dt, k->c, req)
             : rlx_alltoall(b->send, b->recv, b->count, b->dt, k->c);
}

static int parse_alltoall(struct call *k, PyObject *args, PyObject *kw, const char *name) {
  static char *kwlist[] = {"buf", "out", "dtype", NULL};
  PyObject *buf, *out, *dtype = NULL;
  char f[48];
  k->go = go_alltoall;
  if (!PyArg_ParseTupleAndKeywords(args, kw, fmt(f, sizeof f, "OO|O", name), kwlist, &buf, &out,
                                   &dtype) ||
      two_bufs(&k->b, buf, out, dtype, name))
    return -1;
  return even_blocks(&k->b, 1, 1, rlx_comm_size(k->c), name) ? drop(k) : 0;
}

/* ---- the uneven forms ------------------------------------------------------------- */

static int go_alltoallv(struct call *k, rlx_request_t **req) {
  struct bufs *b = &k->b;
  return req ? rlx_ialltoallv(b->send, SC(k), SD(k), b->recv, RC(k), RD(k), b->dt, k->c, req)
             : rlx_alltoallv(b->send, SC(k), SD(k), b->recv, RC(k), RD(k), b->dt, k->c);
}

static int parse_alltoallv(struct call *k, PyObject *args, PyObject *kw, const char *name) {
  static char *kwlist[] = {"buf", "sendcounts", "out", "recvcounts", "dtype", NULL};
  PyObject *buf, *sco, *out, *rco, *dtype = NULL;
  char f[48];
  k->go = go_alltoallv;
  if (!PyArg_ParseTupleAndKeywords(args, kw, fmt(f, sizeof f, "OOOO|O", name), kwlist, &buf, &sco,
                                   &out, &rco, &dtype) ||
      counts_room(k) == NULL)
    return -1;
  int p = rlx_comm_size(k->c);
  Py_ssize_t st = counts_of(sco, p, SC(k), SD(k), "sendcounts", name);
  Py_ssize_t rt = st < 0 ? -1 : counts_of(rco, p, RC(k), RD(k), "recvcounts", name);
  if (rt < 0 || two_bufs(&k->b, buf, out, dtype, name))
    return -1;
  if (items(&k->b.in, k->b.have_in) != (size_t)st)
    return wrong_size(k, name, "buf", items(&k->b.in, k->b.have_in), (size_t)st);
  if (items(&k->b.out, k->b.have_out) != (size_t)rt)
    return wrong_size(k, name, "out", items(&k->b.out, k->b.have_out), (size_t)rt);
  return 0;
}

static int go_gatherv(struct call *k, rlx_request_t **req) {
  struct bufs *b = &k->b;
  return req ? rlx_igatherv(b->send, b->count, b->recv, RC(k), RD(k), b->dt, k->root, k->c, req)
             : rlx_gatherv(b->send, b->count, b->recv, RC(k), RD(k), b->dt, k->root, k->c);
}

static int parse_gatherv(struct call *k, PyObject *args, PyObject *kw, const char *name) {
  static char *kwlist[] = {"buf", "out", "recvcounts", "root", "dtype", NULL};
  PyObject *buf, *out = NULL, *rco = NULL, *dtype = NULL;
  char f[48];
  k->go = go_gatherv;
  if (!PyArg_ParseTupleAndKeywords(args, kw, fmt(f, sizeof f, "O|OOiO", name), kwlist, &buf, &out,
                                   &rco, &k->root, &dtype) ||
      counts_room(k) == NULL)
    return -1;
  Py_ssize_t rt = 0;
  int at_root = k->root == rlx_comm_rank(k->c);
  if (at_root && (rt = counts_of(rco, rlx_comm_size(k->c), RC(k), RD(k), "recvcounts", name)) < 0)
    return -1;
  if (two_bufs(&k->b, buf, at_root ? out : Py_None, dtype, name))
    return -1;
  if (at_root && items(&k->b.out, k->b.have_out) != (size_t)rt)
    return wrong_size(k, name, "out", items(&k->b.out, k->b.have_out), (size_t)rt);
  k->b.count = items(&k->b.in, k->b.have_in); /* (go runs after a Request took the views) */
  return 0;
}

static int go_scatterv(struct call *k, rlx_request_t **req) {
  struct bufs *b = &k->b;
  return req ? rlx_iscatterv(b->send, SC(k), SD(k), b->recv, b->count, b->dt, k->root, k->c, req)
             : rlx_scatterv(b->send, SC(k), SD(k), b->recv, b->count, b->dt, k->root, k->c);
}

static int parse_scatterv(struct call *k, PyObject *args, PyObject *kw, const char *name) {
  static char *kwlist[] = {"buf", "sendcounts", "out", "root", "dtype", NULL};
  PyObject *buf, *sco, *out, *dtype = NULL;
  char f[48];
  k->go = go_scatterv;
  if (!PyArg_ParseTupleAndKeywords(args, kw, fmt(f, sizeof f, "OOO|iO", name), kwlist, &buf, &sco,
                                   &out, &k->root, &dtype) ||
      counts_room(k) == NULL)
    return -1;
  Py_ssize_t st = 0;
  int at_root = k->root == rlx_comm_rank(k->c);
  if (at_root && (st = counts_of(sco, rlx_comm_size(k->c), SC(k), SD(k), "sendcounts", name)) < 0)
    return -1;
  if (two_bufs(&k->b, at_root ? buf : Py_None, out, dtype, name))
    return -1;
  if (at_root && items(&k->b.in, k->b.have_in) != (size_t)st)
    return wrong_size(k, name, "buf", items(&k->b.in, k->b.have_in), (size_t)st);
  k->b.count = items(&k->b.out, k->b.have_out);
  return 0;
}

static int go_allgatherv(struct call *k, rlx_request_t **req) {
  struct bufs *b = &k->b;
  return req ? rlx_iallgatherv(b->send, b->count, b->recv, RC(k), RD(k), b->dt, k->c, req)
             : rlx_allgatherv(b->send, b->count, b->recv, RC(k), RD(k), b->dt, k->c);
}

static int parse_allgatherv(struct call *k, PyObject *args, PyObject *kw, const char *name) {
  static char *kwlist[] = {"buf", "out", "recvcounts", "dtype", NULL};
  PyObject *buf, *out, *rco, *dtype = NULL;
  char f[48];
  k->go = go_allgatherv;
  if (!PyArg_ParseTupleAndKeywords(args, kw, fmt(f, sizeof f, "OOO|O", name), kwlist, &buf, &out,
                                   &rco, &dtype) ||
      counts_room(k) == NULL)
    return -1;
  Py_ssize_t rt = counts_of(rco, rlx_comm_size(k->c), RC(k), RD(k), "recvcounts", name);
  if (rt < 0 || two_bufs(&k->b, buf, out, dtype, name))
    return -1;
  if (items(&k->b.out, k->b.have_out) != (size_t)rt)
    return wrong_size(k, name, "out", items(&k->b.out, k->b.have_out), (size_t)rt);
  k->b.count = items(&k->b.in, k->b.have_in);
  return 0;
}

static int go_reduce_scatterv(struct call *k, rlx_request_t **req) {
  struct bufs *b = &k->b;
  return req ? rlx_ireduce_scatterv(b->send, b->recv, RC(k), b->dt, k->op, k->c, req)
             : rlx_reduce_scatterv(b->send, b->recv, RC(k), b->dt, k->op, k->c);
}

static int parse_reduce_scatterv(struct call *k, PyObject *args, PyObject *kw, const char *name) {
  static char *kwlist[] = {"buf", "out", "recvcounts", "op", "dtype", NULL};
  PyObject *buf, *out, *rco, *opo = NULL, *dtype = NULL;
  char f[48];
  k->go = go_reduce_scatterv;
  if (!PyArg_ParseTupleAndKeywords(args, kw, fmt(f, sizeof f, "OOO|OO", name), kwlist, &buf, &out,
                                   &rco, &opo, &dtype) ||
      (opo && rlxpy_op_of(opo, &k->op)) || counts_room(k) == NULL)
    return -1;
  Py_ssize_t rt = counts_of(rco, rlx_comm_size(k->c), RC(k), RD(k), "recvcounts", name);
  if (rt < 0 || two_bufs(&k->b, buf, out, dtype, name))
    return -1;
  size_t mine = RC(k)[rlx_comm_rank(k->c)];
  if (items(&k->b.in, k->b.have_in) != (size_t)rt)
    return wrong_size(k, name, "buf", items(&k->b.in, k->b.have_in), (size_t)rt);
  if (items(&k->b.out, k->b.have_out) != mine) {
    PyErr_Format(PyExc_ValueError, "%s: out holds %zu items where this rank's recvcount is %zu",
                 name, items(&k->b.out, k->b.have_out), mine);
    return drop(k);
  }
  return 0;
}

/* ---- running a call ------------------------------------------------------------------ */

static int go_request(struct bufs *b, void *ctx, rlx_request_t **req) {
  (void)b;
  struct call *k = ctx;
  return k->go(k, req);
}

/* Parse, then run blocking with the GIL released, or start it (nb) and
 * return its Request. */
static PyObject *run(Comm *s, PyObject *args, PyObject *kw, parse_fn parse, const char *name,
                     int nb) {
  struct call k;
  memset(&k, 0, sizeof k);
  k.c = s->c;
  k.op = RLX_SUM;
  if (rlxpy_live(s))
    return NULL;
  if (parse(&k, args, kw, name) != 0) {
    PyMem_Free(k.counts);
    return NULL;
  }
  if (nb)
    return rlxpy_start(&k.b, k.counts, go_request, &k);
  int rc;
  Py_BEGIN_ALLOW_THREADS
  rc = k.go(&k, NULL);
  Py_END_ALLOW_THREADS
  rlxpy_bufs_release(&k.b);
  PyMem_Free(k.counts);
  if (rc != RLX_OK) {
    Py_XDECREF(k.b.result);
    return rlxpy_raise(rc);
  }
  return k.b.result;
}

#define BOTH(x)                                                                                    \
  static PyObject *comm_##x(Comm *s, PyObject *a, PyObject *kw) {                                 \
    return run(s, a, kw, parse_##x, #x, 0);                                                        \
  }                                                                                                \
  static PyObject *comm_i##x(Comm *s, PyObject *a, PyObject *kw) {                                \
    return run(s, a, kw, parse_##x, "i" #x, 1);                                                    \
  }
BOTH(allreduce)
BOTH(reduce)
BOTH(bcast)
BOTH(allgather)
BOTH(reduce_scatter)
BOTH(barrier)
BOTH(gather)
BOTH(scatter)
BOTH(alltoall)
BOTH(alltoallv)
BOTH(gatherv)
BOTH(scatterv)
BOTH(allgatherv)
BOTH(reduce_scatterv)

/* A call and its nonblocking form, one docstring each. */
#define METHODS(x, sig, doc)                                                                       \
  {#x, (PyCFunction)(void (*)(void))comm_##x, METH_VARARGS | METH_KEYWORDS,                        \
   #x sig "\n--\n\n" doc},                                                                         \
  {"i" #x, (PyCFunction)(void (*)(void))comm_i##x, METH_VARARGS | METH_KEYWORDS,                   \
   "i" #x sig "\n--\n\nStart " #x " and return a Request: its wait() returns what " #x             \
   " returns (or raises). The buffers stay in use until it completes."}

PyMethodDef rlxpy_coll_methods[] = {
    METHODS(allreduce, "(buf, op='sum', out=None, dtype=None)",
            "Reduce buf over every rank (op: 'sum', 'prod', 'min', 'max', 'avg', 'band', 'bor', "
            "'bxor'); the result in buf (in place) or in out. Returns the result buffer."),
    METHODS(reduce, "(buf, op='sum', root=0, out=None, dtype=None)",
            "As allreduce, the result only on root."),
    METHODS(bcast, "(buf, root=0, dtype=None)", "Root's buf into every rank's buf. Returns buf."),
    METHODS(allgather, "(buf, out, dtype=None)",
            "Every rank's buf, in rank order, into out (size x len(buf) items)."),
    METHODS(reduce_scatter, "(buf, out, op='sum', dtype=None)",
            "Reduce buf over every rank; rank r gets the r-th of size equal parts in out."),
    METHODS(barrier, "()", "Wait for every rank."),
    METHODS(gather, "(buf, out=None, root=0, dtype=None)",
            "Every rank's buf into the root's out (size x as many items, rank i's at block i; "
            "None off the root). Returns out."),
    METHODS(scatter, "(buf, out, root=0, dtype=None)",
            "Block i of the root's buf (None off the root) into rank i's out. Returns out."),
    METHODS(alltoall, "(buf, out, dtype=None)",
            "Block j of buf to rank j; block i of out from rank i. Returns out."),
    METHODS(alltoallv, "(buf, sendcounts, out, recvcounts, dtype=None)",
            "sendcounts[j] items of buf, in order, to rank j; recvcounts[i] from rank i into "
            "out, in order. Returns out."),
    METHODS(gatherv, "(buf, out=None, recvcounts=None, root=0, dtype=None)",
            "Every rank's buf (any length) into the root's out, rank i's recvcounts[i] items "
            "after rank i-1's; out and recvcounts only on the root. Returns out."),
    METHODS(scatterv, "(buf, sendcounts, out, root=0, dtype=None)",
            "sendcounts[i] items of the root's buf, in order, to rank i's out (all of it); buf "
            "and sendcounts only on the root (None elsewhere). Returns out."),
    METHODS(allgatherv, "(buf, out, recvcounts, dtype=None)",
            "Every rank's buf (rank i's: recvcounts[i] items) into out, in rank order. Returns "
            "out."),
    METHODS(reduce_scatterv, "(buf, out, recvcounts, op='sum', dtype=None)",
            "Reduce buf (the total of recvcounts items) over every rank; rank i gets the "
            "recvcounts[i] items of block i in out. Every rank passes the same recvcounts."),
    {NULL, NULL, 0, NULL}};
