/* The rendezvous: every rank connects, authenticates with the job key and
 * sends its card; once all cards are in, each rank gets all of them. The
 * server is one thread polling non-blocking sockets, so a stranger or a
 * slow client cannot stall the others; each client has 10 s to
 * authenticate. */
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
#include <stdarg.h>
#include <unistd.h>
#include "../transport/handshake.h"
#include "bootstrap.h"

#define AUTH_DEADLINE_NS (10ull * 1000000000ull)

/* After the cards a client may ask for the server's clock (CS_CLOCK): each
 * byte it sends is answered with 8 bytes of CLOCK_REALTIME nanoseconds, so
 * a traced rank can measure its offset from the rendezvous host. */
enum client_state { CS_HELLO, CS_PROOF, CS_CARD, CS_WAITING, CS_CLOCK };

struct client {
  int fd;
  int state;
  uint8_t in[RLX__CARD_SIZE];
  size_t need, got;
  uint64_t deadline;
  struct rlx__hs hs;
  char addr[64];
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

static void drop(struct rlx__rdv_server *s, int i, const char *why) {
  struct client *c = &s->clients[i];
  if (why != NULL)
    slog(s, "rendezvous: dropped connection from %s: %s", c->addr, why);
  close(c->fd);
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
  int fd = accept4(s->lfd, (struct sockaddr *)&ss, &sl, SOCK_NONBLOCK | SOCK_CLOEXEC);
  if (fd < 0)
    return;
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
    c->state = CS_CARD;
    c->need = RLX__CARD_SIZE;
    break;
  case CS_CARD:
    if (rlx__card_decode(c->in, &card) != 0 || card.rank != c->hs.peer) {
      drop(s, i, "malformed card");
      return -1;
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
    uint64_t t = rlx__bs_realtime_ns();
    for (int b = 0; b < 8; b++)
      now[b] = (uint8_t)(t >> (8 * b));
    if (rlx__sock_write_full(c->fd, now, sizeof(now), rlx__bs_now_ns() + 1000000000ull) != 0) {
      drop(s, i, NULL);
      return -1;
    }
    break;
  }
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
        if (c->need == 0) { /* waiting for the others: any byte or EOF ends it */
          char b;
          if (read(c->fd, &b, 1) <= 0) {
            slog(s, "rendezvous: rank %u left before the exchange completed", c->hs.peer);
            drop(s, i, NULL);
          }
          continue;
        }
        ssize_t got = read(c->fd, c->in + c->got, c->need - c->got);
        if (got <= 0) {
          if (got < 0 && (errno == EAGAIN || errno == EINTR))
            continue;
          drop(s, i, c->state == CS_CLOCK  ? NULL
                     : c->state == CS_HELLO ? "closed before the handshake"
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
  }
  free(pfds);
  return NULL;
}

int rlx__rdv_server_start(const char *hostport, const char *job_key, int nranks,
                          rlx__rdv_log_fn log_fn, struct rlx__rdv_server **out, char *bound,
                          size_t bound_len) {
  struct rlx__rdv_server *s = calloc(1, sizeof(*s));
  int rc;
  if (s == NULL)
    return -ENOMEM;
  s->nranks = nranks;
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
  for (int i = 0; i < s->nclients; i++)
    close(s->clients[i].fd);
  close(s->lfd);
  free(s->clients);
  free(s->cards);
  free(s->have);
  free(s);
}

/* ---- client --------------------------------------------------------------- */

int rlx__rdv_connect(const char *hostport, const char *job_key, uint32_t rank, uint64_t deadline,
                     int *fd_out, char *local_ip, size_t ip_len, char *why, size_t why_len) {
  struct rlx__hs hs;
  uint8_t hello[RLX__HS_HELLO_SIZE], chal[RLX__HS_CHALLENGE_SIZE], proof[RLX__HS_PROOF_SIZE];
  int fd, rc, st;
  uint64_t t0 = rlx__bs_now_ns();
  if ((rc = rlx__sock_connect(hostport, deadline, &fd)) != 0) {
    snprintf(why, why_len,
             "cannot connect to the rendezvous at %s (RLX_RENDEZVOUS), tried for %.1f s "
             "(RLX_INIT_TIMEOUT): %s",
             hostport, (double)(rlx__bs_now_ns() - t0) / 1e9, strerror(-rc));
    return rc;
  }
  rlx__hs_init(&hs, job_key, rank, RLX__HS_RENDEZVOUS);
  rlx__hs_client_hello(&hs, RLX__HS_ANY, hello);
  if ((rc = rlx__sock_write_full(fd, hello, sizeof(hello), deadline)) != 0 ||
      (rc = rlx__sock_read_full(fd, chal, sizeof(chal), deadline)) != 0) {
    snprintf(why, why_len, "rendezvous at %s: handshake failed: %s (is RLX_JOB_KEY the same on every rank?)",
             hostport, strerror(-rc));
    close(fd);
    return rc;
  }
  if ((st = rlx__hs_client_challenge(&hs, chal, proof)) != RLX__HS_OK) {
    snprintf(why, why_len, "rendezvous at %s did not prove the job key: %s", hostport,
             rlx__hs_strstatus(st));
    close(fd);
    return -EACCES;
  }
  if ((rc = rlx__sock_write_full(fd, proof, sizeof(proof), deadline)) != 0) {
    snprintf(why, why_len, "rendezvous at %s: %s", hostport, strerror(-rc));
    close(fd);
    return rc;
  }
  rlx__sock_local_ip(fd, local_ip, ip_len);
  *fd_out = fd;
  return 0;
}

/* NTP's estimate from the exchange with the shortest round trip: our clock
 * minus the server's. An offset within half that round trip cannot be told
 * from zero (as on one host), and is taken as zero. */
static void measure_offset(int fd, uint64_t deadline, int64_t *offset_ns) {
  int64_t best_rtt = -1, best = 0;
  for (int k = 0; k < 8; k++) {
    uint8_t q = 'T', a[8];
    uint64_t t0 = rlx__bs_realtime_ns();
    if (rlx__sock_write_full(fd, &q, 1, deadline) != 0 ||
        rlx__sock_read_full(fd, a, sizeof(a), deadline) != 0)
      break;
    uint64_t t1 = rlx__bs_realtime_ns(), ts = 0;
    for (int b = 0; b < 8; b++)
      ts |= (uint64_t)a[b] << (8 * b);
    int64_t rtt = (int64_t)(t1 - t0);
    if (best_rtt < 0 || rtt < best_rtt) {
      best_rtt = rtt;
      best = (int64_t)(t0 / 2 + t1 / 2) - (int64_t)ts;
    }
  }
  *offset_ns = best_rtt >= 0 && (best > best_rtt / 2 || best < -best_rtt / 2) ? best : 0;
}

int rlx__rdv_exchange(int fd, const struct rlx__card *mine, struct rlx__card *cards, int size,
                      uint64_t deadline, int64_t *clock_offset_ns, char *why, size_t why_len) {
  uint8_t buf[RLX__CARD_SIZE];
  uint8_t *all = malloc((size_t)size * RLX__CARD_SIZE);
  int rc;
  if (all == NULL) {
    close(fd);
    return -ENOMEM;
  }
  rlx__card_encode(mine, buf);
  /* the first card, or the rendezvous's reason for refusing us */
  if ((rc = rlx__sock_write_full(fd, buf, sizeof(buf), deadline)) != 0 ||
      (rc = rlx__sock_read_full(fd, all, RLX__CARD_SIZE, deadline)) != 0 ||
      (memcmp(all, "RLXN", 4) != 0 &&
       (rc = rlx__sock_read_full(fd, all + RLX__CARD_SIZE, (size_t)(size - 1) * RLX__CARD_SIZE,
                                 deadline)) != 0)) {
    snprintf(why, why_len, "card exchange failed: %s%s", strerror(-rc),
             rc == -ETIMEDOUT ? " (not every rank reached the rendezvous within RLX_INIT_TIMEOUT)" : "");
    goto out;
  }
  if (memcmp(all, "RLXN", 4) == 0) {
    all[RLX__CARD_SIZE - 1] = 0;
    snprintf(why, why_len, "the rendezvous refused this rank: %s", (const char *)all + 4);
    rc = -EPROTO;
    goto out;
  }
  for (int r = 0; r < size; r++) {
    if (rlx__card_decode(all + (size_t)r * RLX__CARD_SIZE, &cards[r]) != 0 ||
        cards[r].rank != (uint32_t)r) {
      snprintf(why, why_len, "rendezvous sent a malformed card for rank %d", r);
      rc = -EPROTO;
      goto out;
    }
  }
  if (clock_offset_ns != NULL)
    measure_offset(fd, deadline, clock_offset_ns);
out:
  free(all);
  close(fd);
  return rc;
}
