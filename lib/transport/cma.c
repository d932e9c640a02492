/* Payloads by reference, for peers on this host (RLX_CMA): the sender puts
 * a descriptor (address, pid) on the stream instead of the payload; the
 * receiver copies the payload out of the sender's memory with
 * process_vm_readv, straight into its destination, and ACKs; only then is
 * the sender's buffer free. A copy the kernel refuses (ptrace rules, a
 * sandbox) is NACKed and the payload sent again on the stream. The CRC32C
 * covers the descriptor, checked before the copy: the data itself goes
 * from memory to memory and never crosses a wire. */
#include <assert.h>
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>
#include <rlxcoll/errors.h>
#include "base/byteorder.h"
#include "base/internal.h"
#include "base/tuning.h"
#include "p2p_internal.h"

void rlx__cma_enable(void) {
  /* Where Yama restricts ptrace to descendants, let peers of our uid read
   * our buffers (process_vm_readv follows ptrace's rules). */
  prctl(PR_SET_PTRACER, PR_SET_PTRACER_ANY, 0, 0, 0);
}

int rlx__cma_prepare(struct rlx__p2p *p, struct rlx__xfer *x) {
  struct rlx__p2p_peer *pe = &p->peers[x->peer];
  if (!p->cma || pe->no_cma || x->len < (size_t)RLX__CMA_MIN || !pe->tr->same_host)
    return 0;
  /* What crosses the stream, and what the CRC covers, is the descriptor;
   * checksumming the data on both sides cost more than the copy (512 KiB:
   * ~30 us of CRC32C each side). */
  x->ref = RLX__REF_WAIT_ACK;
  x->hdr.flags = RLX__FF_CMA;
  rlx__put64(x->cma_desc, (uint64_t)(uintptr_t)x->buf);
  uint64_t pid = (uint64_t)getpid();
#ifdef RLX_FAULT_INJECTION
  if (rlx__fault_cma_desc_pid())
    pid = 1;
#endif
  rlx__put64(x->cma_desc + 8, pid);
  x->hdr.payload_crc = rlx__crc32c(x->cma_desc, RLX__CMA_DESC_SIZE);
  return 1;
}

/* Tell the sender of a by-reference frame that its buffer is free again
 * (or, with nack, that it must send the payload on the stream). */
static void send_ack(struct rlx__p2p_conn *c, const struct rlx__frame_hdr *h, int nack) {
  struct rlx__frame_hdr a = *h;
  uint8_t bytes[RLX__FRAME_HDR_SIZE];
  a.type = RLX__FT_ACK;
  a.flags = nack ? RLX__FF_NACK : 0;
  a.src = (uint32_t)c->p->rank;
  a.payload_len = 0;
  a.payload_crc = 0;
  rlx__frame_encode(&a, bytes);
  rlx__write_ctl(c, bytes);
}

int rlx__cma_read(int pid, uint64_t addr, void *dst, size_t len) {
#ifdef RLX_FAULT_INJECTION
  if (rlx__fault_cma_denied())
    return -EPERM;
#endif
  return rlx__cma_move(pid, addr, dst, len, 0);
}

/* A spoilt address is not one to read from. The stream itself is in
 * step, so this is a corrupt payload: the receive fails (its ABORT tells
 * the sender why) and the acknowledgement releases the sender. */
/* The pid of the process at the other end of c's socket (a Unix socket:
 * copies by reference go only over those), or -1; asked once. */
static int peer_pid(struct rlx__p2p_conn *c) {
  struct ucred cred;
  socklen_t clen = sizeof(cred);
  uv_os_fd_t fd;
  if (c->cred_pid == 0)
    c->cred_pid = uv_fileno(&c->h.handle, &fd) != 0 ||
                          getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &clen) != 0
                      ? -1
                      : (int)cred.pid;
  return c->cred_pid;
}

int rlx__p2p_peer_pid(struct rlx__p2p *p, int peer) {
  struct rlx__p2p_conn *c = peer >= 0 && peer < p->size ? p->peers[peer].conn : NULL;
  int pid = c != NULL ? peer_pid(c) : -1;
  return pid > 0 ? pid : 0;
}

