/* Point-to-point messaging between world ranks: connections made on demand
 * and authenticated, frames sent from the caller's buffer and received
 * straight into a posted destination, unexpected frames held until their
 * receive is posted. Everything here runs under the engine's loop lock.
 * This is the contract for lib/coll and the runtime; p2p_internal.h is the
 * one between the files that implement it. */
#ifndef RLX_P2P_H
#define RLX_P2P_H

#include <stdint.h>
#include <uv.h>
#include "bootstrap/bootstrap.h"
#include "frame.h"
#include "bootstrap/handshake.h"
#include "list.h"
#include "transport.h"

/* A send by reference (same host, large payload): where it stands. */
enum rlx__ref_state {
  RLX__REF_NONE = 0,  /* the payload goes on the stream */
  RLX__REF_WAIT_ACK,  /* descriptor sent; the receiver copies, then ACKs */
  RLX__REF_ACKED,     /* the receiver took it */
  RLX__REF_NACKED,    /* the copy failed: send the payload on the stream */
};

/* One send or receive. The caller fills peer, hdr (for a receive: the
 * fields it expects), buf, len, cb and owner; p2p fills status (and got, for
 * a receive whose frame did not match the call). */
struct rlx__xfer {
  int peer;
  struct rlx__frame_hdr hdr;
  void *buf;
  size_t len;
  void (*cb)(struct rlx__xfer *x);
  void *owner;
  int status;                /* RLX_OK or RLX_ERR_* */
  struct rlx__frame_hdr got; /* RLX_ERR_MISMATCH: what the peer called */
  /* p2p's own */
  struct rlx__list link;
  uv_write_t wreq;
  uint8_t hbytes[RLX__FRAME_HDR_SIZE];
  uint8_t cma_desc[RLX__CMA_DESC_SIZE];
  int is_send, writing;
  int queued; /* on a list it waits on (2: a receive on its sender's split_wait, cma.c) */
  int split_rc; /* a receive copied by both sides: its own part's copy (0 or -errno) */
  enum rlx__ref_state ref;
  /* A message receive from any source (peer RLX__MSG_ANY): the members
   * of its communicator, whose loss fails it (rlx__msg_recv) */
  const int *any_of;
  int nany;
};

struct rlx__p2p_peer;
struct rlx__p2p_conn;
struct rlx__p2p;

/* A listening socket of one transport. */
struct rlx__p2p_listener {
  union rlx__stream_handle h;
  const struct rlx__transport_ops *tr;
  struct rlx__p2p *p;
  int open;
};

/* Early frames' buffers of up to 64 KiB come in these many power-of-two
 * sizes from 256 bytes (match.c). */
#define RLX__UMSG_CLASSES 9

