/* The rendezvous's client side, in a rank: connect and authenticate, the
 * card exchange (and the clock offset), and in a job that may grow, the
 * member's standing connection (how many joiners wait, taking them,
 * welcoming them) and a joiner's wait for its admission. Blocking sockets
 * with deadlines; the caller serialises use of one member connection. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <unistd.h>
#include "handshake.h"
#include "bootstrap.h"
#include "base/byteorder.h"

/* The handshake on a connected fd: we prove the job key as `rank`, the
 * rendezvous proves it back. Closes fd on failure. */
static int authenticate(int fd, const char *hostport, const char *job_key, uint32_t rank,
                        uint64_t deadline, char *why, size_t why_len) {
  struct rlx__hs hs;
  uint8_t hello[RLX__HS_HELLO_SIZE], chal[RLX__HS_CHALLENGE_SIZE], proof[RLX__HS_PROOF_SIZE];
  int rc, st;
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
  return 0;
}

int rlx__rdv_connect(const char *hostport, const char *job_key, uint32_t rank, uint64_t deadline,
                     int *fd_out, char *local_ip, size_t ip_len, char *why, size_t why_len) {
  int fd, rc;
  uint64_t t0 = rlx__bs_now_ns();
  if ((rc = rlx__sock_connect(hostport, deadline, &fd)) != 0) {
    snprintf(why, why_len,
             "cannot connect to the rendezvous at %s (RLX_RENDEZVOUS), tried for %.1f s "
             "(RLX_INIT_TIMEOUT): %s",
             hostport, (double)(rlx__bs_now_ns() - t0) / 1e9, strerror(-rc));
    return rc;
  }
  if ((rc = authenticate(fd, hostport, job_key, rank, deadline, why, why_len)) != 0)
    return rc;
  rlx__sock_local_ip(fd, local_ip, ip_len);
  *fd_out = fd;
  return 0;
}

int rlx__rdv_claim(const char *hostport, const char *job_key, uint32_t key, uint32_t side,
                   uint32_t rank, int timeout_ms, char *why, size_t why_len) {
  int fd = -1, rc;
  uint64_t deadline = rlx__bs_now_ns() + (uint64_t)timeout_ms * 1000000ull;
  if ((rc = rlx__sock_connect_within(hostport, timeout_ms, &fd)) != 0) {
    snprintf(why, why_len, "cannot reach the rendezvous at %s: %s", hostport, strerror(-rc));
    return rc;
  }
  int one = 1; /* the proof and the claim go out at once, not a delayed ACK apart */
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  if ((rc = authenticate(fd, hostport, job_key, RLX__RANK_CLAIM, deadline, why, why_len)) != 0)
    return rc;
  uint8_t claim[12], answer;
  rlx__put32(claim, key);
  rlx__put32(claim + 4, side);
  rlx__put32(claim + 8, rank);
  if ((rc = rlx__sock_write_full(fd, claim, sizeof claim, deadline)) != 0 ||
      (rc = rlx__sock_read_full(fd, &answer, 1, deadline)) != 0) {
    snprintf(why, why_len, "the rendezvous at %s did not answer: %s", hostport, strerror(-rc));
    close(fd);
    return rc;
  }
  close(fd);
  if (answer != 'Y' && answer != 'N') {
    snprintf(why, why_len, "the rendezvous at %s answered a claim with %#x", hostport, answer);
    return -EPROTO;
  }
  return answer == 'Y';
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
                      uint64_t deadline, int64_t *clock_offset_ns, int keep_open, char *why,
                      size_t why_len) {
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
  if (rc != 0 || !keep_open)
    close(fd);
  return rc;
}

/* ---- a member of a job that may grow ---------------------------------------- */

int rlx__rdv_member_start(struct rlx__rdv_member *m, int fd) {
  memset(m, 0, sizeof(*m));
  m->fd = fd;
  uint8_t g = 'G';
  return rlx__sock_write_full(fd, &g, 1, rlx__bs_now_ns() + 1000000000ull);
}

/* The rendezvous is gone (or spoke out of turn): no joiner can reach us
 * any more, and an ask is void. */
static void lose(struct rlx__rdv_member *m) {
  m->lost = 1;
  m->waiting = 0;
  m->asked = 0;
}

/* Read what has come (never blocks) and take every whole message from
 * the front: 'J' count, 'a' k generation + k cards. 0, or -1 once lost. */
static int pump(struct rlx__rdv_member *m) {
  if (m->fd < 0 || m->lost)
    return -1;
  for (;;) {
    if (m->cap - m->have < 4096) {
      size_t cap = m->cap ? 2 * m->cap : 8192;
      uint8_t *in = realloc(m->in, cap);
      if (in == NULL)
        break; /* (read the rest at a later look) */
      m->in = in;
      m->cap = cap;
    }
    ssize_t got = recv(m->fd, m->in + m->have, m->cap - m->have, MSG_DONTWAIT);
    if (got > 0) {
      m->have += (size_t)got;
      continue;
    }
    if (got == 0 || (errno != EINTR && errno != EAGAIN)) {
      lose(m);
      return -1;
    }
    if (errno == EAGAIN)
      break;
  }
  size_t at = 0;
  while (m->have - at >= 5) {
    const uint8_t *p = m->in + at;
    if (p[0] == 'J') {
      m->waiting = (int)rlx__get32(p + 1);
      at += 5;
      continue;
    }
    if (p[0] != 'a' || m->have - at < 9) {
      if (p[0] != 'a')
        lose(m);
      break;
    }
    uint32_t k = rlx__get32(p + 1);
    if (k > (1u << 16)) {
      lose(m);
      break;
    }
    size_t len = 9 + (size_t)k * RLX__CARD_SIZE;
    if (m->have - at < len)
      break;
    if (m->discard > 0) { /* an ask given back: the rendezvous released them */
      m->discard--;
    } else if (m->asked > 0 && !m->answered && (k == 0 || (m->cards = malloc(len - 9)) != NULL)) {
      if (k > 0)
        memcpy(m->cards, p + 9, len - 9);
      m->ncards = (int)k;
      m->generation = rlx__get32(p + 5);
      m->answered = 1;
      m->asked = 0;
    } else if (m->asked > 0 && !m->answered) {
      break; /* (no memory: try again at a later look) */
    } else {
      lose(m); /* an answer nobody asked for */
      break;
    }
    at += len;
  }
  memmove(m->in, m->in + at, m->have - at);
  m->have -= at;
  return m->lost ? -1 : 0;
}