/* After a read by reference from c's peer: did the peer give that send
 * up meanwhile? A sender whose receiver stayed silent past RLX__DRAIN_MS
 * (messages.c, exec.c) closes the connection (its ring to us, then the
 * socket) and only then returns the buffer to its program, which may
 * change it: what was read may be torn. The read (a syscall) ends before
 * these looks, so a connection still open here was open when the read
 * ended, before the buffer could change. A Unix socket's peer that
 * closed shows as POLLRDHUP at once, frames still queued or not. */
#define GAVE_UP "its send by reference was given up while this rank read it (this rank was " \
                "silent past its time): the copy is discarded"
static int gave_up(struct rlx__p2p_conn *c) {
  if (c == NULL)
    return 0;
  if (c->shm != NULL) /* (closed before the socket: a load, where a poll cost 4-16% of a
                       * 256 KiB - 1 MiB allreduce at 2 ranks) */
    return rlx__shm_ring_is_closed(&c->shm->in);
  uv_os_fd_t fd;
  if (uv_fileno((const uv_handle_t *)&c->h, &fd) != 0)
    return 0;
  struct pollfd pf = {fd, POLLRDHUP, 0};
  return poll(&pf, 1, 0) > 0 && (pf.revents & (POLLRDHUP | POLLHUP)) != 0;
}

static void bad_descriptor(struct rlx__p2p_conn *c, const struct rlx__frame_hdr *h,
                           struct rlx__xfer *x) {
  c->p->corrupt++;
  send_ack(c, h, 0);
  if (x) {
    rlx__match_take(c->p, x, h);
    x->got = *h;
    rlx__xfer_finish(x, RLX_ERR_CORRUPT);
    return;
  }
  struct rlx__umsg *bad = rlx__umsg_new(c, h, 0); /* no data: it fails its receive */
  if (bad == NULL)
    return;
  bad->hdr.flags = 0; /* (its length stays the frame's: a receive posted later for it must
                       * find it, and fail it as corrupt, not as another size) */
  rlx__match_keep(c, bad); /* (crc_ok 0) */
}

/* ---- big messages copied by both sides ------------------------------------------ */

/* Bytes [0, split_at) the receiver reads, the rest the sender writes: half,
 * on a page boundary. */
static size_t split_at(uint64_t len) { return (size_t)(len / 2) & ~(size_t)4095; }


int rlx__cma_read_words(int pid, const uint64_t *addrs, uint64_t *words, int n) {
  struct iovec local[4], remote[4];
  if (n < 1 || n > 4)
    return -EINVAL;
#ifdef RLX_FAULT_INJECTION
  if (rlx__fault_cma_denied())
    return -EPERM;
#endif
  for (int i = 0; i < n; i++) {
    local[i] = (struct iovec){&words[i], sizeof(uint64_t)};
    remote[i] = (struct iovec){(void *)(uintptr_t)addrs[i], sizeof(uint64_t)};
  }
  ssize_t got;
  do
    got = process_vm_readv(pid, local, (unsigned long)n, remote, (unsigned long)n, 0);
  while (got < 0 && errno == EINTR);
  return got == (ssize_t)(n * sizeof(uint64_t)) ? 0 : got < 0 ? -errno : -EFAULT;
}

int rlx__cma_write(int pid, uint64_t addr, const void *src, size_t len) {
#ifdef RLX_FAULT_INJECTION
  if (rlx__fault_cma_denied())
    return -EPERM;
#endif
  return rlx__cma_move(pid, addr, (void *)src, len, 1);
}

/* Is message h, for receive x, one both sides copy? */
static int splits(const struct rlx__p2p_conn *c, const struct rlx__frame_hdr *h,
                  const struct rlx__xfer *x) {
  return h->type == RLX__FT_MSG && h->payload_len >= RLX__CMA_SPLIT_MIN &&
         h->payload_len <= x->len && !c->p->peers[c->peer].no_split;
}

/* Receive x takes the big message h (its sender's buffer at addr in
 * process pid; x is on no list; splits() said yes): ask the sender to
 * write its part into x's buffer, read ours meanwhile, and wait on
 * split_wait for its word (RLX__FF_PUSHED). */
