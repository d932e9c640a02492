/* What the files of rlxcoll._rlxcoll share: the Comm and Request objects,
 * buffers as a call sees them, and the helpers that raise rlxcoll's
 * exceptions. _rlxcoll.c has the module, its types and messages;
 * collectives.c every collective, blocking and nonblocking. */
#ifndef RLXPY_MODULE_H
#define RLXPY_MODULE_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <rlxcoll/rlxcoll.h>

typedef struct {
  PyObject_HEAD
  rlx_comm_t *c;
  int owned; /* ours to free (not the world) */
} Comm;

/* The send and receive buffers of a call, and what it returns. */
struct bufs {
  Py_buffer in, out;
  int have_in, have_out;
  rlx_dtype_t dt;
  size_t count;
  const void *send;
  void *recv;
  PyObject *result;
};

void rlxpy_bufs_release(struct bufs *b);
/* Raise the exception for rc; returns NULL. */
PyObject *rlxpy_raise(int rc);
/* 0, or -1 with an exception set: the communicator was freed, or rlxcoll
 * is not initialised. */
int rlxpy_live(Comm *s);
/* The dtype of a buffer (its format, or dtype= by name): 0, -1 with an
 * exception set, or -2 for 1-byte floats (the caller says so). */
int rlxpy_dtype_of(const Py_buffer *b, PyObject *name, rlx_dtype_t *dt);
int rlxpy_op_of(PyObject *o, rlx_op_t *op);
/* A C-contiguous view of o, writable when asked (what: its name in errors). */
int rlxpy_view(PyObject *o, Py_buffer *b, int writable, const char *what);
/* A Request holding b's buffers and mem (PyMem, freed when it completes;
 * may be NULL) for the call go starts; its exception if go fails. */
PyObject *rlxpy_start(struct bufs *b, void *mem,
                      int (*go)(struct bufs *, void *, rlx_request_t **), void *ctx);

/* The collectives' methods of Comm (collectives.c), NULL-terminated. */
extern PyMethodDef rlxpy_coll_methods[];

#endif
