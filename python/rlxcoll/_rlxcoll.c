/* rlxcoll._rlxcoll: librlxcoll for Python (the rlxcoll package re-exports
 * it). Buffers in through the buffer protocol (numpy arrays, bytearray,
 * memoryview, anything C-contiguous), the dtype from their format; errors
 * out as exceptions under rlxcoll.Error carrying rlx_errmsg(); the GIL
 * released while a call waits, and Python's signal handlers (Ctrl-C) run
 * meanwhile: a KeyboardInterrupt fails the call here and on the others. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <string.h>
#include <rlxcoll/rlxcoll.h>

/* ---- errors ------------------------------------------------------------------ */

static PyObject *Error; /* rlxcoll.Error; the others derive from it */
static struct {
  int code;
  const char *name, *doc;
  PyObject **base; /* a builtin it also is, or NULL */
  PyObject *type;
} errors[] = {
    {RLX_ERR_ARG, "ArgumentError", "An invalid argument (also a ValueError).", &PyExc_ValueError, NULL},
    {RLX_ERR_NOMEM, "NoMemory", "Out of memory (also a MemoryError).", &PyExc_MemoryError, NULL},
    {RLX_ERR_STATE, "StateError", "A call not valid now (before init, after finalize, ...).", NULL, NULL},
    {RLX_ERR_BOOTSTRAP, "BootstrapError", "The job could not be wired up.", NULL, NULL},
    {RLX_ERR_AUTH, "AuthError", "A peer or the rendezvous did not prove the job key.", NULL, NULL},
    {RLX_ERR_PEER_LOST, "PeerLost", "A rank of the call died or became unreachable.", NULL, NULL},
    {RLX_ERR_TIMEOUT, "Timeout", "RLX_TIMEOUT passed (also a TimeoutError).", &PyExc_TimeoutError, NULL},
    {RLX_ERR_MISMATCH, "Mismatch", "Ranks called different collectives.", NULL, NULL},
    {RLX_ERR_CORRUPT, "Corrupt", "A frame failed its checksum.", NULL, NULL},
    {RLX_ERR_REVOKED, "Revoked", "The communicator failed earlier; shrink it.", NULL, NULL},
    {RLX_ERR_DEVICE, "DeviceError", "The compute device failed.", NULL, NULL},
    {RLX_ERR_SYS, "SysError", "A system call failed (also an OSError).", &PyExc_OSError, NULL},
    {RLX_ERR_INTERRUPTED, "Interrupted", "A rank's call was interrupted (Ctrl-C there).", NULL, NULL},
    {RLX_ERR_TRUNCATE, "Truncated", "A message was longer than its receive buffer.", NULL, NULL},
};
#define NERRORS (sizeof errors / sizeof errors[0])

/* Raise the exception for rc (a KeyboardInterrupt already raised by our
 * interrupt check wins). Returns NULL. */
static PyObject *raise(int rc) {
  if (PyErr_Occurred())
    return NULL;
  PyObject *type = Error;
  for (size_t i = 0; i < NERRORS; i++)
    if (errors[i].code == rc)
      type = errors[i].type;
  PyObject *args = Py_BuildValue("(s)", rlx_errmsg()[0] ? rlx_errmsg() : rlx_strerror(rc));
  if (args == NULL)
    return NULL;
  PyObject *e = PyObject_Call(type, args, NULL);
  Py_DECREF(args);
  if (e == NULL)
    return NULL;
  PyObject *code = PyLong_FromLong(rc);
  if (code != NULL) {
    PyObject_SetAttrString(e, "code", code);
    Py_DECREF(code);
  }
  PyErr_SetObject(type, e);
  Py_DECREF(e);
  return NULL;
}

/* While a call waits with the GIL released: let Python run its signal
 * handlers (main thread only); one that raised (KeyboardInterrupt) stops
 * the call. */
static int check_signals(void *arg) {
  (void)arg;
  PyGILState_STATE st = PyGILState_Ensure();
  int stop = PyErr_CheckSignals() != 0;
  PyGILState_Release(st);
  return stop;
}

/* ---- dtypes and ops ------------------------------------------------------------ */

static int dtype_of(const Py_buffer *b, PyObject *name, rlx_dtype_t *dt) {
  const char *f = b->format ? b->format : "B";
  if (name != NULL && name != Py_None) {
    static const struct { const char *n; rlx_dtype_t dt; size_t size; } names[] = {
        {"int8", RLX_INT8, 1},       {"uint8", RLX_UINT8, 1},     {"int32", RLX_INT32, 4},
        {"uint32", RLX_UINT32, 4},   {"int64", RLX_INT64, 8},     {"uint64", RLX_UINT64, 8},
        {"float16", RLX_FLOAT16, 2}, {"bfloat16", RLX_BFLOAT16, 2}, {"float32", RLX_FLOAT32, 4},
        {"float64", RLX_FLOAT64, 8}};
    const char *n = PyUnicode_Check(name) ? PyUnicode_AsUTF8(name) : NULL;
    for (size_t i = 0; n && i < sizeof names / sizeof names[0]; i++)
      if (strcmp(n, names[i].n) == 0) {
        if ((size_t)b->itemsize != names[i].size) {
          PyErr_Format(PyExc_ValueError, "dtype=%s needs items of %zu bytes, the buffer's are %zd",
                       n, names[i].size, b->itemsize);
          return -1;
        }
        *dt = names[i].dt;
        return 0;
      }
    PyErr_Format(PyExc_ValueError, "dtype must be one of int8, uint8, int32, uint32, int64, "
                 "uint64, float16, bfloat16, float32, float64");
    return -1;
  }
  while (*f == '@' || *f == '=' || *f == '<' || *f == '!' || *f == '>') {
    if ((*f == '>' || *f == '!') && b->itemsize > 1) {
      PyErr_SetString(PyExc_TypeError, "big-endian buffers are not supported");
      return -1;
    }
    f++;
  }
  int is_signed = 0, is_float = 0;
  switch (*f) {
  case 'b': case 'h': case 'i': case 'l': case 'q': case 'n': is_signed = 1; break;
  case 'B': case 'H': case 'I': case 'L': case 'Q': case 'N': case 'c': break;
  case 'e': case 'f': case 'd': is_float = 1; break;
  default:
    PyErr_Format(PyExc_TypeError, "buffers of format '%s' are not supported (numbers of 1, 4 or "
                 "8 bytes, float16/32/64)", b->format);
    return -1;
  }
  if (f[1] != '\0') {
    PyErr_Format(PyExc_TypeError, "buffers of format '%s' are not supported", b->format);
    return -1;
  }
  switch (b->itemsize) {
  case 1: *dt = is_signed ? RLX_INT8 : RLX_UINT8; return is_float ? -2 : 0;
  case 2: if (is_float) { *dt = RLX_FLOAT16; return 0; } break;
  case 4: *dt = is_float ? RLX_FLOAT32 : is_signed ? RLX_INT32 : RLX_UINT32; return 0;
  case 8: *dt = is_float ? RLX_FLOAT64 : is_signed ? RLX_INT64 : RLX_UINT64; return 0;
  }
  PyErr_Format(PyExc_TypeError, "%zd-byte %s items are not supported (pass dtype='bfloat16' "
               "for 2-byte bfloat16 data)", b->itemsize, is_float ? "float" : "integer");
  return -1;
}

