/* The transport interface: each transport (tcp.c, unix.c) fills one ops
 * table over libuv streams, and registers it in transport.c's table; the
 * stream/frame layer above (p2p*.c) asks the table everything it needs and
 * never names a transport. Choosing one by reach happens in transport.c. */
#ifndef RLX_TRANSPORT_H
#define RLX_TRANSPORT_H

#include <stddef.h>
#include <uv.h>

struct rlx__card;

/* A libuv stream of any transport. */
union rlx__stream_handle {
  uv_handle_t handle;
  uv_stream_t stream;
  uv_tcp_t tcp;
  uv_pipe_t pipe;
};

struct rlx__transport_ops {
  const char *name; /* "tcp", "unix": logs, traces, statistics, RLX_TRANSPORT */
  /* Peers it reaches share this host's memory, so large payloads may go
   * by reference (process_vm_readv) instead of through the stream. */
  int same_host;
  /* Its field in a business card: before listen, where to listen (an IP
   * address, a socket path; "" = not offered); after, the address peers
   * connect to. *cap gets the field's size. */
  char *(*card_addr)(struct rlx__card *card, size_t *cap);
  /* Can a rank with card me reach the owner of card them this way? */
  int (*reaches)(const struct rlx__card *me, const struct rlx__card *them);
  /* Bind and listen on `where`. Writes the address peers connect to into
   * addr_out. Returns 0 or a libuv error (the caller closes h if it was
   * initialised). */
  int (*listen)(uv_loop_t *loop, union rlx__stream_handle *h, const char *where,
                char *addr_out, size_t addr_len, uv_connection_cb cb);
  /* Start connecting to an address written by listen. */
  int (*connect)(uv_loop_t *loop, union rlx__stream_handle *h, uv_connect_t *req,
                 const char *addr, uv_connect_cb cb);
  /* Accept a pending connection from server into h. */
  int (*accept)(uv_loop_t *loop, uv_stream_t *server, union rlx__stream_handle *h);
  /* An accepted connection, before its handshake: write who it is into
   * label ("10.0.0.2", "unix socket, pid 12 uid 0") and return 0; or
   * return -1 with label saying why it may not talk to us at all. */
  int (*admit)(uv_stream_t *s, char *label, size_t len);
  /* Segments the kernel retransmitted on a connection so far; NULL where
   * the transport has nothing to count. */
  unsigned long (*retransmissions)(uv_handle_t *h);
};

extern const struct rlx__transport_ops rlx__tcp_transport;
extern const struct rlx__transport_ops rlx__unix_transport;

/* Every transport, in order of preference, NULL-terminated. */
#define RLX__TRANSPORTS_MAX 4
extern const struct rlx__transport_ops *const rlx__transports[];
/* By name, or NULL. */
const struct rlx__transport_ops *rlx__transport_find(const char *name);
/* The transport from me to them: forced when not NULL, else the first in
 * order of preference that reaches them. */
const struct rlx__transport_ops *rlx__transport_choose(const struct rlx__transport_ops *forced,
                                                       const struct rlx__card *me,
                                                       const struct rlx__card *them);

/* "1.2.3.4:5" or "[::1]:5" into a sockaddr; 0 or a libuv error. */
int rlx__parse_hostport(const char *s, struct sockaddr_storage *ss);

#endif
