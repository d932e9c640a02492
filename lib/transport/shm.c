/* The shm transport: rings in shared memory under a Unix-socket
 * connection (its control channel: the unix table's reach, card field,
 * listen, dial and accept). Once two ranks of one host have
 * authenticated, the dialer's last handshake bytes carry a
 * memfd (SCM_RIGHTS) holding a ring each way, and from then on every frame
 * between them (DATA, by-reference descriptors, ACK, PING, ABORT) goes
 * through the rings: a memcpy, no syscall, read by whoever drives the loop
 * (rlx__shm_progress, called by the engine between its libuv polls). The
 * socket stays as the control channel: a process that dies closes it,
 * which is how its peers learn (after reading what it left in the ring),
 * and a reader that is about to sleep in poll() says so in the ring, so
 * the writer rings it with one byte on the socket; a writer that found a
 * ring full is rung the same way when room comes.
 *
 * No CRC on frames that cross shared memory: the bytes never leave this
 * host's RAM, and a peer that wanted to corrupt them could write our
 * memory anyway; the headers are still checked field by field. */
#include <errno.h>
#include <fcntl.h>
#include <unistd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <rlxcoll/errors.h>
#include "base/fence.h"
#include "base/internal.h"
#include "base/tuning.h"
#include "p2p_internal.h"

/* A frame that did not fit in the ring: what is left of it. */
struct shm_wait {
  struct rlx__list link;
  struct rlx__xfer *x; /* the caller's frame, done once all of it is in; NULL: a copy */
  const uint8_t *part[2];
  size_t len[2], off;
  uint8_t copy[RLX__FRAME_HDR_SIZE];
};

static void ring_doorbell(struct rlx__p2p_conn *c) {
  uv_buf_t b = uv_buf_init("", 1);
  /* EAGAIN: the socket holds unread doorbells, so the peer wakes anyway; an
   * error: the end of the stream tells us the rest */
  (void)uv_try_write(&c->h.stream, &b, 1);
}

/* The rings' size: by how many ranks this host runs (base/tuning.h). */
static size_t ring_bytes(const struct rlx__p2p *p) {
  int here = 0;
  for (int i = 0; p->cards != NULL && i < p->size; i++)
    here += strcmp(p->cards[i].host, p->cards[p->rank].host) == 0;
  return here <= RLX__SHM_RING_BIG_RANKS ? RLX__SHM_RING_BYTES : RLX__SHM_RING_BYTES_MANY;
}

/* The table's offer: a new segment goes with the handshake's last bytes
 * (nothing goes when it cannot be made: the connection stays on the
 * socket, and says why at RLX_LOG=debug). */
static long shm_offer(struct rlx__p2p_conn *c, const uint8_t *bytes, size_t len) {
  uv_os_fd_t fd;
  struct rlx__shm_seg *s;
  if (uv_stream_get_write_queue_size(&c->h.stream) != 0 || uv_fileno(&c->h.handle, &fd) != 0 ||
      (s = calloc(1, sizeof(*s))) == NULL)
    return 0;
  size_t ring = ring_bytes(c->p);
  int rc = rlx__shm_seg_create(s, ring);
  long n = rc == 0 ? rlx__shm_seg_send(s, fd, bytes, len) : rc;
  if (n <= 0) {
    rlx__debug("no shared memory with rank %d: %s", c->peer, strerror(n == 0 ? EIO : (int)-n));
    if (rc == 0)
      rlx__shm_seg_close(s);
    free(s);
    return 0;
  }
  rlx__debug("shared memory with rank %d: rings of %zu KiB each way", c->peer, ring >> 10);
  close(s->memfd); /* the peer holds it now; the mapping is all we keep */
  s->memfd = -1;
  c->shm = s;
  rlx__list_init(&c->shm_out);
  return n;
}

static void free_handle(uv_handle_t *h) { free(h); }

/* The oldest descriptor that came with the connection's bytes: ours to
 * keep (a duplicate; libuv's copy is closed), or -errno (-EAGAIN: none). */
static int take_fd(struct rlx__p2p_conn *c) {
  if (c->h.handle.type != UV_NAMED_PIPE || uv_pipe_pending_count(&c->h.pipe) == 0)
    return -EAGAIN;
  /* libuv keeps a received descriptor for uv_accept; a pipe handle takes
   * any descriptor, and we keep a duplicate of it. */
  uv_pipe_t *tmp = malloc(sizeof(*tmp));
  uv_os_fd_t fd = -1;
  int dupfd = -EBADF;
  if (tmp == NULL)
    return -ENOMEM;
  uv_pipe_init(c->p->loop, tmp, 0);
  if (uv_accept(&c->h.stream, (uv_stream_t *)tmp) == 0 && uv_fileno((uv_handle_t *)tmp, &fd) == 0)
    if ((dupfd = fcntl(fd, F_DUPFD_CLOEXEC, 0)) < 0)
      dupfd = -errno;
  uv_close((uv_handle_t *)tmp, free_handle);
  return dupfd;
}