static int op_of(PyObject *o, rlx_op_t *op) {
  static const struct { const char *n; rlx_op_t op; } ops[] = {
      {"sum", RLX_SUM}, {"prod", RLX_PROD}, {"product", RLX_PROD}, {"min", RLX_MIN},
      {"max", RLX_MAX}, {"avg", RLX_AVG},   {"mean", RLX_AVG},  {"band", RLX_BAND},
      {"bor", RLX_BOR}, {"bxor", RLX_BXOR}};
  const char *n = o && PyUnicode_Check(o) ? PyUnicode_AsUTF8(o) : NULL;
  for (size_t i = 0; n && i < sizeof ops / sizeof ops[0]; i++)
    if (strcmp(n, ops[i].n) == 0) {
      *op = ops[i].op;
      return 0;
    }
  PyErr_SetString(PyExc_ValueError,
                  "op must be 'sum', 'prod', 'min', 'max', 'avg', 'band', 'bor' or 'bxor'");
  return -1;
}

/* A buffer view for a call: C-contiguous, writable when asked. */
static int view(PyObject *o, Py_buffer *b, int writable, const char *what) {
  int flags = PyBUF_FORMAT | PyBUF_C_CONTIGUOUS | (writable ? PyBUF_WRITABLE : 0);
  if (PyObject_GetBuffer(o, b, flags) != 0) {
    if (writable && PyObject_GetBuffer(o, b, PyBUF_FORMAT | PyBUF_C_CONTIGUOUS) == 0) {
      PyBuffer_Release(b);
      PyErr_Clear();
      PyErr_Format(PyExc_TypeError, "%s is read-only%s", what,
                   strcmp(what, "buf") == 0 ? ": pass out= for the result" : "");
    }
    return -1;
  }
  return 0;
}

/* ---- Request ------------------------------------------------------------------- */

typedef struct {
  PyObject_HEAD
  rlx_request_t *req;
  Py_buffer in, out;
  int have_in, have_out;
  PyObject *result;
  rlx_status_t st; /* a receive's, once complete */
  int is_recv;
} Request;

static PyTypeObject RequestType;

static void request_release(Request *r) {
  if (r->have_in)
    PyBuffer_Release(&r->in);
  if (r->have_out)
    PyBuffer_Release(&r->out);
  r->have_in = r->have_out = 0;
}

static void request_dealloc(Request *r) {
  if (r->req != NULL) { /* never waited for: finish it, the buffers are in use */
    Py_BEGIN_ALLOW_THREADS
    rlx_wait(&r->req);
    Py_END_ALLOW_THREADS
  }
  request_release(r);
  Py_XDECREF(r->result);
  Py_TYPE(r)->tp_free((PyObject *)r);
}

static PyObject *request_wait(Request *r, PyObject *noargs) {
  (void)noargs;
  if (r->req != NULL) {
    int rc;
    Py_BEGIN_ALLOW_THREADS
    rc = rlx_wait_status(&r->req, &r->st);
    Py_END_ALLOW_THREADS
    request_release(r);
    if (rc != RLX_OK)
      return raise(rc);
  }
  Py_INCREF(r->result);
  return r->result;
}

/* (source, tag, count) of a completed receive; None before, or for a send. */
static PyObject *request_status(Request *r, void *unused) {
  (void)unused;
  if (r->req != NULL || !r->is_recv)
    Py_RETURN_NONE;
  return Py_BuildValue("(iin)", r->st.source, r->st.tag, (Py_ssize_t)r->st.count);
}

static PyObject *request_test(Request *r, PyObject *noargs) {
  (void)noargs;
  if (r->req == NULL)
    Py_RETURN_TRUE;
  int done = 0, idx = -1, rc = rlx_testany(1, &r->req, &idx, &done, &r->st);
  if (rc != RLX_OK) {
    request_release(r);
    return raise(rc);
  }
  if (done)
    request_release(r);
  return PyBool_FromLong(done);
}

static PyMethodDef request_methods[] = {
    {"wait", (PyCFunction)request_wait, METH_NOARGS,
     "wait()\n--\n\nWait until the call completes; return its result buffer. Raises as the "
     "blocking call would."},
    {"test", (PyCFunction)request_test, METH_NOARGS,
     "test()\n--\n\nTrue once the call completed (then wait() returns at once)."},
    {NULL, NULL, 0, NULL}};

static PyGetSetDef request_getset[] = {
    {"status", (getter)request_status, NULL,
     "A completed receive's (source, tag, count); None before, or for other calls.", NULL},
    {NULL, NULL, NULL, NULL, NULL}};

static PyTypeObject RequestType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "rlxcoll.Request",
    .tp_basicsize = sizeof(Request),
    .tp_dealloc = (destructor)request_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "A nonblocking call in flight (Comm.iallreduce, Comm.ibcast, Comm.isend, "
              "Comm.irecv).",
    .tp_methods = request_methods,
    .tp_getset = request_getset,
};

/* ---- Comm ---------------------------------------------------------------------- */

typedef struct {
  PyObject_HEAD
  rlx_comm_t *c;
  int owned; /* ours to free (not the world) */
} Comm;

static PyTypeObject CommType;

static PyObject *wrap(rlx_comm_t *c, int owned) {
  if (c == NULL) /* rlx_comm_split with RLX_UNDEFINED */
    Py_RETURN_NONE;
  Comm *o = PyObject_New(Comm, &CommType);
  if (o == NULL) {
    if (owned)
      rlx_comm_free(&c);
    return NULL;
  }
  o->c = c;
  o->owned = owned;
  return (PyObject *)o;
}