static void split(struct rlx__p2p_conn *c, const struct rlx__frame_hdr *h, struct rlx__xfer *x,
                  int pid, uint64_t addr) {
  struct rlx__p2p_peer *pe = &c->p->peers[c->peer];
  size_t at = split_at(h->payload_len);
  struct rlx__frame_hdr a = *h;
  uint8_t bytes[RLX__FRAME_HDR_SIZE];
  a.type = RLX__FT_ACK;
  a.flags = RLX__FF_SPLIT;
  a.src = (uint32_t)c->p->rank;
  a.payload_len = at;
  a.payload_crc = 0;
  memset(a.sig, 0, sizeof(a.sig));
  rlx__put64(a.sig, (uint64_t)(uintptr_t)x->buf);
  rlx__put32(a.sig + 8, (uint32_t)getpid());
#ifdef RLX_FAULT_INJECTION
  if (rlx__fault_cma_wrong_pid())
    rlx__put32(a.sig + 8, 1);
#endif
  rlx__frame_encode(&a, bytes);
  rlx__write_ctl(c, bytes); /* first: the sender copies while we do */
  x->got = *h;
  x->got.flags = 0;
  rlx__put64(x->cma_desc, addr); /* (the sender's: for its part, if it cannot) */
  rlx__put64(x->cma_desc + 8, (uint64_t)(uint32_t)pid);
  x->split_rc = rlx__cma_read(pid, addr, x->buf, at);
  x->queued = 2;
  rlx__list_push(&pe->split_wait, &x->link);
}

/* The sender's word on its part of a split copy: x complete, or (a copy
 * refused) sent again on the stream into x, posted again first. */
static void split_done(struct rlx__p2p_conn *c, const struct rlx__frame_hdr *h) {
  struct rlx__p2p *p = c->p;
  struct rlx__p2p_peer *pe = &p->peers[c->peer];
  struct rlx__xfer *x = NULL;
  for (struct rlx__list *l = pe->split_wait.next; l != &pe->split_wait; l = l->next) {
    struct rlx__xfer *t = rlx__container_of(l, struct rlx__xfer, link);
    if (rlx__same_key(&t->got, h)) {
      x = t;
      break;
    }
  }
  if (x == NULL) {
    char why[120];
    snprintf(why, sizeof(why), "rank %d wrote its part of a message nobody waits for", c->peer);
    rlx__peer_fail(p, c->peer, RLX_ERR_CORRUPT, why);
    return;
  }
  rlx__list_remove(&x->link);
  x->queued = 0;
  size_t at = split_at(x->got.payload_len);
  int rc = x->split_rc;
  if (h->flags & RLX__FF_NACK) { /* its write was refused: read its part ourselves */
    pe->no_split = 1;
    if (rc == 0)
      rc = rlx__cma_read((int)rlx__get64(x->cma_desc + 8), rlx__get64(x->cma_desc) + at,
                         (char *)x->buf + at, x->got.payload_len - at);
  }
  if (rc == 0 && gave_up(c)) { /* (our half read while it gave up: x, off its lists, fails) */
    rlx__peer_fail(p, c->peer, RLX_ERR_PEER_LOST, GAVE_UP);
    rlx__xfer_finish(x, RLX_ERR_PEER_LOST);
    return;
  }
  if (rc == 0) {
    p->cma_copies++;
    p->cma_splits += (h->flags & RLX__FF_NACK) == 0;
    send_ack(c, &x->got, 0);
    rlx__xfer_finish(x, RLX_OK);
    return;
  }
  rlx__debug("copy by reference from rank %d failed (%s); using the socket", c->peer,
             strerror(-rc));
  p->cma_fallbacks++;
  send_ack(c, &x->got, 1);
  /* posted again, first: the payload comes on the stream before anything
   * a later receive could want from this sender */
  x->queued = 1;
  rlx__list_push(p->msg_posted.next, &x->link);
  if (x->peer >= 0)
    p->peers[x->peer].msg_waits++;
}

void rlx__cma_split_cancel(struct rlx__p2p *p, struct rlx__xfer *x) {
  int from = (int)x->got.src;
  rlx__list_remove(&x->link);
  x->queued = 0;
  rlx__peer_fail(p, from, RLX_ERR_PEER_LOST, "a receive was abandoned while its sender wrote into it");
}


