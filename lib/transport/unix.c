/* Unix-domain socket transport, for peers on the same host: a socket file
 * in the rank's private 0700 run directory. */
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include "transport.h"

static int unix_listen(uv_loop_t *loop, union rlx__stream_handle *h, const char *where,
                       char *addr_out, size_t addr_len, uv_connection_cb cb) {
  int rc;
  if ((rc = uv_pipe_init(loop, &h->pipe, 0)) != 0)
    return rc;
  if ((rc = uv_pipe_bind(&h->pipe, where)) != 0 || (rc = uv_listen(&h->stream, 128, cb)) != 0)
    return rc;
  chmod(where, 0600);
  snprintf(addr_out, addr_len, "%s", where);
  return 0;
}

static int unix_connect(uv_loop_t *loop, union rlx__stream_handle *h, uv_connect_t *req,
                        const char *addr, uv_connect_cb cb) {
  int rc;
  if ((rc = uv_pipe_init(loop, &h->pipe, 0)) != 0)
    return rc;
  uv_pipe_connect(req, &h->pipe, addr, cb);
  return 0;
}

static int unix_accept(uv_loop_t *loop, uv_stream_t *server, union rlx__stream_handle *h) {
  int rc;
  if ((rc = uv_pipe_init(loop, &h->pipe, 0)) != 0)
    return rc;
  return uv_accept(server, &h->stream);
}

const struct rlx__transport_ops rlx__unix_transport = {"unix", unix_listen, unix_connect,
                                                       unix_accept};