struct rlx__p2p {
  uv_loop_t *loop;
  int rank, size;
  const struct rlx__transport_ops *forced; /* RLX_TRANSPORT, NULL = by reach */
  const struct rlx__card *cards;
  struct rlx__p2p_peer *peers;
  struct rlx__p2p_listener listeners[RLX__TRANSPORTS_MAX];
  int sweep_open;
  uv_timer_t sweep;
  uint64_t last_sweep; /* when the sweep last ran: a late one means this process stalled */
  struct rlx__list conns;
  struct rlx__list pool; /* spare buffers for early frames */
  int npool;
  /* and for frames up to 64 KiB, by size class (match.c) */
  struct rlx__list pool_class[RLX__UMSG_CLASSES];
  int npool_class[RLX__UMSG_CLASSES];
  /* The early frames on the peers' unexpected lists by (communicator,
   * sequence), RLX__EARLY_BUCKETS chains (match.c; NULL until the first,
   * or when there was no memory for it: then the lists are scanned), so
   * that a call's start finds its own among thousands from ranks that
   * ran ahead (a gather's senders) without walking them all. */
  struct rlx__list *early_by_call;
  char job_key[256];
  int closing;
  int fail_silent; /* set around a failure by silence (rlx__conn_fail_silent) */
  int cma; /* send big payloads to same-host peers by reference (RLX_CMA) */
  int oversubscribed; /* this host's ranks outnumber its cores (algorithms tune for it) */
  unsigned long strangers; /* connections dropped for failing the handshake */
  /* An ABORT frame arrived: the sender failed operation (comm_id, seq). */
  void (*on_abort)(void *ctx, int from, const struct rlx__frame_hdr *h, int err,
                   const char *reason);
  void *abort_ctx;
  /* A DATA frame came that no posted receive wanted (yet): the operation
   * it belongs to may be in flight here with another signature (a call
   * whose pattern differs, as bcasts with different roots). NULL: none. */
  void (*on_early)(void *ctx, int from, const struct rlx__frame_hdr *h);
  /* A peer was lost (why says how); NULL: nobody to tell. */
  void (*on_lost)(void *ctx, int peer, const char *why);
  unsigned long cma_copies, cma_fallbacks;
  unsigned long cma_splits; /* of cma_copies, those the sender wrote its part of */
  unsigned long corrupt; /* frames whose CRC32C did not match */
  /* For RLX_STATS: connections that completed the handshake, by transport
   * (index in rlx__transports), and the retransmissions of those closed. */
  unsigned long opened[RLX__TRANSPORTS_MAX], retrans_closed;
  int nready; /* connections ready now */
  /* The ready ones a transport polls outside libuv (shm.c's rings; it
   * reads them by index: a callback may close one while it goes through
   * them), npolled of them. */
  struct rlx__p2p_conn **polled;
  int npolled;
  /* Peers whose TCP socket a waiting caller reads itself (sock_poll.c). */
  int *watch;
  int nwatch;
  int nwriting; /* frames in a queued uv_write (the stream did not take them at once) */
  /* Messages (msg.c): receives in the order posted, and messages that came
   * before a receive wanted them, in the order they arrived. */
  struct rlx__list msg_posted, msg_unexpected;
  uint64_t msg_posts;
  /* Messages held in their senders' memory (cma.c): a timer lets them go
   * after cma_hold_ms; held_resends: placeholders whose payload comes
   * again on the stream (msg.c puts it in their place). */
  uv_timer_t cma_hold;
  uint64_t cma_hold_ms; /* RLX_CMA_HOLD_MS; 0: copied as they come */
  int cma_hold_open;
  int held_resends;
};

/* Open a listener for every transport *mine offers: its address field
 * says where (the TCP IP address, the Unix socket's path; "" = none) and
 * gets the address peers connect to. forced names the transport every
 * peer is reached by (RLX_TRANSPORT), NULL = by reach. Returns RLX_OK or an
 * error with rlx_errmsg set. */
int rlx__p2p_init(struct rlx__p2p *p, uv_loop_t *loop, int rank, int size, const char *job_key,
                  const char *forced, int cma, struct rlx__card *mine);
/* A job of one: no listener, no connection, messages to itself only
 * (rlx__p2p_free ends it). */
int rlx__p2p_init_alone(struct rlx__p2p *p);
/* The cards of every rank, after the exchange (kept by reference); again
 * whenever they grow (a new array, or new ranks). */
int rlx__p2p_start(struct rlx__p2p *p, const struct rlx__card *cards);
/* Room for ranks up to size - 1 (a job that grew); the caller then gives
 * their cards to rlx__p2p_start. Under the loop lock. */
int rlx__p2p_grow(struct rlx__p2p *p, int size);
/* Post a send or receive. Returns 1 if it completed at once (status set,
 * cb not called), 0 if cb will be called later from the loop. */
int rlx__p2p_send(struct rlx__p2p *p, struct rlx__xfer *x);
int rlx__p2p_recv(struct rlx__p2p *p, struct rlx__xfer *x);
/* Tell peer that we failed operation (comm_id, seq) with err and why:
 * an ABORT frame, sent (or queued until the peer connects) on its own
 * storage. Best effort: a lost peer is skipped. */
void rlx__p2p_abort(struct rlx__p2p *p, int peer, uint32_t comm_id, uint64_t seq,
                    const uint8_t sig[RLX__SIG_SIZE], int err, const char *reason);
/* Has peer a ready connection? Mark a peer lost (shrink's probe found it
 * dead; silent: only that it does not answer). Both under the loop lock. */
int rlx__p2p_connected(struct rlx__p2p *p, int peer);
void rlx__p2p_mark_lost(struct rlx__p2p *p, int peer, int silent, const char *why);
/* Connect to peer now, with nothing to send yet (a higher rank is called
 * up: it dials back); nothing if connected, connecting or lost. Under the
 * loop lock. */
void rlx__p2p_dial(struct rlx__p2p *p, int peer);
/* Withdraw a pending transfer (on timeout or failure); cb is not called.
 * A send already being written closes its connection. */