/* The receiver asks for our part of a split copy: write it, and say so.
 * Only into the process at the other end of the connection: a peer that
 * names another pid is failed, not obeyed. */
static void push(struct rlx__p2p_conn *c, struct rlx__xfer *x, const struct rlx__frame_hdr *h) {
  char why[160];
  int pid = (int)rlx__get32(h->sig + 8), there = peer_pid(c);
  if (h->payload_len >= x->len || pid != there) {
    if (pid != there)
      snprintf(why, sizeof(why), "rank %d asked us to write into pid %d, not its own (%d)", c->peer,
               pid, there);
    else
      snprintf(why, sizeof(why), "rank %d asked for a part past the message's end", c->peer);
    rlx__peer_fail(c->p, c->peer, RLX_ERR_CORRUPT, why);
    return;
  }
  size_t at = (size_t)h->payload_len;
  int rc = 0;
#ifdef RLX_FAULT_INJECTION
  rc = rlx__fault_cma_push();
#endif
  /* A receiver that gave its receive up meanwhile (its timeout passed,
   * or it was revoked) closed the connection before returning its buffer
   * to its program, which may use it for anything now: write nothing
   * there. (Looked at just before the write: one that gives up during
   * it is not seen; README.) */
  if (gave_up(c)) {
    rlx__debug("rank %d gave its receive up before we wrote our part into it: not written",
               c->peer);
    return;
  }
  if (rc == 0)
    rc = rlx__cma_write(pid, rlx__get64(h->sig) + at, (char *)x->buf + at, x->len - at);
  if (rc != 0)
    rlx__debug("writing our part into rank %d's memory failed (%s); it reads it", c->peer,
               strerror(-rc));
  struct rlx__frame_hdr a = x->hdr;
  uint8_t bytes[RLX__FRAME_HDR_SIZE];
  a.type = RLX__FT_ACK;
  a.flags = (uint8_t)(RLX__FF_PUSHED | (rc != 0 ? RLX__FF_NACK : 0));
  a.src = (uint32_t)c->p->rank;
  a.payload_len = 0;
  a.payload_crc = 0;
  rlx__frame_encode(&a, bytes);
  rlx__write_ctl(c, bytes);
}

/* ---- messages held in their senders' memory --------------------------------- */

static void hold_expired(uv_timer_t *t);

static void hold_timer(struct rlx__p2p *p, uint64_t ms) {
  if (!p->cma_hold_open) {
    uv_timer_init(p->loop, &p->cma_hold);
    p->cma_hold.data = p;
    p->cma_hold_open = 1;
  }
  if (!uv_is_active((uv_handle_t *)&p->cma_hold))
    uv_timer_start(&p->cma_hold, hold_expired, ms, 0);
}

/* A message's descriptor, and no receive wants it yet: keep its place
 * without copying (RLX_CMA_HOLD_MS). */
static void hold(struct rlx__p2p_conn *c, const struct rlx__frame_hdr *h, int pid, uint64_t addr) {
  struct rlx__p2p *p = c->p;
  struct rlx__umsg *m = rlx__umsg_new(c, h, 0);
  if (m == NULL)
    return;
  m->hdr.flags = 0;
  m->crc_ok = 1; /* (the descriptor's CRC was checked) */
  m->from = c->peer;
  m->held = 1;
  m->ref_pid = pid;
  m->ref_addr = addr;
  m->held_at = uv_now(p->loop);
  rlx__match_keep(c, m);
  hold_timer(p, p->cma_hold_ms);
}