/* The table's take_offer: map the segment that came with the proof. A
 * shortage of ours (descriptors, memory) leaves the pair on the socket:
 * 0, as when the kernel dropped the descriptor on its way in. */
static int shm_take_offer(struct rlx__p2p_conn *c) {
  int dupfd = take_fd(c);
  if (dupfd == -EAGAIN)
    return 0;
  /* uv_accept stopped reading the connection; conn_ready starts it again */
  struct rlx__shm_seg *s = calloc(1, sizeof(*s));
  int rc = dupfd < 0 ? dupfd : s == NULL ? -ENOMEM : rlx__shm_seg_map(s, dupfd);
  if (rc != 0) {
    if (dupfd >= 0 && s == NULL)
      close(dupfd);
    free(s);
    if (rc == -EMFILE || rc == -ENFILE || rc == -ENOMEM) {
      rlx__debug("cannot take rank %d's shared segment: %s", c->peer, strerror(-rc));
      return 0;
    }
    return rlx__err(RLX_ERR_PEER_LOST, "rank %d sent a shared segment we cannot use: %s", c->peer,
                    rc == -EPROTO ? "not a sealed memfd of sane rings" : strerror(-rc));
  }
  c->shm = s;
  rlx__list_init(&c->shm_out);
  return 1;
}

/* ---- writing ------------------------------------------------------------------ */

/* Copy what fits of w into the ring; 1 when all of it is in. */
static int put_some(struct rlx__p2p_conn *c, struct shm_wait *w) {
  struct iovec iov[2];
  int n = 0;
  size_t skip = w->off;
  for (int i = 0; i < 2; i++) {
    if (skip >= w->len[i]) {
      skip -= w->len[i];
      continue;
    }
    iov[n].iov_base = (void *)(w->part[i] + skip);
    iov[n++].iov_len = w->len[i] - skip;
    skip = 0;
  }
  size_t k = n ? rlx__shm_ring_write(&c->shm->out, iov, n) : 0;
  w->off += k;
  if (k && rlx__shm_ring_wake_needed(&c->shm->out))
    ring_doorbell(c);
  return w->off == w->len[0] + w->len[1];
}

/* Put a frame in the out ring: 1 when all of it is in, 0 when the rest
 * waits for room (x, when not NULL, is then done through rlx__write_done;
 * a control frame is copied), -1 with no memory to wait. */
static int put(struct rlx__p2p_conn *c, struct rlx__xfer *x, const uint8_t *hdr,
               const void *payload, size_t plen) {
  struct shm_wait w = {.x = x, .part = {hdr, payload}, .len = {RLX__FRAME_HDR_SIZE, plen}};
  c->last_tx = rlx__tick_ns();
  /* Never completes x through its callback from here: the caller is
   * still posting it (a collective's round), and learns from the return. */
  while (rlx__list_empty(&c->shm_out)) {
    if (put_some(c, &w))
      return 1;
    if (!rlx__shm_ring_want_room(&c->shm->out))
      break; /* the reader rings us when it has made room */
  }
  struct shm_wait *q = malloc(sizeof(*q));
  if (q == NULL)
    return -1;
  *q = w;
  if (x == NULL) { /* a control frame on the caller's stack: keep a copy */
    memcpy(q->copy, hdr, RLX__FRAME_HDR_SIZE);
    q->part[0] = q->copy;
  } else {
    x->writing = 1;
  }
  rlx__list_push(&c->shm_out, &q->link);
  return 0;
}

/* Move waiting frames into the out ring; the bytes moved. */
static size_t flush(struct rlx__p2p_conn *c) {
  size_t moved = 0;
  while (c->state == C_READY && !rlx__list_empty(&c->shm_out)) {
    struct shm_wait *w = rlx__container_of(c->shm_out.next, struct shm_wait, link);
    size_t before = w->off;
    int whole = put_some(c, w);
    moved += w->off - before;
    if (!whole) {
      if (rlx__shm_ring_want_room(&c->shm->out))
        continue; /* room came meanwhile */
      break;      /* the reader rings us when it has made room */
    }
    rlx__list_remove(&w->link);
    struct rlx__xfer *x = w->x;
    free(w);
    if (x) {
      x->writing = 0;
      rlx__write_done(c, x);
    }
  }
  return moved;
}