static int live(Comm *s) {
  if (s->c == NULL || !rlx_initialized()) {
    PyErr_SetString(errors[2].type, s->c == NULL ? "the communicator was freed"
                                                 : "rlxcoll is not initialised (rlxcoll.init())");
    return -1;
  }
  return 0;
}

static void comm_dealloc(Comm *s) {
  if (s->owned && s->c != NULL && rlx_initialized())
    rlx_comm_free(&s->c);
  Py_TYPE(s)->tp_free((PyObject *)s);
}

/* The send and receive buffers of a reduction: in place into buf, or
 * from buf into out (its size given, or buf's). */
struct bufs {
  Py_buffer in, out;
  int have_in, have_out;
  rlx_dtype_t dt;
  size_t count;
  const void *send;
  void *recv;
  PyObject *result;
};

static void bufs_release(struct bufs *b) {
  if (b->have_in)
    PyBuffer_Release(&b->in);
  if (b->have_out)
    PyBuffer_Release(&b->out);
  b->have_in = b->have_out = 0;
}

/* out_items: the out buffer holds count * out_items / in_items items
 * (allgather: x size; reduce_scatter: / size); in_place_ok: no out given
 * means in place (else out is required). */
static int prepare(struct bufs *b, PyObject *buf, PyObject *out, PyObject *dtype, size_t mul,
                   size_t div, int in_place_ok, const char *call) {
  memset(b, 0, sizeof(*b));
  int in_place = out == NULL || out == Py_None;
  if (in_place && !in_place_ok) {
    PyErr_Format(PyExc_TypeError, "%s needs out= (its result differs in size from buf)", call);
    return -1;
  }
  if (view(buf, &b->in, in_place, "buf") != 0)
    return -1;
  b->have_in = 1;
  int d = dtype_of(&b->in, dtype, &b->dt);
  if (d == -2) {
    PyErr_SetString(PyExc_TypeError, "1-byte floats are not supported");
    d = -1;
  }
  if (d != 0)
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
  if (view(out, &b->out, 1, "out") != 0)
    goto fail;
  b->have_out = 1;
  rlx_dtype_t odt;
  if (dtype_of(&b->out, dtype, &odt) != 0)
    goto fail;
  size_t want = b->count * mul / div;
  if (odt != b->dt || (size_t)(b->out.len / b->out.itemsize) != want) {
    PyErr_Format(PyExc_ValueError, "%s: out must hold %zu items of buf's dtype, it holds %zd",
                 call, want, b->out.len / b->out.itemsize);
    goto fail;
  }
  if (b->out.buf == b->in.buf) { /* the same memory: in place */
    b->send = RLX_IN_PLACE;
  } else {
    b->send = b->in.buf;
  }
  b->recv = b->out.buf;
  Py_INCREF(out);
  b->result = out;
  return 0;
fail:
  bufs_release(b);
  return -1;
}

/* Run a blocking call with the GIL released; release the buffers; return
 * the result or raise. */
#define CALL(b, expr)                                                                             \
  do {                                                                                             \
    int rc_;                                                                                       \
    Py_BEGIN_ALLOW_THREADS                                                                         \
    rc_ = (expr);                                                                                  \
    Py_END_ALLOW_THREADS                                                                           \
    bufs_release(b);                                                                               \
    if (rc_ != RLX_OK) {                                                                           \
      Py_XDECREF((b)->result);                                                                     \
      return raise(rc_);                                                                           \
    }                                                                                              \
    return (b)->result;                                                                            \
  } while (0)

static PyObject *comm_allreduce(Comm *s, PyObject *args, PyObject *kw) {
  static char *kwlist[] = {"buf", "op", "out", "dtype", NULL};
  PyObject *buf, *opo = NULL, *out = NULL, *dtype = NULL;
  rlx_op_t op = RLX_SUM;
  struct bufs b;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "O|OOO:allreduce", kwlist, &buf, &opo, &out, &dtype) ||
      live(s) || (opo && op_of(opo, &op)) || prepare(&b, buf, out, dtype, 1, 1, 1, "allreduce"))
    return NULL;
  CALL(&b, rlx_allreduce(b.send, b.recv, b.count, b.dt, op, s->c));
}

static PyObject *comm_reduce(Comm *s, PyObject *args, PyObject *kw) {
  static char *kwlist[] = {"buf", "op", "root", "out", "dtype", NULL};
  PyObject *buf, *opo = NULL, *out = NULL, *dtype = NULL;
  int root = 0;
  rlx_op_t op = RLX_SUM;
  struct bufs b;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "O|OiOO:reduce", kwlist, &buf, &opo, &root, &out,
                                   &dtype) ||
      live(s) || (opo && op_of(opo, &op)) || prepare(&b, buf, out, dtype, 1, 1, 1, "reduce"))
    return NULL;
  if (b.send == RLX_IN_PLACE && root != rlx_comm_rank(s->c))
    b.send = b.recv; /* in place means nothing off the root: buf is what it sends */
  CALL(&b, rlx_reduce(b.send, b.recv, b.count, b.dt, op, root, s->c));
}

static PyObject *comm_bcast(Comm *s, PyObject *args, PyObject *kw) {
  static char *kwlist[] = {"buf", "root", "dtype", NULL};
  PyObject *buf, *dtype = NULL;
  int root = 0;
  struct bufs b;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "O|iO:bcast", kwlist, &buf, &root, &dtype) ||
      live(s) || prepare(&b, buf, NULL, dtype, 1, 1, 1, "bcast"))
    return NULL;
  CALL(&b, rlx_bcast(b.recv, b.count, b.dt, root, s->c));
}

static PyObject *comm_allgather(Comm *s, PyObject *args, PyObject *kw) {
  static char *kwlist[] = {"buf", "out", "dtype", NULL};
  PyObject *buf, *out = NULL, *dtype = NULL;
  struct bufs b;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "OO|O:allgather", kwlist, &buf, &out, &dtype) ||
      live(s) || prepare(&b, buf, out, dtype, (size_t)rlx_comm_size(s->c), 1, 0, "allgather"))
    return NULL;
  if (b.send == RLX_IN_PLACE) {
    bufs_release(&b);
    Py_XDECREF(b.result);
    PyErr_SetString(PyExc_ValueError, "allgather: out must not be buf");
    return NULL;
  }
  CALL(&b, rlx_allgather(b.send, b.recv, b.count, b.dt, s->c));
}

