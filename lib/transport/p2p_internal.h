/* The contract between the files of p2p: the connection, peer and
 * early-frame structs, and who calls whom.
 *   p2p.c        entry points, peer failure, set-up and tear-down, queries
 *   conn.c       connection life: dial, accept, handshake, ready, close
 *   heartbeat.c  PINGs on idle connections, silence and handshake deadlines
 *   read.c       the read path: stage, headers, payloads, ABORT arrival
 *   write.c      the write path: stamp, queue, hand to the transport
 *   stream.c     a socket's stream as the data path (tcp's and unix's):
 *                try_write, queued writes, peers gone
 *   match.c      posted receives against arriving frames; the early-frame pool
 *   msg.c        messages: receives by (communicator, source, tag), in order
 *   cma.c        payloads by reference (descriptor, copy, ACK/NACK, resend)
 *   abort.c      the ABORT frame's payload codec and sending
 *   shm.c        the shm transport: rings in shared memory, the Unix
 *                socket as its control channel
 *   sock_poll.c  a waiting caller's own reads of the TCP sockets it waits on
 *   fault.c      fault hooks, compiled only with --enable-fault-injection
 * Everything runs under the engine's loop lock. */
#ifndef RLX_P2P_INTERNAL_H
#define RLX_P2P_INTERNAL_H

#include <stdint.h>
#include "p2p.h"
#include "shm_seg.h"

#define RLX__ABORT_REASON_MAX 600 /* bytes of reason an ABORT frame carries */
/* Small frames are read through a per-connection stage, several frames
 * per read() if they are there; bigger remainders go straight into their
 * destination. */
#define RLX__STAGE_SIZE (64u * 1024u)
/* From this many payload bytes a frame for a posted receive is read with
 * its header alone first, and then straight into the receive's buffer:
 * the extra read() costs less than copying the payload out of the stage
 * (2 ranks over TCP, bench/ab_builds.sh). */
#define RLX__DIRECT_MIN (32u * 1024u)

/* C_HS_SEG: the dialer sent its proof with a segment attached, and waits
 * for the one byte that says whether the acceptor got it (conn.c). */
enum rlx__conn_state {
  C_CONNECTING,
  C_HS_CLIENT,
  C_HS_SEG,
  C_HS_HELLO,
  C_HS_PROOF,
  C_READY,
  C_CLOSING
};
enum rlx__read_state { R_HS, R_HDR, R_PAYLOAD, R_CMA };

/* A frame that arrived before its receive was posted (or an ABORT). */
struct rlx__umsg {
  struct rlx__list link;
  /* in p->early_by_call's bucket of its (communicator, sequence), while on
   * a peer's unexpected list (match.c); from: that peer */
  struct rlx__list klink;
  int from;
  size_t cap; /* payload bytes it can hold */
  struct rlx__frame_hdr hdr;
  int crc_ok;
  int discard; /* payload of a frame already failed as a mismatch */
  /* A message sent by reference that no receive wanted when its
   * descriptor came (cma.c): kept in its place in the arrival order
   * without its payload, which stays in the sender's memory (at ref_addr
   * in process ref_pid; the sender not ACKed) until a receive takes it
   * (one copy, straight into the receive's buffer) or RLX_CMA_HOLD_MS
   * pass (then copied here, and the sender let go). held: 0 = a whole
   * frame; 1 = in the sender's memory since held_at (uv_now); 2 = the
   * copy was refused and NACKed: the payload comes again on the stream
   * and takes this one's place. */
  int held;
  int ref_pid;
  uint64_t ref_addr, held_at;
  unsigned char data[];
};