/* A small message as one whole record with its header packed (24 bytes
 * instead of 64, frame.h): 40 bytes in the ring for 8 of payload instead
 * of 80, the lines the polling reader takes back from us each message
 * halved. Only when nothing waits for room before it (order), and all of
 * it fits now; else 0, and it goes as bytes. */
_Static_assert(RLX__MSG_PACKED_MAX == RLX__SHM_WHOLE_MAX - RLX__FRAME_PACKED_SIZE,
              "a message the fast path sends fits a whole record");

static int shm_send_packed(struct rlx__p2p_conn *c, const uint8_t *hdr, const void *payload,
                           size_t plen) {
  if (plen > RLX__SHM_WHOLE_MAX - RLX__FRAME_PACKED_SIZE || !rlx__list_empty(&c->shm_out))
    return 0;
  if (rlx__shm_ring_write_packed(&c->shm->out, hdr, RLX__FRAME_PACKED_SIZE, payload, plen) == 0)
    return 0;
  c->last_tx = rlx__tick_ns();
  if (rlx__shm_ring_wake_needed(&c->shm->out))
    ring_doorbell(c);
  return 1;
}

static int send_packed(struct rlx__p2p_conn *c, const struct rlx__xfer *x, const void *payload,
                       size_t plen) {
  if (x->ref != RLX__REF_NONE || !rlx__frame_packs(&x->hdr))
    return 0;
  uint8_t hdr[RLX__FRAME_PACKED_SIZE];
  rlx__frame_pack(&x->hdr, hdr);
  return shm_send_packed(c, hdr, payload, plen);
}

/* The table's send: 1 when x is done at once (status set), else 0. */
static int shm_send(struct rlx__p2p_conn *c, struct rlx__xfer *x) {
  size_t plen;
  const uint8_t *payload = rlx__wire_payload(x, &plen);
  if (send_packed(c, x, payload, plen)) {
    x->status = RLX_OK;
    return 1;
  }
  rlx__frame_encode(&x->hdr, x->hbytes); /* (write.c leaves it to us) */
  if (x->ref == RLX__REF_WAIT_ACK)
    rlx__list_push(&c->p->peers[x->peer].cma_wait, &x->link);
  int rc = put(c, x, x->hbytes, payload, plen);
  if (rc < 0) {
    if (x->ref == RLX__REF_WAIT_ACK)
      rlx__list_remove(&x->link);
    x->ref = RLX__REF_NONE;
    rlx__peer_fail(c->p, x->peer, RLX_ERR_NOMEM, "no memory to queue a frame");
    x->status = RLX_ERR_NOMEM;
    return 1;
  }
  if (rc == 0 || x->ref == RLX__REF_WAIT_ACK)
    return 0;
  x->ref = RLX__REF_NONE;
  x->status = RLX_OK;
  return 1;
}

static void shm_send_ctl(struct rlx__p2p_conn *c, const uint8_t *bytes) {
  if (put(c, NULL, bytes, NULL, 0) < 0)
    rlx__peer_fail(c->p, c->peer, RLX_ERR_NOMEM, "no memory to queue a control frame");
}

static int shm_unsent(const struct rlx__p2p_conn *c) {
  return c->shm != NULL && !rlx__list_empty(&c->shm_out);
}

static void shm_cut_short(struct rlx__p2p_conn *c, const uint8_t *hdr, const void *payload,
                          size_t len) {
  struct iovec v[2] = {{(void *)hdr, RLX__FRAME_HDR_SIZE}, {(void *)payload, len}};
  rlx__shm_ring_write(&c->shm->out, v, len ? 2 : 1);
}

/* The connection closes: frames still waiting for room fail with it. */
static void shm_drop(struct rlx__p2p_conn *c, int err) {
  if (c->shm == NULL) /* (a dial that never got as far as its segment) */
    return;
  while (!rlx__list_empty(&c->shm_out)) {
    struct shm_wait *w = rlx__container_of(c->shm_out.next, struct shm_wait, link);
    rlx__list_remove(&w->link);
    struct rlx__xfer *x = w->x;
    free(w);
    if (x == NULL)
      continue;
    x->writing = 0;
    if (x->ref == RLX__REF_WAIT_ACK)
      rlx__list_remove(&x->link);
    x->ref = RLX__REF_NONE;
    rlx__xfer_finish(x, err);
  }
  rlx__shm_ring_close(&c->shm->out);
  rlx__shm_seg_close(c->shm);
  free(c->shm);
  c->shm = NULL;
}