int rlx__rdv_member_joiners(struct rlx__rdv_member *m) {
  (void)pump(m);
  return m->lost ? 0 : m->waiting;
}

int rlx__rdv_member_ask(struct rlx__rdv_member *m, uint32_t max) {
  uint8_t req[5] = {'A'};
  if (m->fd < 0 || m->lost)
    return -EPIPE;
  if (m->asked > 0 || m->answered)
    return -EBUSY;
  rlx__put32(req + 1, max);
  int rc = rlx__sock_write_full(m->fd, req, sizeof req, rlx__bs_now_ns() + 1000000000ull);
  if (rc == 0)
    m->asked = (int)max;
  return rc;
}

int rlx__rdv_member_answer(struct rlx__rdv_member *m, uint32_t *generation, uint8_t **cards,
                           int *n) {
  *cards = NULL;
  *n = 0;
  if (!m->answered && m->asked > 0)
    (void)pump(m);
  if (!m->answered)
    return m->lost ? -EPIPE : 0;
  *cards = m->cards;
  *n = m->ncards;
  *generation = m->generation;
  m->cards = NULL;
  m->ncards = 0;
  m->answered = 0;
  return 1;
}

int rlx__rdv_member_welcome(struct rlx__rdv_member *m, const void *blk, size_t len,
                            uint64_t deadline) {
  /* one write: each wakes the rendezvous, whose host may be this rank's */
  uint8_t *msg = malloc(5 + len);
  if (msg == NULL)
    return -ENOMEM;
  msg[0] = 'W';
  rlx__put32(msg + 1, (uint32_t)len);
  memcpy(msg + 5, blk, len);
  int rc = rlx__sock_write_full(m->fd, msg, 5 + len, deadline);
  free(msg);
  return rc;
}

int rlx__rdv_member_release(struct rlx__rdv_member *m) {
  uint8_t r = 'R';
  /* (an answer still to come is read and dropped; one read, untaken, freed) */
  if (m->asked > 0)
    m->discard++;
  m->asked = 0;
  free(m->cards);
  m->cards = NULL;
  m->answered = 0;
  return rlx__sock_write_full(m->fd, &r, 1, rlx__bs_now_ns() + 1000000000ull);
}

void rlx__rdv_member_close(struct rlx__rdv_member *m) {
  if (m->fd >= 0)
    close(m->fd);
  m->fd = -1;
  free(m->in);
  free(m->cards);
  m->in = m->cards = NULL;
  m->have = m->cap = 0;
  m->answered = m->asked = 0;
}

/* ---- a joiner ------------------------------------------------------------------ */

int rlx__rdv_join(int fd, const struct rlx__card *mine, uint64_t deadline, uint32_t *index,
                  uint8_t **blk, size_t *len, char *why, size_t why_len) {
  uint8_t card[RLX__CARD_SIZE], head[12];
  int rc;
  *blk = NULL;
  rlx__card_encode(mine, card);
  if ((rc = rlx__sock_write_full(fd, card, sizeof card, deadline)) != 0 ||
      (rc = rlx__sock_read_full(fd, head, sizeof head, deadline)) != 0) {
    snprintf(why, why_len, "waiting to be admitted to the job: %s%s", strerror(-rc),
             rc == -ETIMEDOUT ? " (the job did not call rlx_comm_grow within RLX_INIT_TIMEOUT)"
             : rc == -ECONNRESET ? " (the rendezvous closed: the job ended?)" : "");
    goto out;
  }
  if (memcmp(head, "RLXN", 4) == 0) {
    memcpy(card, head, sizeof head);
    (void)rlx__sock_read_full(fd, card + sizeof head, sizeof card - sizeof head, deadline);
    card[RLX__CARD_SIZE - 1] = 0;
    snprintf(why, why_len, "the rendezvous refused this rank: %s", (const char *)card + 4);
    rc = -EPROTO;
    goto out;
  }
  *index = rlx__get32(head + 4);
  *len = rlx__get32(head + 8);
  if (memcmp(head, "RLXW", 4) != 0 || *len == 0 || *len > (1u << 24) ||
      (*blk = malloc(*len)) == NULL) {
    snprintf(why, why_len, "the rendezvous sent a malformed welcome");
    rc = -EPROTO;
    goto out;
  }
  if ((rc = rlx__sock_read_full(fd, *blk, *len, deadline)) != 0) {
    snprintf(why, why_len, "reading the welcome: %s", strerror(-rc));
    free(*blk);
    *blk = NULL;
  }
out:
  if (rc != 0)
    close(fd);
  return rc;
}