int rlx__cma_take_held(struct rlx__p2p *p, struct rlx__umsg *m, struct rlx__xfer *x) {
  struct rlx__p2p_conn *c = p->peers[m->from].conn;
  x->got = m->hdr;
  if (m->held == 2) {
    p->held_resends--;
    return RLX__HELD_RESEND;
  }
  if (c == NULL) /* (a lost peer's held messages are dropped: msg.c) */
    return RLX_ERR_PEER_LOST;
  if (m->hdr.payload_len > x->len) { /* the receive fails; the sender is done */
    send_ack(c, &m->hdr, 0);
    return RLX_ERR_TRUNCATE;
  }
  if (splits(c, &m->hdr, x)) {
    rlx__msg_unpost(p, x); /* (a receive posted before: its link goes to split_wait) */
    split(c, &m->hdr, x, m->ref_pid, m->ref_addr);
    return RLX__HELD_SPLIT;
  }
  int rc = rlx__cma_read(m->ref_pid, m->ref_addr, x->buf, m->hdr.payload_len);
  if (rc == 0 && gave_up(c)) { /* (m and x are off their lists: the caller, a receive being
                                 * posted, ends x; a held message never meets a posted receive
                                 * on arrival, where x would be on its list) */
    rlx__peer_fail(p, m->from, RLX_ERR_PEER_LOST, GAVE_UP);
    return RLX_ERR_PEER_LOST;
  }
  if (rc != 0) {
    rlx__debug("copy by reference from rank %d failed (%s); using the socket", m->from,
               strerror(-rc));
    p->cma_fallbacks++;
    send_ack(c, &m->hdr, 1);
    return RLX__HELD_RESEND;
  }
  p->cma_copies++;
  send_ack(c, &m->hdr, 0);
  return RLX_OK;
}

/* Held long enough: copy into a buffer of our own, in the message's
 * place, and let the sender go; a refused copy is NACKed and the
 * message's place kept for the payload the sender puts on the stream. */
static void hold_expired(uv_timer_t *t) {
  struct rlx__p2p *p = t->data;
  uint64_t now = uv_now(p->loop), next = 0;
  int gone = -1;
  struct rlx__list *l = p->msg_unexpected.next;
  while (l != &p->msg_unexpected) {
    struct rlx__umsg *m = rlx__container_of(l, struct rlx__umsg, link);
    l = l->next;
    if (m->held != 1)
      continue;
    if (now - m->held_at < p->cma_hold_ms) {
      uint64_t left = p->cma_hold_ms - (now - m->held_at);
      next = next == 0 || left < next ? left : next;
      continue;
    }
    struct rlx__p2p_conn *c = p->peers[m->from].conn;
    struct rlx__umsg *d = rlx__umsg_new(c, &m->hdr, m->hdr.payload_len);
    if (d == NULL) { /* the peer failed, and its held messages with it: look again */
      next = 1;
      break;
    }
    int rc = rlx__cma_read(m->ref_pid, m->ref_addr, d->data, m->hdr.payload_len);
    if (rc == 0 && gave_up(c)) { /* (failed after the walk: it takes held messages off) */
      rlx__umsg_put(p, d);
      gone = m->from;
      break;
    }
    if (rc != 0) {
      rlx__debug("copy by reference from rank %d failed (%s); using the socket", m->from,
                 strerror(-rc));
      p->cma_fallbacks++;
      rlx__umsg_put(p, d);
      m->held = 2;
      p->held_resends++;
      send_ack(c, &m->hdr, 1);
      continue;
    }
    p->cma_copies++;
    d->crc_ok = 1;
    d->from = m->from;
    rlx__list_push(&m->link, &d->link); /* (in front of m: into its place) */
    rlx__list_remove(&m->link);
    send_ack(c, &m->hdr, 0);
    rlx__umsg_put(p, m);
  }
  if (gone >= 0)
    rlx__peer_fail(p, gone, RLX_ERR_PEER_LOST, GAVE_UP);
  if (next > 0)
    hold_timer(p, next);
}

/* A DATA or MSG frame's descriptor is in: copy the payload straight into
 * the receive posted for it, or keep it (a message: hold) or copy it into
 * a kept buffer at once (the sender's buffer is then free); a posted
 * receive it does not fit fails, and the sender is let go. */