static PyObject *comm_reduce_scatter(Comm *s, PyObject *args, PyObject *kw) {
  static char *kwlist[] = {"buf", "out", "op", "dtype", NULL};
  PyObject *buf, *out = NULL, *opo = NULL, *dtype = NULL;
  rlx_op_t op = RLX_SUM;
  struct bufs b;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "OO|OO:reduce_scatter", kwlist, &buf, &out, &opo,
                                   &dtype) ||
      live(s) || (opo && op_of(opo, &op)) ||
      prepare(&b, buf, out, dtype, 1, (size_t)rlx_comm_size(s->c), 0, "reduce_scatter"))
    return NULL;
  if (b.send == RLX_IN_PLACE) {
    bufs_release(&b);
    Py_XDECREF(b.result);
    PyErr_SetString(PyExc_ValueError, "reduce_scatter: out must not be buf");
    return NULL;
  }
  CALL(&b, rlx_reduce_scatter(b.send, b.recv, b.count / (size_t)rlx_comm_size(s->c), b.dt, op,
                              s->c));
}

/* gather/scatter/alltoall: buf (count items per rank, or p blocks of
 * them), out (p blocks, or one); gather's out and scatter's buf only
 * matter on the root (None elsewhere). */
static int exchange_bufs(struct bufs *b, PyObject *buf, PyObject *out, PyObject *dtype,
                         int big_in, int big_out, int p, const char *call) {
  memset(b, 0, sizeof(*b));
  int have_in = buf != NULL && buf != Py_None, have_out = out != NULL && out != Py_None;
  if (have_in) {
    if (view(buf, &b->in, 0, "buf") != 0)
      return -1;
    b->have_in = 1;
  }
  if (have_out) {
    if (view(out, &b->out, 1, "out") != 0)
      goto fail;
    b->have_out = 1;
  }
  Py_buffer *first = have_in ? &b->in : have_out ? &b->out : NULL;
  if (first == NULL) {
    PyErr_Format(PyExc_TypeError, "%s needs buf or out", call);
    return -1;
  }
  int d = dtype_of(first, dtype, &b->dt);
  if (d != 0) {
    if (d == -2)
      PyErr_SetString(PyExc_TypeError, "1-byte floats are not supported");
    goto fail;
  }
  size_t in_items = have_in ? (size_t)(b->in.len / b->in.itemsize) : 0;
  size_t out_items = have_out ? (size_t)(b->out.len / b->out.itemsize) : 0;
  size_t count = have_in ? (big_in ? in_items / (size_t)p : in_items)
                         : (big_out ? out_items / (size_t)p : out_items);
  if ((have_in && (big_in ? count * (size_t)p : count) != in_items) ||
      (have_out && (big_out ? count * (size_t)p : count) != out_items)) {
    PyErr_Format(PyExc_ValueError, "%s: buf has %zu items and out %zu: they must be %s", call,
                 in_items, out_items,
                 big_in && big_out ? "equal, and split in as many blocks as ranks"
                 : big_in ? "size x and 1 x the count" : "1 x and size x the count");
    goto fail;
  }
  b->count = count;
  b->send = have_in ? b->in.buf : NULL;
  b->recv = have_out ? b->out.buf : NULL;
  b->result = have_out ? out : Py_None;
  Py_INCREF(b->result);
  return 0;
fail:
  bufs_release(b);
  return -1;
}

static PyObject *comm_gather(Comm *s, PyObject *args, PyObject *kw) {
  static char *kwlist[] = {"buf", "out", "root", "dtype", NULL};
  PyObject *buf, *out = NULL, *dtype = NULL;
  int root = 0;
  struct bufs b;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "O|OiO:gather", kwlist, &buf, &out, &root, &dtype) ||
      live(s) || exchange_bufs(&b, buf, out, dtype, 0, 1, rlx_comm_size(s->c), "gather"))
    return NULL;
  CALL(&b, rlx_gather(b.send, b.recv, b.count, b.dt, root, s->c));
}

static PyObject *comm_scatter(Comm *s, PyObject *args, PyObject *kw) {
  static char *kwlist[] = {"buf", "out", "root", "dtype", NULL};
  PyObject *buf, *out, *dtype = NULL;
  int root = 0;
  struct bufs b;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "OO|iO:scatter", kwlist, &buf, &out, &root, &dtype) ||
      live(s) || exchange_bufs(&b, buf, out, dtype, 1, 0, rlx_comm_size(s->c), "scatter"))
    return NULL;
  CALL(&b, rlx_scatter(b.send, b.recv, b.count, b.dt, root, s->c));
}

static PyObject *comm_alltoall(Comm *s, PyObject *args, PyObject *kw) {
  static char *kwlist[] = {"buf", "out", "dtype", NULL};
  PyObject *buf, *out, *dtype = NULL;
  struct bufs b;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "OO|O:alltoall", kwlist, &buf, &out, &dtype) ||
      live(s) || exchange_bufs(&b, buf, out, dtype, 1, 1, rlx_comm_size(s->c), "alltoall"))
    return NULL;
  CALL(&b, rlx_alltoall(b.send, b.recv, b.count, b.dt, s->c));
}

/* counts (a sequence of p ints >= 0) into c[], their prefix sums into d[];
 * the total, or -1 with an exception set. */