struct rlx__p2p_conn {
  union rlx__stream_handle h;
  uv_connect_t creq;
  uv_write_t hs_wreq[2];
  struct rlx__p2p *p;
  const struct rlx__transport_ops *tr;
  struct rlx__list link;
  int peer; /* world rank, -1 until the handshake names it */
  enum rlx__conn_state state;
  enum rlx__read_state rstate;
  struct rlx__hs hs;
  uint8_t hs_in[RLX__HS_CHALLENGE_SIZE];
  uint8_t hs_out[2][RLX__HS_CHALLENGE_SIZE];
  uint8_t hdr_in[RLX__FRAME_HDR_SIZE];
  uint8_t cma_in[RLX__CMA_DESC_SIZE];
  int cred_pid; /* the peer's pid from its socket (SO_PEERCRED; 0: not asked yet, -1: none) */
  unsigned char *stage; /* RLX__STAGE_SIZE bytes once the connection is ready */
  size_t stage_len, stage_off;
  int reading_stage;
  size_t need, got;
  struct rlx__frame_hdr cur;
  unsigned char *dst; /* where the current payload goes */
  struct rlx__xfer *target;
  struct rlx__umsg *um;
  uint32_t crc;
  uint64_t hs_deadline;
  uint64_t last_rx, last_tx; /* rlx__tick_ns() of the last bytes in and out */
  uint64_t t_start;          /* when we dialed or accepted it (for the trace) */
  int dialed;
  int call_up; /* dialed a higher rank only to ask it to dial us */
  int write_dead; /* the peer closed (EPIPE): sends wait for what is left to read */
  /* Shared memory (shm.c): when set, every frame goes through its rings
   * and the socket carries only doorbells and the end of the stream. */
  struct rlx__shm_seg *shm;
  struct rlx__list shm_out; /* frames waiting for room in the out ring */
  int shm_draining;         /* drain() is reading a record in place (shm.c) */
  uint8_t bell[64];         /* doorbells are read into it and forgotten */
  /* descriptors a peer sent on this connection (each with an 'F' byte,
   * rlx__p2p_send_fd) and those taken: a byte read with no descriptor
   * behind it was one the kernel dropped (we were out of them) */
  unsigned fds_announced, fds_taken;
  char addr[160]; /* who an accepted connection came from, for logs */
};

struct rlx__p2p_peer {
  struct rlx__p2p_conn *conn;    /* ready connection */
  struct rlx__p2p_conn *pending; /* connecting, or authenticating */
  struct rlx__list posted, unexpected, sendq;
  struct rlx__list cma_wait; /* sent by reference, waiting for the ACK */
  /* receives of its big messages copied by both sides, waiting for its
   * part (cma.c, RLX__FF_SPLIT) */
  struct rlx__list split_wait;
  int no_cma;                /* a copy from us failed once: use the stream */
  int no_split;              /* its push into our memory failed once: copy alone */
  int watched;               /* in p->watch (sock_poll.c) */
  int lost;
  int silent; /* lost to silence, not for certain (rlx__p2p_lost_certainly) */
  char why[320];
  const struct rlx__transport_ops *tr;
  uint64_t nudged; /* when we last called up, unasked, a higher rank we wait for */
  int hs_closed;      /* our dials it closed in their handshakes, in a row */
  uint64_t redial_at; /* when to dial it again after one did (0: not asked) */
  int msg_waits;     /* message receives posted for this peer (not from any source) */
  uint64_t msg_sent; /* messages sent to it: their frames' seq */
};

/* ---- p2p.c */
/* Complete a transfer: status set, its callback called. */
void rlx__xfer_finish(struct rlx__xfer *x, int status);
/* A peer is gone: every transfer that waits on it fails, now and later. */
void rlx__peer_fail(struct rlx__p2p *p, int peer, int err, const char *why);

/* ---- conn.c */
void rlx__conn_close(struct rlx__p2p_conn *c);
void rlx__conn_fail(struct rlx__p2p_conn *c, int err, const char *why);
/* The same for a peer that fell silent (RLX_ERR_PEER_LOST, not certain). */
void rlx__conn_fail_silent(struct rlx__p2p_conn *c, const char *why);
/* Our dial's handshake, closed or reset by the peer: a dead process, or a
 * live one out of descriptors (libuv accepts and closes at once then).
 * Dialled again a few times (the heartbeat sweep does it): a dead one
 * refuses and is lost; one that keeps closing fails what waits on it with
 * RLX_ERR_SYS naming its likely limit, and is not lost. */
void rlx__conn_closed_in_handshake(struct rlx__p2p_conn *c, const char *why);
/* A socket error that says nothing of the peer's process: a timeout or no
 * route to its host. */
int rlx__status_is_silence(int uv_status);
/* Dial peer if it is ours to dial (the higher rank of a pair dials) and
 * no connection is up or coming; sending: a lower rank with frames for
 * a higher one asks it to dial (conn.c, "calls up"). */
void rlx__conn_ensure(struct rlx__p2p *p, int peer, int sending);
void rlx__conn_on_connection(uv_stream_t *server, int status);
/* The handshake's expected bytes are in (read.c calls it). */
void rlx__conn_hs_done(struct rlx__p2p_conn *c);
/* The index of a transport in rlx__transports. */
int rlx__transport_index(const struct rlx__transport_ops *tr);

/* ---- heartbeat.c */
void rlx__heartbeat_sweep(uv_timer_t *t);