/* ---- reading ------------------------------------------------------------------ */

/* Read what the peer put in our in ring into the frame reader: packed
 * frames whole, in place (their payload copied once, from the ring into
 * the receive's buffer: one copy less for a message of 0.5-4 KiB), the
 * rest as bytes (a ring read stops before a packed frame). Not again
 * from a callback while a record is read in place: it is not released
 * yet. */
static size_t drain(struct rlx__p2p_conn *c) {
  size_t moved = 0;
  unsigned char rec[RLX__SHM_WHOLE_MAX]; /* (a record that wraps around the ring's end) */
  if (c->shm_draining)
    return 0;
  while (c->state == C_READY && c->shm) {
    const unsigned char *at;
    size_t k = rlx__shm_ring_peek_whole(&c->shm->in, rec, sizeof rec, &at);
    if (k == SIZE_MAX) {
      char why[160];
      snprintf(why, sizeof(why), "rank %d wrote a packed frame longer than %d bytes", c->peer,
               RLX__SHM_WHOLE_MAX);
      rlx__peer_fail(c->p, c->peer, RLX_ERR_CORRUPT, why);
      break;
    }
    if (k > 0) {
      c->shm_draining = 1;
      rlx__read_packed(c, at, k); /* (a peer writing over it meanwhile spoils only its payload:
                                   * read_packed copies the header out first) */
      c->shm_draining = 0;
      moved += k;
      if (c->shm == NULL) /* (failed meanwhile: its ring is gone) */
        break;
      rlx__shm_ring_release_whole(&c->shm->in, k);
      if (rlx__shm_ring_room_wake_needed(&c->shm->in))
        ring_doorbell(c);
      continue;
    }
    if (!rlx__shm_ring_maybe(&c->shm->in))
      break; /* (no whole frame, and nothing else either) */
    uv_buf_t b;
    rlx__read_alloc(&c->h.handle, 0, &b);
    size_t n = rlx__shm_ring_read(&c->shm->in, b.base, b.len);
    if (n == 0)
      break;
    if (rlx__shm_ring_room_wake_needed(&c->shm->in))
      ring_doorbell(c);
    moved += n;
    rlx__read_bytes(c, n);
  }
  if (moved)
    c->last_rx = rlx__tick_ns();
  return moved;
}

/* The table's progress, for the engine: every ring of every connection. */
static size_t shm_progress(struct rlx__p2p *p) {
  size_t moved = 0;
  /* by index, looked up afresh each time: a callback may close any of them */
  for (int i = 0; i < p->npolled; i++) {
    struct rlx__p2p_conn *c = p->polled[i];
    if (!rlx__list_empty(&c->shm_out))
      moved += flush(c);
    if (i < p->npolled && p->polled[i] == c && rlx__shm_ring_maybe(&c->shm->in))
      moved += drain(c);
  }
  return moved;
}

int rlx__shm_quiet(const struct rlx__p2p *p) {
  if (p->npolled == 0 || p->nready != p->npolled || p->nwatch != 0 || p->nwriting != 0)
    return 0;
  for (int i = 0; i < p->npolled; i++) {
    const struct rlx__p2p_conn *c = p->polled[i];
    if (!rlx__list_empty(&c->shm_out) || rlx__shm_ring_maybe(&c->shm->in))
      return 0;
  }
  return 1;
}

static int shm_prepare_sleep(struct rlx__p2p *p, int sleeping) {
  if (!sleeping) {
    for (int i = 0; i < p->npolled; i++)
      rlx__shm_ring_awake(&p->polled[i]->shm->in);
    return 0;
  }
  /* every flag first, then one fence for all of them (a heavy one is a
   * system call), then every ring looked at once more */
  int heavy = 0;
  for (int i = 0; i < p->npolled; i++)
    heavy |= rlx__shm_ring_sleep_flag(&p->polled[i]->shm->in);
  if (heavy)
    rlx__fence_heavy();
  for (int i = 0; i < p->npolled; i++)
    if (rlx__shm_ring_sleep_check(&p->polled[i]->shm->in)) {
      shm_prepare_sleep(p, 0); /* bytes came: nobody sleeps */
      return 1;
    }
  return 0;
}

static int shm_unread(struct rlx__p2p_conn *c) { return rlx__shm_ring_readable(&c->shm->in) > 0; }