static Py_ssize_t counts_of(PyObject *seq, int p, size_t *c, size_t *d, const char *what) {
  PyObject *fast = PySequence_Fast(seq, "counts must be a sequence of ints");
  if (fast == NULL)
    return -1;
  if (PySequence_Fast_GET_SIZE(fast) != p) {
    PyErr_Format(PyExc_ValueError, "alltoallv: %s has %zd counts for %d ranks", what,
                 PySequence_Fast_GET_SIZE(fast), p);
    Py_DECREF(fast);
    return -1;
  }
  size_t total = 0;
  for (int i = 0; i < p; i++) {
    long long v = PyLong_AsLongLong(PySequence_Fast_GET_ITEM(fast, i));
    if ((v == -1 && PyErr_Occurred()) || v < 0) {
      if (!PyErr_Occurred())
        PyErr_Format(PyExc_ValueError, "alltoallv: %s[%d] is negative", what, i);
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

static PyObject *comm_alltoallv(Comm *s, PyObject *args, PyObject *kw) {
  static char *kwlist[] = {"buf", "sendcounts", "out", "recvcounts", "dtype", NULL};
  PyObject *buf, *sco, *out, *rco, *dtype = NULL, *ret = NULL;
  struct bufs b;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "OOOO|O:alltoallv", kwlist, &buf, &sco, &out, &rco,
                                   &dtype) ||
      live(s))
    return NULL;
  int p = rlx_comm_size(s->c), rc;
  size_t *a = PyMem_Calloc((size_t)p * 4, sizeof(size_t));
  if (a == NULL)
    return PyErr_NoMemory();
  size_t *sc = a, *sd = a + p, *rcn = a + 2 * p, *rd = a + 3 * p;
  memset(&b, 0, sizeof(b));
  Py_ssize_t st = counts_of(sco, p, sc, sd, "sendcounts"), rt = st < 0 ? -1 : counts_of(rco, p, rcn, rd, "recvcounts");
  if (st < 0 || rt < 0 || view(buf, &b.in, 0, "buf") != 0)
    goto done;
  b.have_in = 1;
  if (view(out, &b.out, 1, "out") != 0)
    goto done;
  b.have_out = 1;
  rlx_dtype_t odt;
  int d = dtype_of(&b.in, dtype, &b.dt);
  if (d == 0)
    d = dtype_of(&b.out, dtype, &odt);
  if (d != 0) {
    if (d == -2)
      PyErr_SetString(PyExc_TypeError, "1-byte floats are not supported");
    goto done;
  }
  if (odt != b.dt || b.in.len / b.in.itemsize != st || b.out.len / b.out.itemsize != rt) {
    PyErr_Format(PyExc_ValueError, "alltoallv: buf holds %zd items and out %zd of the same dtype; "
                 "the counts add up to %zd and %zd", b.in.len / b.in.itemsize,
                 b.out.len / b.out.itemsize, st, rt);
    goto done;
  }
  Py_BEGIN_ALLOW_THREADS
  rc = rlx_alltoallv(b.in.buf, sc, sd, b.out.buf, rcn, rd, b.dt, s->c);
  Py_END_ALLOW_THREADS
  if (rc != RLX_OK) {
    raise(rc);
    goto done;
  }
  Py_INCREF(out);
  ret = out;
done:
  bufs_release(&b);
  PyMem_Free(a);
  return ret;
}

static PyObject *comm_barrier(Comm *s, PyObject *noargs) {
  (void)noargs;
  int rc;
  if (live(s))
    return NULL;
  Py_BEGIN_ALLOW_THREADS
  rc = rlx_barrier(s->c);
  Py_END_ALLOW_THREADS
  if (rc != RLX_OK)
    return raise(rc);
  Py_RETURN_NONE;
}

/* iallreduce / ibcast: the buffers stay held by the Request until it completes. */
static PyObject *start_request(struct bufs *b, int (*go)(struct bufs *, void *, rlx_request_t **),
                               void *ctx) {
  Request *r = PyObject_New(Request, &RequestType);
  if (r == NULL) {
    bufs_release(b);
    Py_XDECREF(b->result);
    return NULL;
  }
  r->req = NULL;
  memset(&r->st, 0, sizeof(r->st));
  r->is_recv = 0;
  r->in = b->in;
  r->out = b->out;
  r->have_in = b->have_in;
  r->have_out = b->have_out;
  r->result = b->result;
  b->have_in = b->have_out = 0;
  int rc = go(b, ctx, &r->req);
  if (rc != RLX_OK) {
    Py_DECREF(r);
    return raise(rc);
  }
  return (PyObject *)r;
}

struct iargs {
  rlx_comm_t *c;
  rlx_op_t op;
  int root;
};
static int go_iallreduce(struct bufs *b, void *ctx, rlx_request_t **req) {
  struct iargs *a = ctx;
  return rlx_iallreduce(b->send, b->recv, b->count, b->dt, a->op, a->c, req);
}
static int go_ibcast(struct bufs *b, void *ctx, rlx_request_t **req) {
  struct iargs *a = ctx;
  return rlx_ibcast(b->recv, b->count, b->dt, a->root, a->c, req);
}

static PyObject *comm_iallreduce(Comm *s, PyObject *args, PyObject *kw) {
  static char *kwlist[] = {"buf", "op", "out", "dtype", NULL};
  PyObject *buf, *opo = NULL, *out = NULL, *dtype = NULL;
  struct iargs a = {s->c, RLX_SUM, 0};
  struct bufs b;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "O|OOO:iallreduce", kwlist, &buf, &opo, &out,
                                   &dtype) ||
      live(s) || (opo && op_of(opo, &a.op)) ||
      prepare(&b, buf, out, dtype, 1, 1, 1, "iallreduce"))
    return NULL;
  return start_request(&b, go_iallreduce, &a);
}

static PyObject *comm_ibcast(Comm *s, PyObject *args, PyObject *kw) {
  static char *kwlist[] = {"buf", "root", "dtype", NULL};
  PyObject *buf, *dtype = NULL;
  struct iargs a = {s->c, RLX_SUM, 0};
  struct bufs b;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "O|iO:ibcast", kwlist, &buf, &a.root, &dtype) ||
      live(s) || prepare(&b, buf, NULL, dtype, 1, 1, 1, "ibcast"))
    return NULL;
  return start_request(&b, go_ibcast, &a);
}

/* split, dup, shrink, grow: a new communicator. */
/* ---- messages ---- */

/* A message's buffer: any C-contiguous buffer (writable to receive into),
 * its dtype from its format or dtype=. */
static int msg_buf(struct bufs *b, PyObject *buf, PyObject *dtype, int writable) {
  memset(b, 0, sizeof(*b));
  if (view(buf, &b->in, writable, "buf") != 0)
    return -1;
  b->have_in = 1;
  int d = dtype_of(&b->in, dtype, &b->dt);
  if (d == -2)
    PyErr_SetString(PyExc_TypeError, "1-byte floats are not supported");
  if (d != 0) {
    bufs_release(b);
    return -1;
  }
  b->count = (size_t)(b->in.len / b->in.itemsize);
  b->send = b->recv = b->in.buf;
  Py_INCREF(buf);
  b->result = buf;
  return 0;
}

static PyObject *comm_send(Comm *s, PyObject *args, PyObject *kw) {
  static char *kwlist[] = {"buf", "dest", "tag", "dtype", NULL};
  PyObject *buf, *dtype = NULL;
  int dest, tag = 0, rc;
  struct bufs b;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "Oi|iO:send", kwlist, &buf, &dest, &tag, &dtype) ||
      live(s) || msg_buf(&b, buf, dtype, 0))
    return NULL;
  Py_BEGIN_ALLOW_THREADS
  rc = rlx_send(b.send, b.count, b.dt, dest, tag, s->c);
  Py_END_ALLOW_THREADS
  bufs_release(&b);
  Py_XDECREF(b.result);
  if (rc != RLX_OK)
    return raise(rc);
  Py_RETURN_NONE;
}

