/* rlxcoll._rlxcoll: librlxcoll for Python (the rlxcoll package re-exports
 * it). Buffers in through the buffer protocol (numpy arrays, bytearray,
 * memoryview, anything C-contiguous), the dtype from their format; errors
 * out as exceptions under rlxcoll.Error carrying rlx_errmsg(); the GIL
 * released while a call waits, and Python's signal handlers (Ctrl-C) run
 * meanwhile: a KeyboardInterrupt fails the call here and on the others. */
#include <string.h>
#include "module.h"

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
    {RLX_ERR_CORRUPT, "Corrupt", "A frame failed its checksum, or named memory not its sender's.", NULL, NULL},
    {RLX_ERR_REVOKED, "Revoked", "The communicator failed earlier; shrink it.", NULL, NULL},
    {RLX_ERR_DEVICE, "DeviceError", "The compute device failed.", NULL, NULL},
    {RLX_ERR_SYS, "SysError", "A system call failed (also an OSError).", &PyExc_OSError, NULL},
    {RLX_ERR_INTERRUPTED, "Interrupted", "A rank's call was interrupted (Ctrl-C there).", NULL, NULL},
    {RLX_ERR_TRUNCATE, "Truncated", "A message was longer than its receive buffer.", NULL, NULL},
};
#define NERRORS (sizeof errors / sizeof errors[0])

/* Raise the exception for rc (a KeyboardInterrupt already raised by our
 * interrupt check wins). Returns NULL. */
PyObject *rlxpy_raise(int rc) {
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

int rlxpy_dtype_of(const Py_buffer *b, PyObject *name, rlx_dtype_t *dt) {
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

int rlxpy_op_of(PyObject *o, rlx_op_t *op) {
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
int rlxpy_view(PyObject *o, Py_buffer *b, int writable, const char *what) {
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
  void *mem; /* what the call reads until it completes (an uneven call's counts) */
} Request;

static PyTypeObject RequestType;

void rlxpy_bufs_release(struct bufs *b) {
  if (b->have_in)
    PyBuffer_Release(&b->in);
  if (b->have_out)
    PyBuffer_Release(&b->out);
  b->have_in = b->have_out = 0;
}

static void request_release(Request *r) {
  if (r->have_in)
    PyBuffer_Release(&r->in);
  if (r->have_out)
    PyBuffer_Release(&r->out);
  r->have_in = r->have_out = 0;
  PyMem_Free(r->mem);
  r->mem = NULL;
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
      return rlxpy_raise(rc);
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
    return rlxpy_raise(rc);
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
    .tp_doc = "A nonblocking call in flight (Comm.iallreduce and every other i-call, Comm.isend, "
              "Comm.irecv).",
    .tp_methods = request_methods,
    .tp_getset = request_getset,
};

/* ---- Comm ---------------------------------------------------------------------- */


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

int rlxpy_live(Comm *s) {
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

/* A nonblocking call's Request: it holds b's buffers and mem until the
 * call completes. */
PyObject *rlxpy_start(struct bufs *b, void *mem,
                      int (*go)(struct bufs *, void *, rlx_request_t **), void *ctx) {
  Request *r = PyObject_New(Request, &RequestType);
  if (r == NULL) {
    rlxpy_bufs_release(b);
    Py_XDECREF(b->result);
    PyMem_Free(mem);
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
  r->mem = mem;
  b->have_in = b->have_out = 0;
  int rc = go(b, ctx, &r->req);
  if (rc != RLX_OK) {
    Py_DECREF(r);
    return rlxpy_raise(rc);
  }
  return (PyObject *)r;
}

/* split, dup, shrink, grow: a new communicator. */
/* ---- messages ---- */

/* A message's buffer: any C-contiguous buffer (writable to receive into),
 * its dtype from its format or dtype=. */
static int msg_buf(struct bufs *b, PyObject *buf, PyObject *dtype, int writable) {
  memset(b, 0, sizeof(*b));
  if (rlxpy_view(buf, &b->in, writable, "buf") != 0)
    return -1;
  b->have_in = 1;
  int d = rlxpy_dtype_of(&b->in, dtype, &b->dt);
  if (d == -2)
    PyErr_SetString(PyExc_TypeError, "1-byte floats are not supported");
  if (d != 0) {
    rlxpy_bufs_release(b);
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
      rlxpy_live(s) || msg_buf(&b, buf, dtype, 0))
    return NULL;
  Py_BEGIN_ALLOW_THREADS
  rc = rlx_send(b.send, b.count, b.dt, dest, tag, s->c);
  Py_END_ALLOW_THREADS
  rlxpy_bufs_release(&b);
  Py_XDECREF(b.result);
  if (rc != RLX_OK)
    return rlxpy_raise(rc);
  Py_RETURN_NONE;
}

static PyObject *comm_recv(Comm *s, PyObject *args, PyObject *kw) {
  static char *kwlist[] = {"buf", "source", "tag", "dtype", NULL};
  PyObject *buf, *dtype = NULL;
  int source = RLX_ANY_SOURCE, tag = RLX_ANY_TAG, rc;
  rlx_status_t st;
  struct bufs b;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "O|iiO:recv", kwlist, &buf, &source, &tag, &dtype) ||
      rlxpy_live(s) || msg_buf(&b, buf, dtype, 1))
    return NULL;
  Py_BEGIN_ALLOW_THREADS
  rc = rlx_recv(b.recv, b.count, b.dt, source, tag, s->c, &st);
  Py_END_ALLOW_THREADS
  rlxpy_bufs_release(&b);
  Py_XDECREF(b.result);
  if (rc != RLX_OK)
    return rlxpy_raise(rc);
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
      rlxpy_live(s) || msg_buf(&b, buf, dtype, 0))
    return NULL;
  return rlxpy_start(&b, NULL, go_isend, &a);
}

static PyObject *comm_irecv(Comm *s, PyObject *args, PyObject *kw) {
  static char *kwlist[] = {"buf", "source", "tag", "dtype", NULL};
  PyObject *buf, *dtype = NULL, *r;
  struct margs a = {s->c, RLX_ANY_SOURCE, RLX_ANY_TAG};
  struct bufs b;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "O|iiO:irecv", kwlist, &buf, &a.peer, &a.tag,
                                   &dtype) ||
      rlxpy_live(s) || msg_buf(&b, buf, dtype, 1))
    return NULL;
  if ((r = rlxpy_start(&b, NULL, go_irecv, &a)) != NULL)
    ((Request *)r)->is_recv = 1;
  return r;
}