void rlx__cma_desc_done(struct rlx__p2p_conn *c) {
  struct rlx__p2p *p = c->p;
  struct rlx__frame_hdr *h = &c->cur;
  uint64_t addr = rlx__get64(c->cma_in);
  pid_t pid = (pid_t)(uint32_t)rlx__get64(c->cma_in + 8);
  struct rlx__xfer *x = rlx__match_posted(c, h);
  rlx__read_next(c);
  if (rlx__crc32c(c->cma_in, RLX__CMA_DESC_SIZE) != h->payload_crc) {
    bad_descriptor(c, h, x);
    return;
  }
  if ((int)pid != peer_pid(c)) { /* only the peer's own memory is read */
    rlx__warn("rank %d's frame by reference names pid %d, not its own (%d): refused as corrupt",
              c->peer, (int)pid, peer_pid(c));
    bad_descriptor(c, h, x);
    return;
  }
  if (x && !rlx__match_fits(x, h)) { /* another call, or a message too long */
    rlx__match_take(p, x, h);
    x->got = *h;
    send_ack(c, h, 0);
    rlx__xfer_finish(x, rlx__match_refusal(h));
    return;
  }
  if (x == NULL && h->type == RLX__FT_MSG && p->cma_hold_ms > 0) {
    hold(c, h, (int)pid, addr);
    return;
  }
  if (x != NULL && splits(c, h, x)) {
    rlx__match_take(p, x, h);
    split(c, h, x, (int)pid, addr);
    return;
  }
  struct rlx__umsg *m = NULL;
  if (x == NULL) {
    if ((m = rlx__umsg_new(c, h, h->payload_len)) == NULL)
      return;
    m->hdr.flags = 0;
  }
  int rc = rlx__cma_read(pid, addr, x ? x->buf : m->data, h->payload_len);
  if (rc == 0 && gave_up(c)) { /* (x, still posted, fails with the peer) */
    rlx__umsg_put(p, m);
    rlx__peer_fail(p, c->peer, RLX_ERR_PEER_LOST, GAVE_UP);
    return;
  }
  if (rc != 0) {
    /* Not allowed here: the sender resends the payload on the stream, and
     * the receive stays posted for it. */
    rlx__debug("copy by reference from rank %d failed (%s); using the socket", c->peer,
               strerror(-rc));
    p->cma_fallbacks++;
    rlx__umsg_put(p, m);
    send_ack(c, h, 1);
    return;
  }
  p->cma_copies++;
  send_ack(c, h, 0);
  if (x) {
    rlx__match_take(p, x, h);
    x->got = *h;
    x->got.flags = 0;
    rlx__xfer_finish(x, RLX_OK);
  } else {
    m->crc_ok = 1; /* the descriptor's CRC was checked above */
    rlx__match_keep(c, m);
  }
}

void rlx__cma_ack_done(struct rlx__p2p_conn *c, const struct rlx__frame_hdr *h) {
  struct rlx__p2p_peer *pe = &c->p->peers[c->peer];
  if (h->flags & RLX__FF_PUSHED) {
    split_done(c, h);
    return;
  }
  for (struct rlx__list *l = pe->cma_wait.next; l != &pe->cma_wait; l = l->next) {
    struct rlx__xfer *x = rlx__container_of(l, struct rlx__xfer, link);
    if (!rlx__same_key(&x->hdr, h))
      continue;
    assert(x->ref == RLX__REF_WAIT_ACK);
    if (h->flags & RLX__FF_SPLIT) { /* our part first; the ACK comes after */
      push(c, x, h);
      return;
    }
    rlx__list_remove(&x->link);
    if (h->flags & RLX__FF_NACK) {
      pe->no_cma = 1;
      c->p->cma_fallbacks++;
      x->ref = RLX__REF_NACKED;
    } else {
      x->ref = RLX__REF_ACKED;
    }
    if (x->writing)
      return; /* the write's callback finishes it once libuv lets go of the request */
    if (x->ref == RLX__REF_ACKED)
      rlx__xfer_finish(x, RLX_OK);
    else
      rlx__cma_resend(c, x);
    return;
  }
  char why[120];
  snprintf(why, sizeof(why), "rank %d acknowledged a frame never sent to it", c->peer);
  rlx__peer_fail(c->p, c->peer, RLX_ERR_CORRUPT, why);
}

void rlx__cma_resend(struct rlx__p2p_conn *c, struct rlx__xfer *x) {
  x->ref = RLX__REF_NONE;
  x->hdr.flags = 0;
  x->hdr.payload_crc = rlx__crc32c(x->buf, x->len); /* now the data itself */
  rlx__frame_encode(&x->hdr, x->hbytes);
  rlx__write_start(c, x);
}