static PyObject *comm_recv(Comm *s, PyObject *args, PyObject *kw) {
  static char *kwlist[] = {"buf", "source", "tag", "dtype", NULL};
  PyObject *buf, *dtype = NULL;
  int source = RLX_ANY_SOURCE, tag = RLX_ANY_TAG, rc;
  rlx_status_t st;
  struct bufs b;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "O|iiO:recv", kwlist, &buf, &source, &tag, &dtype) ||
      live(s) || msg_buf(&b, buf, dtype, 1))
    return NULL;
  Py_BEGIN_ALLOW_THREADS
  rc = rlx_recv(b.recv, b.count, b.dt, source, tag, s->c, &st);
  Py_END_ALLOW_THREADS
  bufs_release(&b);
  Py_XDECREF(b.result);
  if (rc != RLX_OK)
    return raise(rc);
  return Py_BuildValue("(iin)", st.source, st.tag, (Py_ssize_t)st.count);
}

struct margs {
  rlx_comm_t *c;
  int peer, tag;
};
static int go_isend(struct bufs *b, void *ctx, rlx_request_t **req) {
  struct margs *a = ctx;
  return rlx_isend(b->send, b->count, b->dt, a->peer, a->tag, a->c, req);
}
static int go_irecv(struct bufs *b, void *ctx, rlx_request_t **req) {
  struct margs *a = ctx;
  return rlx_irecv(b->recv, b->count, b->dt, a->peer, a->tag, a->c, req);
}

static PyObject *comm_isend(Comm *s, PyObject *args, PyObject *kw) {
  static char *kwlist[] = {"buf", "dest", "tag", "dtype", NULL};
  PyObject *buf, *dtype = NULL;
  struct margs a = {s->c, 0, 0};
  struct bufs b;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "Oi|iO:isend", kwlist, &buf, &a.peer, &a.tag,
                                   &dtype) ||
      live(s) || msg_buf(&b, buf, dtype, 0))
    return NULL;
  return start_request(&b, go_isend, &a);
}

static PyObject *comm_irecv(Comm *s, PyObject *args, PyObject *kw) {
  static char *kwlist[] = {"buf", "source", "tag", "dtype", NULL};
  PyObject *buf, *dtype = NULL, *r;
  struct margs a = {s->c, RLX_ANY_SOURCE, RLX_ANY_TAG};
  struct bufs b;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "O|iiO:irecv", kwlist, &buf, &a.peer, &a.tag,
                                   &dtype) ||
      live(s) || msg_buf(&b, buf, dtype, 1))
    return NULL;
  if ((r = start_request(&b, go_irecv, &a)) != NULL)
    ((Request *)r)->is_recv = 1;
  return r;
}

static PyObject *comm_split(Comm *s, PyObject *args, PyObject *kw) {
  static char *kwlist[] = {"color", "key", NULL};
  int color, key = 0, rc;
  rlx_comm_t *out = NULL;
  PyObject *colo;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "O|i:split", kwlist, &colo, &key) || live(s))
    return NULL;
  if (colo == Py_None) {
    color = RLX_UNDEFINED;
  } else {
    color = (int)PyLong_AsLong(colo);
    if (color == -1 && PyErr_Occurred())
      return NULL;
  }
  Py_BEGIN_ALLOW_THREADS
  rc = rlx_comm_split(s->c, color, key, &out);
  Py_END_ALLOW_THREADS
  return rc != RLX_OK ? raise(rc) : wrap(out, 1);
}

static PyObject *comm_create_group(Comm *s, PyObject *args, PyObject *kw) {
  static char *kwlist[] = {"ranks", "tag", NULL};
  PyObject *seq, *fast;
  int tag = 0, rc;
  rlx_comm_t *out = NULL;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "O|i:create_group", kwlist, &seq, &tag) || live(s))
    return NULL;
  if ((fast = PySequence_Fast(seq, "ranks must be a sequence of ints")) == NULL)
    return NULL;
  Py_ssize_t n = PySequence_Fast_GET_SIZE(fast);
  int *ranks = PyMem_Malloc(sizeof(int) * (size_t)(n > 0 ? n : 1));
  if (ranks == NULL) {
    Py_DECREF(fast);
    return PyErr_NoMemory();
  }
  for (Py_ssize_t i = 0; i < n; i++) {
    long v = PyLong_AsLong(PySequence_Fast_GET_ITEM(fast, i));
    if (v == -1 && PyErr_Occurred()) {
      PyMem_Free(ranks);
      Py_DECREF(fast);
      return NULL;
    }
    ranks[i] = v < INT32_MIN || v > INT32_MAX ? -1 : (int)v;
  }
  Py_DECREF(fast);
  Py_BEGIN_ALLOW_THREADS
  rc = rlx_comm_create_group(s->c, (int)n, ranks, tag, &out);
  Py_END_ALLOW_THREADS
  PyMem_Free(ranks);
  return rc != RLX_OK ? raise(rc) : wrap(out, 1);
}

static PyObject *new_comm(Comm *s, int (*fn)(rlx_comm_t *, rlx_comm_t **)) {
  rlx_comm_t *out = NULL;
  int rc;
  if (live(s))
    return NULL;
  Py_BEGIN_ALLOW_THREADS
  rc = fn(s->c, &out);
  Py_END_ALLOW_THREADS
  return rc != RLX_OK ? raise(rc) : wrap(out, 1);
}
static PyObject *comm_dup(Comm *s, PyObject *noargs) { (void)noargs; return new_comm(s, rlx_comm_dup); }
static PyObject *comm_shrink(Comm *s, PyObject *noargs) { (void)noargs; return new_comm(s, rlx_comm_shrink); }
static PyObject *comm_grow(Comm *s, PyObject *noargs) { (void)noargs; return new_comm(s, rlx_comm_grow); }

static PyObject *comm_free(Comm *s, PyObject *noargs) {
  (void)noargs;
  if (s->c != NULL && s->owned && rlx_initialized()) {
    int rc = rlx_comm_free(&s->c);
    if (rc != RLX_OK)
      return raise(rc);
  }
  s->c = NULL;
  Py_RETURN_NONE;
}

static PyObject *comm_get_int(Comm *s, void *which) {
  if (live(s))
    return NULL;
  long w = (long)(intptr_t)which;
  return PyLong_FromLong(w == 0   ? rlx_comm_rank(s->c)
                         : w == 1 ? rlx_comm_size(s->c)
                         : w == 2 ? rlx_comm_leader(s->c)
                                  : rlx_comm_joiners(s->c));
}