static PyObject *comm_split(Comm *s, PyObject *args, PyObject *kw) {
  static char *kwlist[] = {"color", "key", NULL};
  int color, key = 0, rc;
  rlx_comm_t *out = NULL;
  PyObject *colo;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "O|i:split", kwlist, &colo, &key) || rlxpy_live(s))
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
  return rc != RLX_OK ? rlxpy_raise(rc) : wrap(out, 1);
}

static PyObject *comm_create_group(Comm *s, PyObject *args, PyObject *kw) {
  static char *kwlist[] = {"ranks", "tag", NULL};
  PyObject *seq, *fast;
  int tag = 0, rc;
  rlx_comm_t *out = NULL;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "O|i:create_group", kwlist, &seq, &tag) || rlxpy_live(s))
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
  return rc != RLX_OK ? rlxpy_raise(rc) : wrap(out, 1);
}

static PyObject *new_comm(Comm *s, int (*fn)(rlx_comm_t *, rlx_comm_t **)) {
  rlx_comm_t *out = NULL;
  int rc;
  if (rlxpy_live(s))
    return NULL;
  Py_BEGIN_ALLOW_THREADS
  rc = fn(s->c, &out);
  Py_END_ALLOW_THREADS
  return rc != RLX_OK ? rlxpy_raise(rc) : wrap(out, 1);
}
static PyObject *comm_dup(Comm *s, PyObject *noargs) { (void)noargs; return new_comm(s, rlx_comm_dup); }
static PyObject *comm_shrink(Comm *s, PyObject *noargs) { (void)noargs; return new_comm(s, rlx_comm_shrink); }
static PyObject *comm_grow(Comm *s, PyObject *noargs) { (void)noargs; return new_comm(s, rlx_comm_grow); }

static PyObject *comm_free(Comm *s, PyObject *noargs) {
  (void)noargs;
  if (s->c != NULL && s->owned && rlx_initialized()) {
    int rc = rlx_comm_free(&s->c);
    if (rc != RLX_OK)
      return rlxpy_raise(rc);
  }
  s->c = NULL;
  Py_RETURN_NONE;
}

static PyObject *comm_get_int(Comm *s, void *which) {
  if (rlxpy_live(s))
    return NULL;
  long w = (long)(intptr_t)which;
  return PyLong_FromLong(w == 0   ? rlx_comm_rank(s->c)
                         : w == 1 ? rlx_comm_size(s->c)
                         : w == 2 ? rlx_comm_leader(s->c)
                                  : rlx_comm_joiners(s->c));
}

static PyObject *comm_revoke(Comm *s, PyObject *noargs) {
  (void)noargs;
  if (rlxpy_live(s))
    return NULL;
  int rc = rlx_comm_revoke(s->c);
  if (rc != RLX_OK)
    return rlxpy_raise(rc);
  Py_RETURN_NONE;
}

static PyObject *comm_get_timeout(Comm *s, void *unused) {
  (void)unused;
  double t;
  if (rlxpy_live(s))
    return NULL;
  int rc = rlx_comm_get_timeout(s->c, &t);
  return rc != RLX_OK ? rlxpy_raise(rc) : PyFloat_FromDouble(t);
}

static int comm_set_timeout(Comm *s, PyObject *v, void *unused) {
  (void)unused;
  if (rlxpy_live(s))
    return -1;
  double t = v == NULL || v == Py_None ? -1.0 : PyFloat_AsDouble(v);
  if (t == -1.0 && PyErr_Occurred())
    return -1;
  int rc = rlx_comm_set_timeout(s->c, t);
  return rc != RLX_OK ? (rlxpy_raise(rc), -1) : 0;
}

/* Comm's own methods; its collectives' (collectives.c) join them at import. */
static PyMethodDef comm_methods[] = {
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
    return rlxpy_raise(rc);
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
    return rlxpy_raise(rc);
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

/* comm_methods then rlxpy_coll_methods, in one table for the type. */
static PyMethodDef *all_comm_methods(void) {
  size_t n1 = 0, n2 = 0;
  while (comm_methods[n1].ml_name != NULL)
    n1++;
  while (rlxpy_coll_methods[n2].ml_name != NULL)
    n2++;
  PyMethodDef *all = PyMem_Calloc(n1 + n2 + 1, sizeof(PyMethodDef)); /* (for the process's life) */
  if (all == NULL)
    return (PyMethodDef *)PyErr_NoMemory();
  memcpy(all, rlxpy_coll_methods, n2 * sizeof(PyMethodDef));
  memcpy(all + n2, comm_methods, n1 * sizeof(PyMethodDef));
  return all;
}

PyMODINIT_FUNC PyInit__rlxcoll(void) {
  if (CommType.tp_methods == NULL && (CommType.tp_methods = all_comm_methods()) == NULL)
    return NULL;
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