void rlx__p2p_cancel(struct rlx__p2p *p, struct rlx__xfer *x);
/* A send by reference whose receiver has not yet said it read the buffer
 * (or will not): cancelling it closes the connection, since the receiver
 * may be reading it now. Its owner waits for the word instead where it
 * can (RLX__DRAIN_MS: exec.c for collectives, messages.c for messages).
 * Under the loop lock. */
static inline int rlx__p2p_ref_unacked(const struct rlx__xfer *x) {
  return x->is_send && x->ref == RLX__REF_WAIT_ACK;
}
/* Whether large payloads to same-host peers go by reference: RLX_CMA on,
 * and no transport forced that cannot (RLX_TRANSPORT=tcp never does).
 * Fixed once the job started and the same on every rank (RLX_CMA and
 * RLX_TRANSPORT are job-wide), so algorithms may size their segments by
 * it without a lock and still agree. */
static inline int rlx__p2p_by_ref(const struct rlx__p2p *p) {
  return p->cma && (p->forced == NULL || p->forced->same_host);
}
/* Copy len bytes at addr in process pid (a peer of this host) into dst
 * with process_vm_readv: 0, or -errno when the kernel refused (ptrace
 * rules, a sandbox; RLX_FAULT_CMA=deny in fault-injection builds) or the
 * range is not mapped there. */
int rlx__cma_read(int pid, uint64_t addr, void *dst, size_t len);
/* ... and n (1-4) 64-bit words at addrs there into words, in one call. */
int rlx__cma_read_words(int pid, const uint64_t *addrs, uint64_t *words, int n);
/* ... and len bytes of src to addr there, with process_vm_writev (0 or
 * -errno; RLX_FAULT_CMA=deny refuses it). */
int rlx__cma_write(int pid, uint64_t addr, const void *src, size_t len);
#ifdef RLX_FAULT_INJECTION
/* RLX_FAULT_CMA=slowpush: 1.5 s before a write into another process;
 * diepush: exit instead; deny, denypush: -EPERM (0: none of these). */
int rlx__fault_cma_push(void);
#endif
/* The pid of the process at the other end of our ready Unix-socket
 * connection to world rank peer (SO_PEERCRED), or 0 when there is none
 * to ask (no connection yet, or not over a Unix socket). Under the loop
 * lock. */
int rlx__p2p_peer_pid(struct rlx__p2p *p, int peer);
#ifdef RLX_FAULT_INJECTION
/* RLX_FAULT_CMA=descpid (test builds): a sender names pid 1 as its
 * memory's in what it sends by reference. */
int rlx__fault_cma_desc_pid(void);
#endif
/* The transport a peer is reached by ("shm"/"unix"/"tcp"), and why a lost peer
 * was lost (NULL when it is not). */
const char *rlx__p2p_transport_of(struct rlx__p2p *p, int peer);
const char *rlx__p2p_lost_reason(struct rlx__p2p *p, int peer);
/* 1 when peer is lost for certain: its connection closed or was reset,
 * a dial was refused, its process is gone; 0 when it is not lost, or lost
 * only to silence (no heartbeat, an unanswered dial, no route), which a
 * network partition looks like too (rlx_comm_shrink's quorum counts it). */
int rlx__p2p_lost_certainly(struct rlx__p2p *p, int peer);
/* The last failure with peer, lost or not (a shortage of this process's:
 * RLX_ERR_SYS), "" when none. */
const char *rlx__p2p_last_reason(struct rlx__p2p *p, int peer);
/* Connections over transport (by name) that completed the handshake over
 * the job, and the retransmissions the kernel counted on all of them
 * (TCP_INFO). Under the loop lock. */
int rlx__p2p_opened(struct rlx__p2p *p, const char *transport);
unsigned long rlx__p2p_retransmissions(struct rlx__p2p *p);
/* Called by the engine under the loop lock: progress: the transports'
 * work outside libuv (frames through shm.c's rings, the TCP sockets of
 * peers with a receive posted read directly), the bytes moved;
 * prepare_sleep: before the loop sleeps (sleeping 1), tell the writers
 * to ring us, or 1 when bytes are already there (do not sleep; nobody is
 * marked asleep); after it (sleeping 0), take that back. */