static PyObject *comm_revoke(Comm *s, PyObject *noargs) {
  (void)noargs;
  if (live(s))
    return NULL;
  int rc = rlx_comm_revoke(s->c);
  if (rc != RLX_OK)
    return raise(rc);
  Py_RETURN_NONE;
}

static PyObject *comm_get_timeout(Comm *s, void *unused) {
  (void)unused;
  double t;
  if (live(s))
    return NULL;
  int rc = rlx_comm_get_timeout(s->c, &t);
  return rc != RLX_OK ? raise(rc) : PyFloat_FromDouble(t);
}

static int comm_set_timeout(Comm *s, PyObject *v, void *unused) {
  (void)unused;
  if (live(s))
    return -1;
  double t = v == NULL || v == Py_None ? -1.0 : PyFloat_AsDouble(v);
  if (t == -1.0 && PyErr_Occurred())
    return -1;
  int rc = rlx_comm_set_timeout(s->c, t);
  return rc != RLX_OK ? (raise(rc), -1) : 0;
}

static PyMethodDef comm_methods[] = {
    {"allreduce", (PyCFunction)(void (*)(void))comm_allreduce, METH_VARARGS | METH_KEYWORDS,
     "allreduce(buf, op='sum', out=None, dtype=None)\n--\n\n"
     "Reduce buf over every rank (op: 'sum', 'prod', 'min', 'max', 'avg'); the result in buf "
     "(in place) or in out. Returns the result buffer."},
    {"reduce", (PyCFunction)(void (*)(void))comm_reduce, METH_VARARGS | METH_KEYWORDS,
     "reduce(buf, op='sum', root=0, out=None, dtype=None)\n--\n\n"
     "As allreduce, the result only on root."},
    {"bcast", (PyCFunction)(void (*)(void))comm_bcast, METH_VARARGS | METH_KEYWORDS,
     "bcast(buf, root=0, dtype=None)\n--\n\nRoot's buf into every rank's buf. Returns buf."},
    {"allgather", (PyCFunction)(void (*)(void))comm_allgather, METH_VARARGS | METH_KEYWORDS,
     "allgather(buf, out, dtype=None)\n--\n\n"
     "Every rank's buf, in rank order, into out (size x len(buf) items)."},
    {"reduce_scatter", (PyCFunction)(void (*)(void))comm_reduce_scatter,
     METH_VARARGS | METH_KEYWORDS,
     "reduce_scatter(buf, out, op='sum', dtype=None)\n--\n\n"
     "Reduce buf over every rank; rank r gets the r-th of size equal parts in out."},
    {"barrier", (PyCFunction)comm_barrier, METH_NOARGS, "barrier()\n--\n\nWait for every rank."},
    {"gather", (PyCFunction)(void (*)(void))comm_gather, METH_VARARGS | METH_KEYWORDS,
     "gather(buf, out=None, root=0, dtype=None)\n--\n\nEvery rank's buf into the root's out "
     "(size x as many items, rank i's at block i; None off the root). Returns out."},
    {"scatter", (PyCFunction)(void (*)(void))comm_scatter, METH_VARARGS | METH_KEYWORDS,
     "scatter(buf, out, root=0, dtype=None)\n--\n\nBlock i of the root's buf (None off the "
     "root) into rank i's out. Returns out."},
    {"alltoallv", (PyCFunction)(void (*)(void))comm_alltoallv, METH_VARARGS | METH_KEYWORDS,
     "alltoallv(buf, sendcounts, out, recvcounts, dtype=None)\n--\n\nsendcounts[j] items of "
     "buf, in order, to rank j; recvcounts[i] from rank i into out, in order. Returns out."},
    {"alltoall", (PyCFunction)(void (*)(void))comm_alltoall, METH_VARARGS | METH_KEYWORDS,
     "alltoall(buf, out, dtype=None)\n--\n\nBlock j of buf to rank j; block i of out from "
     "rank i. Returns out."},
    {"iallreduce", (PyCFunction)(void (*)(void))comm_iallreduce, METH_VARARGS | METH_KEYWORDS,
     "iallreduce(buf, op='sum', out=None, dtype=None)\n--\n\n"
     "Start an allreduce; returns a Request (wait(), test()). The buffers stay in use until "
     "it completes."},
    {"ibcast", (PyCFunction)(void (*)(void))comm_ibcast, METH_VARARGS | METH_KEYWORDS,
     "ibcast(buf, root=0, dtype=None)\n--\n\nStart a bcast; returns a Request."},
    {"send", (PyCFunction)(void (*)(void))comm_send, METH_VARARGS | METH_KEYWORDS,
     "send(buf, dest, tag=0, dtype=None)\n--\n\nSend buf to rank dest with tag (>= 0)."},
    {"recv", (PyCFunction)(void (*)(void))comm_recv, METH_VARARGS | METH_KEYWORDS,
     "recv(buf, source=ANY_SOURCE, tag=ANY_TAG, dtype=None)\n--\n\nReceive a message into "
     "buf (room for it; its dtype the sender's); return (source, tag, count). Truncated if "
     "it was longer."},
    {"isend", (PyCFunction)(void (*)(void))comm_isend, METH_VARARGS | METH_KEYWORDS,
     "isend(buf, dest, tag=0, dtype=None)\n--\n\nStart a send; a Request."},
    {"irecv", (PyCFunction)(void (*)(void))comm_irecv, METH_VARARGS | METH_KEYWORDS,
     "irecv(buf, source=ANY_SOURCE, tag=ANY_TAG, dtype=None)\n--\n\nStart a receive; a "
     "Request whose status is (source, tag, count) once complete."},
    {"split", (PyCFunction)(void (*)(void))comm_split, METH_VARARGS | METH_KEYWORDS,
     "split(color, key=0)\n--\n\nRanks of one color form a new Comm, ordered by key then rank; "
     "color None: this rank is in none (returns None)."},
    {"dup", (PyCFunction)comm_dup, METH_NOARGS, "dup()\n--\n\nThe same ranks, a Comm of its own."},
    {"create_group", (PyCFunction)(void (*)(void))comm_create_group, METH_VARARGS | METH_KEYWORDS,
     "create_group(ranks, tag=0)\n--\n\nA Comm of the listed ranks (in that order), made by them "
     "alone: only they call it (rlx_comm_create_group)."},
    {"revoke", (PyCFunction)comm_revoke, METH_NOARGS,
     "revoke()\n--\n\nEvery member's pending and later calls on it raise Revoked, naming this "
     "rank; then shrink()."},
    {"shrink", (PyCFunction)comm_shrink, METH_NOARGS,
     "shrink()\n--\n\nAfter PeerLost: the survivors agree and get a Comm of their own."},
    {"grow", (PyCFunction)comm_grow, METH_NOARGS,
     "grow()\n--\n\nAdmit the ranks waiting to join (a job started with rlxrun --max-np)."},
    {"free", (PyCFunction)comm_free, METH_NOARGS,
     "free()\n--\n\nFree this communicator now (not the world); also done when it is "
     "garbage."},
    {NULL, NULL, 0, NULL}};