/* ---- read.c */
void rlx__read_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf);
void rlx__read_cb(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf);
/* Expect the next frame header. */
void rlx__read_next(struct rlx__p2p_conn *c);

/* ---- read.c */
/* n more bytes are where rlx__read_alloc said: parse them. */
void rlx__read_bytes(struct rlx__p2p_conn *c, size_t n);
/* A packed MSG frame (frame.h) of n bytes, header and payload, whole
 * (shm.c): parsed as its 64-byte form would be. Only between frames:
 * elsewhere, or unpacking badly, it fails the peer as a corrupt header. */
void rlx__read_packed(struct rlx__p2p_conn *c, const unsigned char *rec, size_t n);

/* ---- sock_poll.c */
/* A receive from peer is posted: read its socket directly while waiting. */
void rlx__sock_watch(struct rlx__p2p *p, int peer);

/* ---- write.c */
int rlx__write_frame(struct rlx__p2p *p, struct rlx__xfer *x, int type);
/* Send an already stamped x on a ready connection (x finished when that
 * is at once). */
void rlx__write_start(struct rlx__p2p_conn *c, struct rlx__xfer *x);
/* All of x is written: complete it, or wait for its ACK, or resend. */
void rlx__write_done(struct rlx__p2p_conn *c, struct rlx__xfer *x);
/* A header-only control frame (ACK, PING) on storage of the caller's. */
void rlx__write_ctl(struct rlx__p2p_conn *c, const uint8_t bytes[RLX__FRAME_HDR_SIZE]);
/* What goes after x's header: the payload, or its by-reference descriptor. */
const uint8_t *rlx__wire_payload(const struct rlx__xfer *x, size_t *len);
/* A transport took x (all or part of it): a send by reference now waits
 * for its ACK. */
void rlx__write_started(struct rlx__p2p *p, struct rlx__xfer *x);

/* ---- stream.c (the data half of the tcp and unix tables) */
int rlx__stream_send(struct rlx__p2p_conn *c, struct rlx__xfer *x);
void rlx__stream_send_ctl(struct rlx__p2p_conn *c, const uint8_t *bytes);
int rlx__stream_start(struct rlx__p2p_conn *c);
int rlx__stream_unread(struct rlx__p2p_conn *c);
int rlx__stream_unsent(const struct rlx__p2p_conn *c);
void rlx__stream_cut_short(struct rlx__p2p_conn *c, const uint8_t *hdr, const void *payload,
                           size_t len);
/* The data half of a table whose connections are byte streams. */
#define RLX__STREAM_DATA_PATH                                                                    \
  .start = rlx__stream_start, .send = rlx__stream_send, .send_ctl = rlx__stream_send_ctl,        \
  .unread = rlx__stream_unread, .unsent = rlx__stream_unsent, .cut_short = rlx__stream_cut_short

/* ---- match.c */
int rlx__same_key(const struct rlx__frame_hdr *a, const struct rlx__frame_hdr *b);
/* Does a frame agree with the receive posted for it (same signature, same
 * length)? */
int rlx__frame_matches(const struct rlx__xfer *x, const struct rlx__frame_hdr *h);
struct rlx__xfer *rlx__find_posted(struct rlx__p2p_peer *pe, const struct rlx__frame_hdr *h);
/* Hand a fully received early frame to its receive: its status. */
int rlx__umsg_deliver(struct rlx__umsg *m, struct rlx__xfer *x);
/* A pooled buffer for an early frame; on no memory the peer is failed and
 * NULL returned. */
struct rlx__umsg *rlx__umsg_new(struct rlx__p2p_conn *c, const struct rlx__frame_hdr *h,
                                size_t len);
void rlx__umsg_put(struct rlx__p2p *p, struct rlx__umsg *m);
/* The same without a connection to fail: NULL on no memory. */
struct rlx__umsg *rlx__umsg_alloc(struct rlx__p2p *p, size_t len);
/* A received frame (not an ABORT) is whole: give it to its receive, or
 * keep it for one to come. */
void rlx__match_arrived(struct rlx__p2p_conn *c, struct rlx__umsg *m);
/* Either kind of frame with a payload (DATA, MSG), h its header: the
 * receive posted for it (still on its list), whether the frame fits it,
 * the receive's error when it does not (another call; too long), taking
 * the receive off its list, and keeping a whole frame no receive took
 * (c's peer's). */