size_t rlx__p2p_progress(struct rlx__p2p *p);
/* 1 when a poll would find nothing: every ready connection is a ring
 * (shm.c), none has a record to read or frames waiting for room, and no
 * socket is read directly; the waiting caller's turn then skips the
 * transports' progress (the turn of a receiver waiting on a ring: 185
 * instructions, 85 with it). */
int rlx__shm_quiet(const struct rlx__p2p *p);
int rlx__p2p_prepare_sleep(struct rlx__p2p *p, int sleeping);
/* Read the TCP sockets of peers with a receive posted, without libuv;
 * returns the bytes read. */
size_t rlx__sock_poll(struct rlx__p2p *p);
/* Do frames to world rank peer (this rank: to itself) go through this
 * host's memory (the shm transport, by reach or forced)? After
 * rlx__p2p_start. */
int rlx__p2p_in_memory(const struct rlx__p2p *p, int peer);
/* Descriptors between ranks of a host (the collectives' group segments,
 * lib/coll/shm_group.c), under the loop lock. shm_state: 1 when peer has
 * a ready shared-memory connection, 0 while it is being made (this call
 * starts it), -1 when there will be none (lost, or not shared memory).
 * send_fd: fd goes to peer with a byte of its own (0 or -errno). take_fd:
 * the oldest descriptor peer sent, ours to close; -EAGAIN: none yet;
 * -EMFILE: it came without the descriptor (we were out of them). */
int rlx__p2p_shm_state(struct rlx__p2p *p, int peer);
int rlx__p2p_send_fd(struct rlx__p2p *p, int peer, int fd);
int rlx__p2p_take_fd(struct rlx__p2p *p, int peer);
/* A DATA frame held for operation (comm_id, seq) whose signature is not
 * sig: its sender's world rank (the frame's header in *h), or -1. Under
 * the loop lock. (An operation looks at its start: a partner that called
 * something else may have sent first.) */
int rlx__p2p_early_mismatch(struct rlx__p2p *p, uint32_t comm_id, uint64_t seq,
                            const uint8_t sig[RLX__SIG_SIZE], struct rlx__frame_hdr *h);
/* Frames still to go out to peers not lost: queued for a connection, in
 * a write the stream has not taken yet, or waiting for room in a ring
 * (rlx_finalize lets them go before it closes). Under the loop lock. */
int rlx__p2p_unsent(const struct rlx__p2p *p);
/* Messages (rlx_send, rlx_recv): MSG frames matched by (communicator,
 * source, tag), MPI's way. The caller fills x as for a transfer, with
 * hdr.comm_id, hdr.segment (the tag, or RLX__MSG_ANY_TAG for a receive),
 * hdr.sig (opaque, compared by the caller) and, for a receive, peer
 * RLX__MSG_ANY with any_of/nany the communicator's world ranks. A
 * receive's len is its capacity: a longer message fails it with
 * RLX_ERR_TRUNCATE and is consumed. On completion x->got is the
 * message's header (src, segment = tag, payload_len, sig); for a receive
 * failed by a lost peer, got.src names it. Both return as rlx__p2p_send.
 * A message to this rank itself is delivered (or kept) at once. */
#define RLX__MSG_ANY (-1)
#define RLX__MSG_ANY_TAG 0xffffffffu
int rlx__msg_send(struct rlx__p2p *p, struct rlx__xfer *x);
int rlx__msg_recv(struct rlx__p2p *p, struct rlx__xfer *x);
/* A small message to world rank peer sent whole at once, with no request
 * (a packed frame into its ready connection, where the transport has
 * them and nothing waits before it): 1 when it went, 0 when it must go
 * by rlx__msg_send. len at most RLX__MSG_PACKED_MAX. */
#define RLX__MSG_PACKED_MAX 4072 /* (the most a ring's whole record carries: shm.c) */
int rlx__msg_send_packed(struct rlx__p2p *p, int peer, uint32_t comm_id, uint32_t tag,
                         uint8_t dtype, const void *buf, size_t len);
/* Withdraw a message receive that has not completed (cb is not called);
 * one whose payload is coming in fails its sender's connection. */
void rlx__msg_cancel(struct rlx__p2p *p, struct rlx__xfer *x);
/* Close every handle; the loop must then run until they are closed. */
void rlx__p2p_close(struct rlx__p2p *p);
void rlx__p2p_free(struct rlx__p2p *p);

#endif