static PyGetSetDef comm_getset[] = {
    {"rank", (getter)comm_get_int, NULL, "This rank in the communicator.", (void *)0},
    {"size", (getter)comm_get_int, NULL, "How many ranks it has.", (void *)1},
    {"leader", (getter)comm_get_int, NULL, "The rank of its elected leader.", (void *)2},
    {"joiners", (getter)comm_get_int, NULL, "Ranks waiting to join (this rank's view).",
     (void *)3},
    {"timeout", (getter)comm_get_timeout, (setter)comm_set_timeout,
     "Seconds a call on it may wait before it raises Timeout (0: no limit); this rank "
     "only. Starts at RLX_TIMEOUT; None (or del) goes back to it.", NULL},
    {NULL, NULL, NULL, NULL, NULL}};

static PyObject *comm_repr(Comm *s) {
  if (s->c == NULL || !rlx_initialized())
    return PyUnicode_FromString("<rlxcoll.Comm (freed)>");
  return PyUnicode_FromFormat("<rlxcoll.Comm rank %d of %d, leader %d>", rlx_comm_rank(s->c),
                              rlx_comm_size(s->c), rlx_comm_leader(s->c));
}

static PyTypeObject CommType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "rlxcoll.Comm",
    .tp_basicsize = sizeof(Comm),
    .tp_dealloc = (destructor)comm_dealloc,
    .tp_repr = (reprfunc)comm_repr,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "A communicator: rlxcoll.world(), or one made by split, dup, shrink or grow.",
    .tp_methods = comm_methods,
    .tp_getset = comm_getset,
};

/* ---- module functions ----------------------------------------------------------- */

static PyObject *mod_init(PyObject *m, PyObject *noargs) {
  (void)m;
  (void)noargs;
  int rc;
  if (rlx_initialized())
    Py_RETURN_NONE;
  Py_BEGIN_ALLOW_THREADS
  rc = rlx_init(NULL, NULL);
  Py_END_ALLOW_THREADS
  if (rc != RLX_OK)
    return raise(rc);
  rlx_set_interrupt(check_signals, NULL);
  Py_RETURN_NONE;
}

static PyObject *mod_finalize(PyObject *m, PyObject *noargs) {
  (void)m;
  (void)noargs;
  int rc;
  if (!rlx_initialized())
    Py_RETURN_NONE;
  rlx_set_interrupt(NULL, NULL);
  Py_BEGIN_ALLOW_THREADS
  rc = rlx_finalize();
  Py_END_ALLOW_THREADS
  if (rc != RLX_OK)
    return raise(rc);
  Py_RETURN_NONE;
}

static PyObject *mod_initialized(PyObject *m, PyObject *noargs) {
  (void)m;
  (void)noargs;
  return PyBool_FromLong(rlx_initialized());
}

static PyObject *mod_world(PyObject *m, PyObject *noargs) {
  (void)m;
  (void)noargs;
  if (!rlx_initialized()) {
    PyErr_SetString(errors[2].type, "rlxcoll is not initialised (rlxcoll.init())");
    return NULL;
  }
  return wrap(rlx_comm_world(), 0);
}

static PyObject *mod_joined(PyObject *m, PyObject *noargs) {
  (void)m;
  (void)noargs;
  return PyBool_FromLong(rlx_joined());
}

static PyMethodDef module_methods[] = {
    {"init", mod_init, METH_NOARGS,
     "init()\n--\n\nJoin the job this process belongs to (rlxrun's environment, PMIx, or a "
     "world of one). Idempotent; rlxcoll.finalize() runs at exit."},
    {"finalize", mod_finalize, METH_NOARGS,
     "finalize()\n--\n\nLeave the job (every rank first reaches this point)."},
    {"initialized", mod_initialized, METH_NOARGS, "initialized()\n--\n\nTrue after init()."},
    {"world", mod_world, METH_NOARGS, "world()\n--\n\nThe Comm of every rank of the job."},
    {"joined", mod_joined, METH_NOARGS,
     "joined()\n--\n\nTrue in a process that joined a running job (RLX_JOIN=1)."},
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef moduledef = {
    PyModuleDef_HEAD_INIT, "rlxcoll._rlxcoll",
    "librlxcoll's collectives for Python; use the rlxcoll package, which re-exports this.", -1,
    module_methods, NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit__rlxcoll(void) {
  if (PyType_Ready(&CommType) < 0 || PyType_Ready(&RequestType) < 0)
    return NULL;
  PyObject *m = PyModule_Create(&moduledef);
  if (m == NULL)
    return NULL;
  Error = PyErr_NewExceptionWithDoc("rlxcoll.Error",
                                    "An rlxcoll call failed; str() is rlx_errmsg(), .code the "
                                    "RLX_ERR_* value.", NULL, NULL);
  if (Error == NULL || PyModule_AddObjectRef(m, "Error", Error) < 0)
    return NULL;
  for (size_t i = 0; i < NERRORS; i++) {
    char name[64];
    snprintf(name, sizeof name, "rlxcoll.%s", errors[i].name);
    PyObject *bases = errors[i].base ? PyTuple_Pack(2, Error, *errors[i].base)
                                     : PyTuple_Pack(1, Error);
    if (bases == NULL)
      return NULL;
    errors[i].type = PyErr_NewExceptionWithDoc(name, errors[i].doc, bases, NULL);
    Py_DECREF(bases);
    if (errors[i].type == NULL || PyModule_AddObjectRef(m, errors[i].name, errors[i].type) < 0)
      return NULL;
  }
  if (PyModule_AddObjectRef(m, "Comm", (PyObject *)&CommType) < 0 ||
      PyModule_AddObjectRef(m, "Request", (PyObject *)&RequestType) < 0 ||
      PyModule_AddIntConstant(m, "ANY_SOURCE", RLX_ANY_SOURCE) < 0 ||
      PyModule_AddIntConstant(m, "ANY_TAG", RLX_ANY_TAG) < 0)
    return NULL;
  return m;
}