/* ---- the socket under a shared-memory connection -------------------------------- */

static void bell_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf) {
  struct rlx__p2p_conn *c = h->data;
  (void)suggested;
  *buf = uv_buf_init((char *)c->bell, sizeof(c->bell));
}

/* Doorbells: their arrival woke the loop, and the engine reads the rings
 * after it. The end of the stream: the peer is gone, after what it put in
 * the ring (an ABORT saying why, say), which is read first. */
static void bell_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf) {
  struct rlx__p2p_conn *c = s->data;
  for (ssize_t i = 0; i < nread; i++) /* (libuv queued a descriptor before these bytes) */
    c->fds_announced += buf->base[i] == 'F';
  if (nread >= 0 || c->state != C_READY)
    return;
  c->last_rx = rlx__tick_ns();
  flush(c);
  drain(c);
  if (c->state != C_READY)
    return;
  char why[160];
  snprintf(why, sizeof(why), "connection to rank %d %s", c->peer,
           nread == UV_EOF ? "closed by the peer (process exited or was killed?)"
                           : uv_strerror((int)nread));
  rlx__conn_fail(c, RLX_ERR_PEER_LOST, why);
}

static int listen_bells(struct rlx__p2p_conn *c) {
  uv_read_stop(&c->h.stream);
  return uv_read_start(&c->h.stream, bell_alloc, bell_read);
}

/* The table's start: the engine polls the rings, libuv the doorbells. */
static int shm_start(struct rlx__p2p_conn *c) {
  c->p->polled[c->p->npolled++] = c; /* one per peer: never more than size */
  return listen_bells(c);
}

/* ---- descriptors for the collectives' group segments ----------------------------- */

static struct rlx__p2p_conn *shm_conn_of(struct rlx__p2p *p, int peer) {
  struct rlx__p2p_conn *c = peer >= 0 && peer < p->size ? p->peers[peer].conn : NULL;
  return c != NULL && c->state == C_READY && c->shm != NULL ? c : NULL;
}

int rlx__p2p_shm_state(struct rlx__p2p *p, int peer) {
  if (peer < 0 || peer >= p->size || peer == p->rank)
    return -1;
  if (p->peers[peer].lost)
    return -1;
  struct rlx__p2p_conn *c = p->peers[peer].conn;
  if (c == NULL) {
    rlx__conn_ensure(p, peer, 0);
    return 0;
  }
  if (c->state != C_READY)
    return 0;
  return c->shm != NULL ? 1 : -1;
}

int rlx__p2p_send_fd(struct rlx__p2p *p, int peer, int fd) {
  struct rlx__p2p_conn *c = shm_conn_of(p, peer);
  uv_os_fd_t sock;
  if (c == NULL || uv_fileno(&c->h.handle, &sock) != 0)
    return -ENOTCONN;
  /* a byte of its own carries it ('F', where a doorbell is 0): the socket
   * under a shared-memory connection holds nothing else, so nothing is
   * interleaved, and the taker can tell a descriptor that never came */
  long n = rlx__send_with_fd(sock, fd, "F", 1);
  return n == 1 ? 0 : n < 0 ? (int)n : -EIO;
}

int rlx__p2p_take_fd(struct rlx__p2p *p, int peer) {
  struct rlx__p2p_conn *c = shm_conn_of(p, peer);
  if (c == NULL)
    return -ENOTCONN;
  int fd = take_fd(c);
  if (fd != -EAGAIN)
    listen_bells(c); /* uv_accept may have stopped reading the socket */
  if (fd >= 0 || fd == -EMFILE || fd == -ENFILE)
    c->fds_taken++;
  else if (fd == -EAGAIN && c->fds_announced > c->fds_taken) {
    c->fds_taken++; /* its byte came alone: the kernel could not give us the descriptor */
    fd = -EMFILE;
  }
  return fd;
}

/* ---- the table ------------------------------------------------------------------- */

const struct rlx__transport_ops rlx__shm_transport = {
    .name = "shm",
    .same_host = 1,
    .control = &rlx__unix_transport,
    .in_memory = 1,
    .pollable = 0,
    .offer = shm_offer,
    .take_offer = shm_take_offer,
    .start = shm_start,
    .send = shm_send,
    .send_packed = shm_send_packed,
    .send_ctl = shm_send_ctl,
    .unread = shm_unread,
    .unsent = shm_unsent,
    .drop = shm_drop,
    .cut_short = shm_cut_short,
    .progress = shm_progress,
    .prepare_sleep = shm_prepare_sleep,
};
