/* lib/transport, above base, observe and bootstrap (cards, handshake);
 * lib/coll and the runtime use it. The transport interface: each transport (tcp.c, unix.c, shm.c) fills
 * one ops table and registers it in transport.c's table; the frame layer
 * above (p2p.c, conn.c, read.c, ...) asks the table everything it needs
 * and never names a transport. Choosing one by reach happens in
 * transport.c. A table has two halves: the connection (reach, listen,
 * dial, accept: tcp.c and unix.c over libuv streams; shm.c borrows the
 * Unix socket's as its control channel) and a ready connection's data
 * path (stream.c's functions for a socket's byte stream; shm.c's rings). */
#ifndef RLX_TRANSPORT_H
#define RLX_TRANSPORT_H

#include <stddef.h>
#include <stdint.h>
#include <uv.h>

struct rlx__card;
struct rlx__p2p;
struct rlx__p2p_conn;
struct rlx__xfer;

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
  /* Listen, dial and accept through this transport's (and its card
   * field, reach, admission); NULL: its own. */
  const struct rlx__transport_ops *control;

  /* ---- the data path of one connection (everything under the loop lock) */
  /* Frames cross this host's memory, not a socket: no CRC32C on payloads
   * (the bytes never leave RAM), nothing to read straight into a receive's
   * buffer (the ring is the copy already). */
  int in_memory;
  /* A waiting caller may recv() on the connection's socket itself
   * (sock_poll.c): a plain stream that carries no descriptors. */
  int pollable;
  /* Dialer, the handshake's last bytes: send them with what the
   * connection needs attached (shm: its segment); the bytes sent, or 0
   * when nothing went: the connection is then its control transport's,
   * which sends them. NULL: nothing to attach. */
  long (*offer)(struct rlx__p2p_conn *c, const uint8_t *bytes, size_t len);
  /* Acceptor, on a connection of the control transport, the proof
   * checked: take what the dialer attached: 1 when it came (the
   * connection is then this transport's), 0 when nothing did, or an
   * RLX_ERR_ code (message set) that fails the connection. */
  int (*take_offer)(struct rlx__p2p_conn *c);
  /* The connection is ready: read it from now on; 0 or a libuv error. */
  int (*start)(struct rlx__p2p_conn *c);
  /* Send x's stamped frame: 1 when it is done at once (x->status set),
   * 0 when it completes later through rlx__write_done. */
  int (*send)(struct rlx__p2p_conn *c, struct rlx__xfer *x);
  /* A small message as a packed frame (frame.h: its header packed by the
   * caller, then len bytes of payload), whole now or not at all: 1 when it
   * went, 0 when it must go as a frame (no room, or frames waiting before
   * it). NULL: never. */
  int (*send_packed)(struct rlx__p2p_conn *c, const uint8_t *hdr, const void *payload,
                     size_t len);
  /* A header-only control frame (ACK, PING) from storage of the caller's. */
  void (*send_ctl)(struct rlx__p2p_conn *c, const uint8_t *bytes);
  /* Bytes the peer sent that nobody has read yet (a proof of life). */
  int (*unread)(struct rlx__p2p_conn *c);
  /* Frames accepted by send that have not left yet. */
  int (*unsent)(const struct rlx__p2p_conn *c);
  /* The connection closes: what it holds fails with err and goes. NULL:
   * nothing of its own. */
  void (*drop)(struct rlx__p2p_conn *c, int err);
  /* Fault injection (fault.c): the header and the first len bytes of a
   * payload, raw, as a connection cut in the middle of a frame leaves. */
  void (*cut_short)(struct rlx__p2p_conn *c, const uint8_t *hdr, const void *payload,
                    size_t len);
  /* The engine's turn outside libuv (its rings): bytes moved. NULL: none. */
  size_t (*progress)(struct rlx__p2p *p);
  /* The engine is about to sleep in libuv's poll (sleeping 1) or woke
   * (0): 1 when bytes came meanwhile and it must not sleep. NULL: none. */
  int (*prepare_sleep)(struct rlx__p2p *p, int sleeping);
};

extern const struct rlx__transport_ops rlx__tcp_transport;
extern const struct rlx__transport_ops rlx__unix_transport;
extern const struct rlx__transport_ops rlx__shm_transport;

/* Every transport, in order of preference, NULL-terminated. */
#define RLX__TRANSPORTS_MAX 8
extern const struct rlx__transport_ops *const rlx__transports[];
/* By name, or NULL. */
const struct rlx__transport_ops *rlx__transport_find(const char *name);
/* The transport from me to them: forced when not NULL, else the first in
 * order of preference that reaches them. */
const struct rlx__transport_ops *rlx__transport_choose(const struct rlx__transport_ops *forced,
                                                       const struct rlx__card *me,
                                                       const struct rlx__card *them);

/* The transport that listens, dials and accepts for tr (tr itself, or
 * the one it rides on). */
const struct rlx__transport_ops *rlx__transport_control(const struct rlx__transport_ops *tr);

/* "1.2.3.4:5" or "[::1]:5" into a sockaddr; 0 or a libuv error. */
int rlx__parse_hostport(const char *s, struct sockaddr_storage *ss);

#endif
