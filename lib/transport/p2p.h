/* Point-to-point messaging between world ranks: connections made on demand
 * and authenticated, frames sent from the caller's buffer and received
 * straight into a posted destination, unexpected frames held until their
 * receive is posted. Everything here runs under the engine's loop lock. */
#ifndef RLX_P2P_H
#define RLX_P2P_H

#include <stdint.h>
#include <uv.h>
#include "../bootstrap/bootstrap.h"
#include "frame.h"
#include "handshake.h"
#include "list.h"
#include "transport.h"

enum rlx__tr_choice { RLX__P2P_AUTO = 0, RLX__P2P_TCP, RLX__P2P_UNIX };

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
  int is_send, queued, writing;
  int cma; /* sent by reference: 1 waiting for the ACK, 2 ACKed, 3 NACKed */
};

struct rlx__p2p_peer;
struct rlx__p2p_conn;

struct rlx__p2p {
  uv_loop_t *loop;
  int rank, size;
  int choice;
  const struct rlx__card *cards;
  struct rlx__p2p_peer *peers;
  union rlx__stream_handle tcp_listener, unix_listener;
  int tcp_open, unix_open, sweep_open;
  uv_timer_t sweep;
  struct rlx__list conns;
  struct rlx__list pool; /* spare buffers for early frames */
  int npool;
  char job_key[256];
  int closing;
  int cma; /* send big payloads to same-host peers by reference (RLX_CMA) */
  int oversubscribed; /* this host's ranks outnumber its cores (algorithms tune for it) */
  unsigned long strangers; /* connections dropped for failing the handshake */
  /* An ABORT frame arrived: the sender failed operation (comm_id, seq). */
  void (*on_abort)(void *ctx, int from, const struct rlx__frame_hdr *h, int err,
                   const char *reason);
  void *abort_ctx;
  unsigned long cma_copies, cma_fallbacks;
  unsigned long corrupt; /* frames whose CRC32C did not match */
  /* For RLX_STATS: connections that completed the handshake, by transport,
   * and the TCP retransmissions of those already closed. */
  unsigned long opened_unix, opened_tcp, retrans_closed;
};

/* Open the listeners: TCP on tcp_ip (port chosen by the kernel) and, if
 * unix_path is not NULL, a Unix socket there. Writes the addresses into
 * *mine. Returns RLX_OK or an error with rlx_errmsg set. */
int rlx__p2p_init(struct rlx__p2p *p, uv_loop_t *loop, int rank, int size, const char *job_key,
                  int choice, const char *tcp_ip, const char *unix_path, int cma,
                  struct rlx__card *mine);
/* The cards of every rank, after the exchange (kept by reference). */
int rlx__p2p_start(struct rlx__p2p *p, const struct rlx__card *cards);
/* Post a send or receive. Returns 1 if it completed at once (status set,
 * cb not called), 0 if cb will be called later from the loop. */
int rlx__p2p_send(struct rlx__p2p *p, struct rlx__xfer *x);
int rlx__p2p_recv(struct rlx__p2p *p, struct rlx__xfer *x);
/* Tell peer that we failed operation (comm_id, seq) with err and why:
 * an ABORT frame, sent (or queued until the peer connects) on its own
 * storage. Best effort: a lost peer is skipped. */
void rlx__p2p_abort(struct rlx__p2p *p, int peer, uint32_t comm_id, uint64_t seq, uint8_t kind,
                    int err, const char *reason);
/* Has peer a ready connection? Mark a peer lost (shrink's probe found it
 * dead). Both under the loop lock. */
int rlx__p2p_connected(struct rlx__p2p *p, int peer);
void rlx__p2p_mark_lost(struct rlx__p2p *p, int peer, const char *why);
/* Withdraw a pending transfer (on timeout or failure); cb is not called.
 * A send already being written closes its connection. */
void rlx__p2p_cancel(struct rlx__p2p *p, struct rlx__xfer *x);
/* The transport a peer is reached by ("unix"/"tcp"), and why a lost peer
 * was lost (NULL when it is not). */
const char *rlx__p2p_transport_of(struct rlx__p2p *p, int peer);
const char *rlx__p2p_lost_reason(struct rlx__p2p *p, int peer);
/* Connections that completed the handshake over the job, by transport, and
 * the TCP retransmissions the kernel counted on them (TCP_INFO). Under the
 * loop lock. */
void rlx__p2p_conn_stats(struct rlx__p2p *p, int *nunix, int *ntcp, unsigned long *retrans);
/* Close every handle; the loop must then run until they are closed. */
void rlx__p2p_close(struct rlx__p2p *p);
void rlx__p2p_free(struct rlx__p2p *p);

#endif
