/* The rendezvous: every rank connects, authenticates with the job key and
 * sends its card; once all cards are in, each rank gets all of them. The
 * server is one thread polling non-blocking sockets, so a stranger or a
 * slow client cannot stall the others; each client has 10 s to
 * authenticate.
 *
 * A job that may grow (max_np > 0) keeps it for its life. Its ranks stay
 * connected after the exchange ('G') and are told how many joiners wait
 * ('J' count) whenever that changes. A joiner authenticates like any rank
 * and sends a card naming RLX__RANK_JOIN; it waits until a member asks
 * for the waiting ones ('A' max: they get job indices and a generation,
 * the member gets their cards), then gets what the member sends for them
 * ('W' block: the grown communicator), or goes back to waiting if the
 * member gives them up ('R') or its connection closes first.
 *
 * It is also the witness of partitions (rlx_comm_shrink's quorum): a
 * survivor authenticated as RLX__RANK_CLAIM sends (key, side, rank); the
 * first side to claim a key has it, and is answered 'Y' again, any other
 * side 'N'. */
#include <stdatomic.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdarg.h>
#include <unistd.h>
#include "handshake.h"
#include "bootstrap.h"
#include "base/byteorder.h"

#define AUTH_DEADLINE_NS (10ull * 1000000000ull)

/* After the cards a client may ask for the server's clock (CS_CLOCK): each
 * byte it sends is answered with 8 bytes of CLOCK_REALTIME nanoseconds, so
 * a traced rank can measure its offset from the rendezvous host. */
enum client_state {
  CS_HELLO, CS_PROOF, CS_CARD, CS_WAITING, CS_CLOCK,
  CS_MEMBER,     /* a rank of a job that may grow: commands 'A', 'W', 'R' */
  CS_MEMBER_ARG, /* 4 bytes: A's max, or W's length */
  CS_MEMBER_BLK, /* W's block */
  CS_JOINWAIT,   /* a joiner waiting to be admitted */
  CS_ADMITTING,  /* a joiner a member took, waiting for its welcome */
  CS_CLAIM,      /* a survivor's claim: key, side, rank (4 bytes each) */
};

/* Claims remembered: the newest, a ring (a job shrinks a few times). */
#define CLAIMS 64

struct client {
  int fd;
  int state;
  uint8_t in[RLX__CARD_SIZE];
  size_t need, got;
  uint64_t deadline;
  struct rlx__hs hs;
  char addr[64];
  uint64_t serial;   /* unique per connection (slots move when one is dropped) */
  uint8_t cmd;       /* CS_MEMBER_ARG: the command whose argument comes */
  uint8_t *blk;      /* CS_MEMBER_BLK: W's block, need bytes */
  uint64_t admitter; /* CS_ADMITTING: the serial of the member that took it */
  uint32_t index;    /* CS_ADMITTING: the job index it was given */
};

struct rlx__rdv_server {
  int lfd;
  int nranks;
  char job_key[256];
  rlx__rdv_log_fn log_fn;
  pthread_t thread;
  atomic_int stop; /* set by rlx__rdv_server_stop, read by the server thread */
  struct client *clients;
  int nclients, cap;
  uint8_t *cards; /* nranks * RLX__CARD_SIZE */
  uint8_t *have;
  int ncards;
  int max_np;            /* 0: the job does not grow; joiners are refused */
  uint32_t next_index;   /* the next joiner's job index */
  uint32_t generation;   /* admissions so far */
  uint64_t serials;
  int told;              /* the joiner count members were last told, -1: none yet */
  uint32_t claim_key[CLAIMS], claim_side[CLAIMS];
  int nclaims;           /* claims made so far (the ring holds the last CLAIMS) */
};

static void slog(struct rlx__rdv_server *s, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void slog(struct rlx__rdv_server *s, const char *fmt, ...) {
  char msg[512];
  va_list ap;
  if (s->log_fn == NULL)
    return;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof(msg), fmt, ap);
  va_end(ap);
  s->log_fn(msg);
}

