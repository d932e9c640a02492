/* lib/bootstrap, above base only; the transport and the runtime use it
 * (it owns the card and the handshake). Bootstrap: business cards, the rendezvous server (hosted by rlxrun, or by
 * rank 0 when a job is started by hand) and its client, on plain blocking
 * sockets with deadlines. Nothing here uses the runtime's global state, so
 * rlxrun links it too. */
#ifndef RLX_BOOTSTRAP_H
#define RLX_BOOTSTRAP_H

#include <stddef.h>
#include <stdint.h>

#define RLX__CARD_SIZE 288

/* What a rank publishes about itself. */
struct rlx__card {
  uint32_t rank, size;
  uint32_t election_id; /* random; the lowest one leads */
  char host[96];        /* host identity: ranks with equal ones share a host */
  char tcp[64];         /* "ip:port" of its TCP listener */
  char unix_path[112];  /* its Unix socket, "" if none (at most 107 characters travel) */
  uint32_t generation;  /* 0: started with the job; n: admitted by its n-th growth */
};

/* The rank a joining process names before it is admitted (rendezvous
 * handshake and card). */
#define RLX__RANK_JOIN 0xfffffffeu
/* The rank a survivor names when it asks the rendezvous to witness a
 * shrink (rlx__rdv_claim): no card follows, but the claim. */
#define RLX__RANK_CLAIM 0xfffffffdu

void rlx__card_encode(const struct rlx__card *c, uint8_t out[RLX__CARD_SIZE]);
int rlx__card_decode(const uint8_t in[RLX__CARD_SIZE], struct rlx__card *c);

/* ---- blocking sockets with deadlines (sockutil.c); deadlines are
 * rlx__now_ns() values, 0 = none. Return 0 or a negative errno. */
int rlx__sock_connect(const char *hostport, uint64_t deadline, int *fd_out);
/* One attempt, waiting at most timeout_ms for the answer: 0 (connected,
 * *fd_out set), -ECONNREFUSED (nobody listens: a dead process), -ETIMEDOUT
 * (no answer: a silent host, its link cut), or another -errno. A blocking
 * connect() to a host that drops packets waits out the kernel's SYN
 * retries, about two minutes. */
int rlx__sock_connect_within(const char *hostport, int timeout_ms, int *fd_out);
int rlx__sock_listen(const char *hostport, int *fd_out, char *bound, size_t bound_len);
int rlx__sock_read_full(int fd, void *buf, size_t n, uint64_t deadline);
int rlx__sock_write_full(int fd, const void *buf, size_t n, uint64_t deadline);
int rlx__sock_local_ip(int fd, char *ip, size_t len);
uint64_t rlx__bs_now_ns(void);
uint64_t rlx__bs_realtime_ns(void); /* CLOCK_REALTIME, comparable between hosts */

/* ---- interfaces (iface.c): the first IPv4 address of an up interface
 * that spec (NCCL's grammar: "eth,ib", "^lo,docker", "=eth0") admits.
 * 0, or -1 when none does. */
int rlx__iface_ip(const char *spec, char *ip, size_t len);
/* The spec used where RLX_IFACE is unset and a job spans hosts: any up
 * interface but loopback and the container bridges. */
#define RLX__IFACE_DEFAULT "^lo,docker,virbr"

/* ---- the rendezvous server (rendezvous.c) */
struct rlx__rdv_server;
typedef void (*rlx__rdv_log_fn)(const char *msg);
/* Listen on hostport ("127.0.0.1:0" picks a port; the address actually bound
 * is written to bound) and serve one card exchange for nranks ranks on a
 * thread of its own. Strangers and wrong keys are logged through log_fn (may
 * be NULL) and dropped. max_np > 0: the job may grow, and joiners wait
 * here until a member admits them; 0: joiners are refused. */
int rlx__rdv_server_start(const char *hostport, const char *job_key, int nranks, int max_np,
                          rlx__rdv_log_fn log_fn, struct rlx__rdv_server **out, char *bound,
                          size_t bound_len);
