/* The transport interface: each transport (tcp.c, unix.c) fills one ops
 * table over libuv streams; the stream/frame layer above (p2p.c) never names
 * a transport, and choosing one by reach happens in one place. */
#ifndef RLX_TRANSPORT_H
#define RLX_TRANSPORT_H

#include <stddef.h>
#include <uv.h>

/* A libuv stream of any transport. */
union rlx__stream_handle {
  uv_handle_t handle;
  uv_stream_t stream;
  uv_tcp_t tcp;
  uv_pipe_t pipe;
};

struct rlx__transport_ops {
  const char *name; /* "tcp" or "unix" */
  /* Bind and listen on `where` (tcp: an IP address, port chosen by the
   * kernel; unix: a filesystem path). Writes the address peers connect to
   * into addr_out. Returns 0 or a libuv error. */
  int (*listen)(uv_loop_t *loop, union rlx__stream_handle *h, const char *where,
                char *addr_out, size_t addr_len, uv_connection_cb cb);
  /* Start connecting to an address written by listen. */
  int (*connect)(uv_loop_t *loop, union rlx__stream_handle *h, uv_connect_t *req,
                 const char *addr, uv_connect_cb cb);
  /* Accept a pending connection from server into h. */
  int (*accept)(uv_loop_t *loop, uv_stream_t *server, union rlx__stream_handle *h);
};

extern const struct rlx__transport_ops rlx__tcp_transport;
extern const struct rlx__transport_ops rlx__unix_transport;

/* "1.2.3.4:5" or "[::1]:5" into a sockaddr; 0 or a libuv error. */
int rlx__parse_hostport(const char *s, struct sockaddr_storage *ss);

#endif