/* Joiners a member took go back to waiting (it gave them up, or left). */
static void release(struct rlx__rdv_server *s, uint64_t admitter) {
  for (int i = 0; i < s->nclients; i++)
    if (s->clients[i].state == CS_ADMITTING && s->clients[i].admitter == admitter)
      s->clients[i].state = CS_JOINWAIT;
}

static void drop(struct rlx__rdv_server *s, int i, const char *why) {
  struct client *c = &s->clients[i];
  if (why != NULL)
    slog(s, "rendezvous: dropped connection from %s: %s", c->addr, why);
  if (c->state == CS_MEMBER || c->state == CS_MEMBER_ARG || c->state == CS_MEMBER_BLK)
    release(s, c->serial);
  close(c->fd);
  free(c->blk);
  s->clients[i] = s->clients[--s->nclients];
}

/* Tell client i why it cannot join (in place of the cards it waits for:
 * "RLXN" and the reason), then drop it, so the rank that made the mistake
 * names it, not only rank 0's log. */
static void refuse(struct rlx__rdv_server *s, int i, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void refuse(struct rlx__rdv_server *s, int i, const char *fmt, ...) {
  uint8_t block[RLX__CARD_SIZE];
  char why[RLX__CARD_SIZE - 4];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(why, sizeof(why), fmt, ap);
  va_end(ap);
  memset(block, 0, sizeof(block));
  memcpy(block, "RLXN", 4);
  memcpy(block + 4, why, strlen(why));
  (void)rlx__sock_write_full(s->clients[i].fd, block, sizeof(block),
                             rlx__bs_now_ns() + 1000000000ull);
  drop(s, i, why);
}

static void accept_one(struct rlx__rdv_server *s) {
  struct sockaddr_storage ss;
  socklen_t sl = sizeof(ss);
  int fd = accept4(s->lfd, (struct sockaddr *)&ss, &sl, SOCK_NONBLOCK | SOCK_CLOEXEC), one = 1;
  if (fd < 0)
    return;
  /* small writes back to back (a welcome's head, then its block): without
   * this, Nagle holds the second until the first's delayed ACK, 40 ms */
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  if (s->nclients == s->cap) {
    int cap = s->cap ? s->cap * 2 : 64;
    struct client *nc = realloc(s->clients, (size_t)cap * sizeof(*nc));
    if (nc == NULL) {
      close(fd);
      return;
    }
    s->clients = nc;
    s->cap = cap;
  }
  struct client *c = &s->clients[s->nclients++];
  memset(c, 0, sizeof(*c));
  c->fd = fd;
  c->serial = ++s->serials;
  c->state = CS_HELLO;
  c->need = RLX__HS_HELLO_SIZE;
  c->deadline = rlx__bs_now_ns() + AUTH_DEADLINE_NS;
  {
    char ip[64] = "?";
    struct sockaddr_storage ps;
    socklen_t pl = sizeof(ps);
    if (getpeername(fd, (struct sockaddr *)&ps, &pl) == 0 && ps.ss_family == AF_INET)
      inet_ntop(AF_INET, &((struct sockaddr_in *)&ps)->sin_addr, ip, sizeof(ip));
    snprintf(c->addr, sizeof(c->addr), "%s", ip);
  }
  rlx__hs_init(&c->hs, s->job_key, RLX__HS_ANY, RLX__HS_RENDEZVOUS);
}

static int count_waiting(const struct rlx__rdv_server *s) {
  int n = 0;
  for (int i = 0; i < s->nclients; i++)
    n += s->clients[i].state == CS_JOINWAIT;
  return n;
}

/* 'A' max from member i: take up to max waiting joiners (oldest first),
 * give them job indices and this admission's generation, and answer
 * 'a' m generation, then their m cards. */
static int admit(struct rlx__rdv_server *s, int i, uint32_t max) {
  struct client *m = &s->clients[i];
  int n = 0;
  uint32_t gen = s->generation + 1;
  uint8_t *out = malloc(9 + (size_t)(max < 4096 ? max : 4096) * RLX__CARD_SIZE);
  if (out == NULL) {
    drop(s, i, "no memory");
    return -1;
  }
  for (int k = 0; k < s->nclients && (uint32_t)n < max && n < 4096; k++) {
    struct client *j = &s->clients[k];
    struct rlx__card card;
    if (j->state != CS_JOINWAIT || rlx__card_decode(j->in, &card) != 0)
      continue;
    j->state = CS_ADMITTING;
    j->admitter = m->serial;
    j->index = s->next_index++;
    card.rank = j->index;
    card.size = 0;
    card.generation = gen;
    rlx__card_encode(&card, out + 9 + (size_t)n * RLX__CARD_SIZE);
    n++;
  }
  if (n > 0)
    s->generation = gen;
  out[0] = 'a';
  rlx__put32(out + 1, (uint32_t)n);
  rlx__put32(out + 5, gen);
  int rc = rlx__sock_write_full(m->fd, out, 9 + (size_t)n * RLX__CARD_SIZE,
                                rlx__bs_now_ns() + 1000000000ull);
  free(out);
  if (rc != 0) {
    drop(s, i, "could not answer an admission");
    return -1;
  }
  if (n > 0)
    slog(s, "rendezvous: %d joining rank(s) admitted (generation %u)", n, gen);
  return 0;
}

/* 'W' block from member i: every joiner it took gets "RLXW", its index,
 * the block's length and the block; it is a member now (it says 'G' to
 * stay, as the job's first ranks do after the exchange). */
static void welcome(struct rlx__rdv_server *s, int i, const uint8_t *blk, size_t len) {
  uint64_t admitter = s->clients[i].serial;
  for (int k = s->nclients - 1; k >= 0; k--) {
    struct client *j = &s->clients[k];
    if (j->state != CS_ADMITTING || j->admitter != admitter)
      continue;
    uint8_t head[12];
    uint64_t deadline = rlx__bs_now_ns() + 1000000000ull;
    memcpy(head, "RLXW", 4);
    rlx__put32(head + 4, j->index);
    rlx__put32(head + 8, (uint32_t)len);
    if (rlx__sock_write_full(j->fd, head, sizeof head, deadline) != 0 ||
        rlx__sock_write_full(j->fd, blk, len, deadline) != 0)
      slog(s, "rendezvous: could not welcome the joining rank at %s", j->addr);
    /* (a failed write: its EOF drops it on a later turn; slots must not
     * move while the loop walks them) */
    j->state = CS_CLOCK;
    j->need = 1;
    j->got = 0;
    j->deadline = rlx__bs_now_ns() + AUTH_DEADLINE_NS;
  }
}

/* A member's command, or its argument or block, has arrived. */
static int on_member(struct rlx__rdv_server *s, int i) {
  struct client *c = &s->clients[i];
  c->got = 0;
  if (c->state == CS_MEMBER) {
    if (c->in[0] == 'R') {
      release(s, c->serial);
      return 0;
    }
    if (c->in[0] != 'A' && c->in[0] != 'W') {
      drop(s, i, "unknown command from a member");
      return -1;
    }
    c->cmd = c->in[0];
    c->state = CS_MEMBER_ARG;
    c->need = 4;
    return 0;
  }
  if (c->state == CS_MEMBER_ARG) {
    uint32_t v = rlx__get32(c->in);
    c->state = CS_MEMBER;
    c->need = 1;
    if (c->cmd == 'A')
      return admit(s, i, v);
    if (v == 0 || v > (1u << 24)) {
      drop(s, i, "a welcome of a bad size");
      return -1;
    }
    if ((c->blk = malloc(v)) == NULL) {
      drop(s, i, "no memory");
      return -1;
    }
    c->state = CS_MEMBER_BLK;
    c->need = v;
    return 0;
  }
  /* CS_MEMBER_BLK */
  welcome(s, i, c->blk, c->need);
  free(c->blk);
  c->blk = NULL;
  c->state = CS_MEMBER;
  c->need = 1;
  return 0;
}

/* Members hear how many joiners wait whenever that changes. */
static void tell_members(struct rlx__rdv_server *s) {
  int n = count_waiting(s);
  if (n == s->told)
    return;
  s->told = n;
  uint8_t msg[5] = {'J'};
  rlx__put32(msg + 1, (uint32_t)n);
  for (int i = s->nclients - 1; i >= 0; i--) {
    struct client *c = &s->clients[i];
    if ((c->state == CS_MEMBER || c->state == CS_MEMBER_ARG || c->state == CS_MEMBER_BLK) &&
        rlx__sock_write_full(c->fd, msg, sizeof msg, rlx__bs_now_ns() + 1000000000ull) != 0)
      drop(s, i, "a member does not read");
  }
}

/* A survivor asks whether its side goes on (the file's head says how). */
static void on_claim(struct rlx__rdv_server *s, int i) {
  struct client *c = &s->clients[i];
  uint32_t key = rlx__get32(c->in), side = rlx__get32(c->in + 4), rank = rlx__get32(c->in + 8);
  int k, n = s->nclaims < CLAIMS ? s->nclaims : CLAIMS;
  for (k = 0; k < n && s->claim_key[k] != key; k++)
    ;
  uint8_t yes = 'Y';
  if (k == n) { /* the first claim of this key */
    s->claim_key[s->nclaims % CLAIMS] = key;
    s->claim_side[s->nclaims % CLAIMS] = side;
    s->nclaims++;
    slog(s, "rendezvous: witnessed a shrink (%08x): the side of rank %u (%08x) goes on", key,
         rank, side);
  } else if (s->claim_side[k] != side) {
    yes = 'N';
    slog(s, "rendezvous: refused the side of rank %u (%08x) in a shrink (%08x): another side "
            "(%08x) claimed it first", rank, side, key, s->claim_side[k]);
  }
  (void)rlx__sock_write_full(c->fd, &yes, 1, rlx__bs_now_ns() + 1000000000ull);
  drop(s, i, NULL);
}

/* A whole message has arrived for client i; returns 0, or -1 if dropped. */
static int on_message(struct rlx__rdv_server *s, int i) {
  struct client *c = &s->clients[i];
  uint8_t out[RLX__HS_CHALLENGE_SIZE];
  struct rlx__card card;
  int st;
  switch (c->state) {
  case CS_HELLO:
    if ((st = rlx__hs_server_hello(&c->hs, c->in, out)) != RLX__HS_OK) {
      drop(s, i, rlx__hs_strstatus(st));
      return -1;
    }
    if (rlx__sock_write_full(c->fd, out, sizeof(out), rlx__bs_now_ns() + 1000000000ull) != 0) {
      drop(s, i, "write failed");
      return -1;
    }
    c->state = CS_PROOF;
    c->need = RLX__HS_PROOF_SIZE;
    break;
  case CS_PROOF:
    if ((st = rlx__hs_server_proof(&c->hs, c->in)) != RLX__HS_OK) {
      drop(s, i, rlx__hs_strstatus(st));
      return -1;
    }
    c->state = c->hs.peer == RLX__RANK_CLAIM ? CS_CLAIM : CS_CARD;
    c->need = c->state == CS_CLAIM ? 12 : RLX__CARD_SIZE;
    break;
  case CS_CLAIM:
    on_claim(s, i);
    return -1; /* answered and dropped */
  case CS_CARD:
    if (rlx__card_decode(c->in, &card) != 0 || card.rank != c->hs.peer) {
      drop(s, i, "malformed card");
      return -1;
    }
    if (card.rank == RLX__RANK_JOIN) {
      if (s->max_np <= 0) {
        refuse(s, i, "the job does not take new ranks (it was started without rlxrun "
                     "--max-np, or RLX_MAX_NP)");
        return -1;
      }
      slog(s, "rendezvous: a rank from %s asks to join the job", c->addr);
      c->state = CS_JOINWAIT;
      c->deadline = 0;
      c->need = 0;
      break;
    }
    if (card.size != (uint32_t)s->nranks) {
      refuse(s, i, "rank %u has RLX_SIZE=%u, but the job (rank 0's RLX_SIZE) has %d ranks",
             card.rank, card.size, s->nranks);
      return -1;
    }
    if (card.rank >= (uint32_t)s->nranks) {
      refuse(s, i, "RLX_RANK=%u is not a rank of a job of %d", card.rank, s->nranks);
      return -1;
    }
    if (s->have[card.rank]) {
      refuse(s, i, "rank %u has joined already: two processes were started with RLX_RANK=%u",
             card.rank, card.rank);
      return -1;
    }
    memcpy(s->cards + (size_t)card.rank * RLX__CARD_SIZE, c->in, RLX__CARD_SIZE);
    s->have[card.rank] = 1;
    s->ncards++;
    c->state = CS_WAITING;
    c->deadline = 0;
    c->need = 0;
    break;
  case CS_CLOCK: {
    uint8_t now[8];
    if (c->in[0] == 'G' && s->max_np > 0) { /* stays, to hear of joiners */
      c->state = CS_MEMBER;
      c->deadline = 0;
      s->told = -1; /* tell everyone again, this one too */
      break;
    }
    uint64_t t = rlx__bs_realtime_ns();
    for (int b = 0; b < 8; b++)
      now[b] = (uint8_t)(t >> (8 * b));
    if (rlx__sock_write_full(c->fd, now, sizeof(now), rlx__bs_now_ns() + 1000000000ull) != 0) {
      drop(s, i, NULL);
      return -1;
    }
    break;
  }
  case CS_MEMBER:
  case CS_MEMBER_ARG:
  case CS_MEMBER_BLK:
    return on_member(s, i);
  default:
    break;
  }
  c->got = 0;
  return 0;
}

static void broadcast_cards(struct rlx__rdv_server *s) {
  size_t len = (size_t)s->nranks * RLX__CARD_SIZE;
  uint64_t deadline = rlx__bs_now_ns() + 30ull * 1000000000ull;
  for (int i = s->nclients - 1; i >= 0; i--) {
    if (s->clients[i].state != CS_WAITING)
      continue;
    if (rlx__sock_write_full(s->clients[i].fd, s->cards, len, deadline) != 0) {
      slog(s, "rendezvous: could not send the cards to %s", s->clients[i].addr);
      drop(s, i, NULL);
      continue;
    }
    /* The client closes now, or first reads our clock a few times. */
    s->clients[i].state = CS_CLOCK;
    s->clients[i].need = 1;
    s->clients[i].got = 0;
    s->clients[i].deadline = rlx__bs_now_ns() + AUTH_DEADLINE_NS;
  }
}

static void *serve(void *arg) {
  struct rlx__rdv_server *s = arg;
  struct pollfd *pfds = NULL;
  int pcap = 0;
  while (!s->stop) {
    if (pcap < s->nclients + 1) {
      pcap = (s->nclients + 1) * 2;
      struct pollfd *np = realloc(pfds, (size_t)pcap * sizeof(*np));
      if (np == NULL)
        break;
      pfds = np;
    }
    pfds[0].fd = s->lfd;
    pfds[0].events = POLLIN;
    for (int i = 0; i < s->nclients; i++) {
      pfds[i + 1].fd = s->clients[i].fd;
      pfds[i + 1].events = POLLIN;
      pfds[i + 1].revents = 0;
    }
    int n = s->nclients;
    if (poll(pfds, (nfds_t)n + 1, 100) < 0 && errno != EINTR)
      break;
    uint64_t now = rlx__bs_now_ns();
    /* Walk clients backwards: drop() moves the last one into the hole. */
    for (int i = n - 1; i >= 0; i--) {
      struct client *c = &s->clients[i];
      if (pfds[i + 1].revents != 0) {
        if (c->need == 0) { /* waiting: any byte or EOF ends it */
          char b;
          ssize_t r = read(c->fd, &b, 1);
          if (r < 0 && (errno == EAGAIN || errno == EINTR))
            continue;
          if (c->state == CS_WAITING)
            slog(s, "rendezvous: rank %u left before the exchange completed", c->hs.peer);
          else
            slog(s, "rendezvous: the joining rank at %s left before it was admitted", c->addr);
          drop(s, i, NULL);
          continue;
        }
        uint8_t *dst = c->state == CS_MEMBER_BLK ? c->blk : c->in;
        ssize_t got = read(c->fd, dst + c->got, c->need - c->got);
        if (got <= 0) {
          if (got < 0 && (errno == EAGAIN || errno == EINTR))
            continue;
          drop(s, i, c->state == CS_CLOCK || c->state >= CS_MEMBER ? NULL
                     : c->state == CS_HELLO ? "closed before the handshake"
                     : c->state == CS_PROOF ? "closed in the handshake: it could not verify "
                                              "our proof (a wrong job key?)"
                                            : "closed early");
          continue;
        }
        c->got += (size_t)got;
        if (c->got == c->need && on_message(s, i) != 0)
          continue;
      }
      if (c->deadline != 0 && now > c->deadline)
        drop(s, i, c->state == CS_CLOCK ? NULL : "did not authenticate within 10 s");
    }
    if (pfds[0].revents & POLLIN)
      accept_one(s);
    if (s->ncards == s->nranks) {
      broadcast_cards(s);
      /* A new exchange starts from scratch (a restarted job). */
      memset(s->have, 0, (size_t)s->nranks);
      s->ncards = 0;
    }
    if (s->max_np > 0)
      tell_members(s);
  }
  free(pfds);
  return NULL;
}

int rlx__rdv_server_start(const char *hostport, const char *job_key, int nranks, int max_np,
                          rlx__rdv_log_fn log_fn, struct rlx__rdv_server **out, char *bound,
                          size_t bound_len) {
  struct rlx__rdv_server *s = calloc(1, sizeof(*s));
  int rc;
  if (s == NULL)
    return -ENOMEM;
  s->nranks = nranks;
  s->max_np = max_np;
  s->next_index = (uint32_t)nranks;
  s->told = -1;
  s->log_fn = log_fn;
  snprintf(s->job_key, sizeof(s->job_key), "%s", job_key);
  s->cards = calloc((size_t)nranks, RLX__CARD_SIZE);
  s->have = calloc((size_t)nranks, 1);
  if (s->cards == NULL || s->have == NULL) {
    rc = -ENOMEM;
    goto fail;
  }
  if ((rc = rlx__sock_listen(hostport, &s->lfd, bound, bound_len)) != 0)
    goto fail;
  fcntl(s->lfd, F_SETFL, fcntl(s->lfd, F_GETFL) | O_NONBLOCK);
  if ((rc = pthread_create(&s->thread, NULL, serve, s)) != 0) {
    close(s->lfd);
    rc = -rc;
    goto fail;
  }
  *out = s;
  return 0;
fail:
  free(s->cards);
  free(s->have);
  free(s);
  return rc;
}

void rlx__rdv_server_stop(struct rlx__rdv_server *s) {
  if (s == NULL)
    return;
  s->stop = 1;
  pthread_join(s->thread, NULL);
  for (int i = 0; i < s->nclients; i++) {
    close(s->clients[i].fd);
    free(s->clients[i].blk);
  }
  close(s->lfd);
  free(s->clients);
  free(s->cards);
  free(s->have);
  free(s);
}