struct rlx__xfer *rlx__match_posted(struct rlx__p2p_conn *c, const struct rlx__frame_hdr *h);
int rlx__match_fits(const struct rlx__xfer *x, const struct rlx__frame_hdr *h);
int rlx__match_refusal(const struct rlx__frame_hdr *h);
void rlx__match_take(struct rlx__p2p *p, struct rlx__xfer *x, const struct rlx__frame_hdr *h);
void rlx__match_keep(struct rlx__p2p_conn *c, struct rlx__umsg *m);
/* The early frame for x, taken off the peer's list, or NULL. */
struct rlx__umsg *rlx__match_take_early(struct rlx__p2p_peer *pe, const struct rlx__xfer *x);
void rlx__pool_free(struct rlx__p2p *p);

/* ---- msg.c */
/* The first posted message receive that wants h from world rank src
 * (still posted), or NULL; take it off its list. */
struct rlx__xfer *rlx__msg_find_posted(struct rlx__p2p *p, int src, const struct rlx__frame_hdr *h);
void rlx__msg_unpost(struct rlx__p2p *p, struct rlx__xfer *x);
/* A whole message that no receive took at its header: to a receive
 * posted since, or kept. */
void rlx__msg_arrived(struct rlx__p2p *p, struct rlx__umsg *m);
/* Peer is lost: the receives that wait on it fail with err. */
void rlx__msg_peer_lost(struct rlx__p2p *p, int peer, int err);
/* Does a receive posted now want a big frame from peer first? */
int rlx__msg_big_posted(const struct rlx__p2p *p, int peer, size_t big);
void rlx__msg_free(struct rlx__p2p *p);

/* ---- cma.c */
/* Let peers of our uid read our memory (Yama's ptrace scope). */
void rlx__cma_enable(void);
/* Should x go by reference? If so, fill its descriptor and CRC. */
int rlx__cma_prepare(struct rlx__p2p *p, struct rlx__xfer *x);
/* A by-reference DATA frame's descriptor is in: copy, ACK or NACK. */
void rlx__cma_desc_done(struct rlx__p2p_conn *c);
/* An ACK or NACK for one of our sends by reference. */
void rlx__cma_ack_done(struct rlx__p2p_conn *c, const struct rlx__frame_hdr *h);
/* A NACKed send goes again with its payload on the stream. */
void rlx__cma_resend(struct rlx__p2p_conn *c, struct rlx__xfer *x);
/* A receive abandoned (x->queued == 2: on its sender's split_wait, the
 * sender perhaps writing into its buffer): the connection fails. */
void rlx__cma_split_cancel(struct rlx__p2p *p, struct rlx__xfer *x);
/* Receive x takes held message m (off its list; the caller frees it):
 * copied straight into x->buf and the sender ACKed: x's status (x->got
 * set); or RLX__HELD_RESEND: the copy was refused, and x must stay (or
 * be) posted for the payload, which comes again on the stream. */
#define RLX__HELD_RESEND (-1000)
/* ... or RLX__HELD_SPLIT: x is copied by both sides (RLX__FF_SPLIT) and
 * completes when the sender's part is in. */
#define RLX__HELD_SPLIT (-1001)
int rlx__cma_take_held(struct rlx__p2p *p, struct rlx__umsg *m, struct rlx__xfer *x);

/* ---- cma_copy.c */
/* len bytes between our buf and addr in process pid, whole: read them
 * from there (write 0) or write ours there, at full speed where the
 * kernel's copy would be slow at their distance. 0, or -errno. */
int rlx__cma_move(int pid, uint64_t addr, void *buf, size_t len, int write);

/* ---- abort.c */
/* An ABORT frame's payload is whole: tell on_abort. */
void rlx__abort_arrived(struct rlx__p2p_conn *c, const struct rlx__umsg *m);

/* ---- fault.c (test builds) */
#ifdef RLX_FAULT_INJECTION
/* RLX_FAULT_FRAME: maybe spoil x (a DATA or MSG frame about to be written); 1
 * when the fault consumed it (x->status set). */
int rlx__fault_frame(struct rlx__p2p *p, struct rlx__xfer *x);
/* RLX_FAULT_CMA=deny: refuse copies by reference. */
int rlx__fault_cma_denied(void);
/* RLX_FAULT_CMA=wrongpid: a split copy's request names pid 1 (=descpid:
 * p2p.h). */
int rlx__fault_cma_wrong_pid(void);
void rlx__fault_free(void);
/* RLX_FAULT_FRAME names a fault: every frame goes through rlx__fault_frame. */
int rlx__fault_frames_on(void);
#endif

#endif