void rlx__rdv_server_stop(struct rlx__rdv_server *s);

/* ---- the client side, in a rank (rdv_client.c) */
/* Connect and authenticate; local_ip receives the address this host uses to
 * reach the rendezvous (the one to offer peers). */
int rlx__rdv_connect(const char *hostport, const char *job_key, uint32_t rank, uint64_t deadline,
                     int *fd_out, char *local_ip, size_t ip_len, char *why, size_t why_len);
/* Send our card, receive everyone's (cards[size]); then, if
 * clock_offset_ns is not NULL, measure our realtime clock minus the
 * rendezvous host's into it; closes fd, unless keep_open and it went
 * well (a member of a job that may grow stays connected). */
int rlx__rdv_exchange(int fd, const struct rlx__card *mine, struct rlx__card *cards, int size,
                      uint64_t deadline, int64_t *clock_offset_ns, int keep_open, char *why,
                      size_t why_len);

/* A member's standing connection in a job that may grow. Taking joiners
 * is asked ahead and answered later (rlx__rdv_member_ask, then
 * rlx__rdv_member_answer at a later look), so that no call waits for the
 * rendezvous's round trip. */
struct rlx__rdv_member {
  int fd;          /* -1: none */
  uint8_t *in;     /* bytes read ahead: 'J' updates, an answer */
  size_t have, cap;
  int waiting;     /* joiners waiting, as last told */
  int lost;        /* the rendezvous closed */
  int asked;       /* joiners asked for, no answer read yet (0: none) */
  int discard;     /* answers still to come to asks given back */
  uint8_t *cards;  /* an answer read, not yet taken: ncards cards */
  int ncards, answered;
  uint32_t generation;
};
/* Stay connected after the exchange (fd: the exchange's, not closed). */
int rlx__rdv_member_start(struct rlx__rdv_member *m, int fd);
/* How many joiners wait (reads what the rendezvous told, never blocks). */
int rlx__rdv_member_joiners(struct rlx__rdv_member *m);
/* Ask to take up to max waiting joiners; the answer comes later. */
int rlx__rdv_member_ask(struct rlx__rdv_member *m, uint32_t max);
/* The joiners taken (never blocks): 1 and their cards (*n of them, rank =
 * the job index each was given, generation set; *cards to free), 0 while
 * the answer has not come (or nothing was asked), or a negative errno
 * (the rendezvous is gone: the ask is void). */
int rlx__rdv_member_answer(struct rlx__rdv_member *m, uint32_t *generation, uint8_t **cards,
                           int *n);
/* Hand the joiners taken the block that admits them; or give them back. */
int rlx__rdv_member_welcome(struct rlx__rdv_member *m, const void *blk, size_t len,
                            uint64_t deadline);
/* Give back the joiners taken or asked for (they wait again). */
int rlx__rdv_member_release(struct rlx__rdv_member *m);
void rlx__rdv_member_close(struct rlx__rdv_member *m);
/* The witness of a partition (rlx_comm_shrink's quorum): ask the
 * rendezvous whether the side `side` (a hash of the survivors' set) may go
 * on after the shrink `key`. The first side to claim a key has it; a claim
 * by the same side is granted again, any other refused. Returns 1 granted,
 * 0 refused, or a negative errno when the rendezvous was not reached
 * (why says so). One dial of at most timeout_ms: a cut link is silent. */
int rlx__rdv_claim(const char *hostport, const char *job_key, uint32_t key, uint32_t side,
                   uint32_t rank, int timeout_ms, char *why, size_t why_len);

/* A joiner: send our card (rank RLX__RANK_JOIN) and wait until a member
 * admits us: our job index and the member's block (*blk to free), or a
 * refusal in why. Admitted, fd stays open for rlx__rdv_member_start;
 * else it is closed. */
int rlx__rdv_join(int fd, const struct rlx__card *mine, uint64_t deadline, uint32_t *index,
                  uint8_t **blk, size_t *len, char *why, size_t why_len);

#endif
