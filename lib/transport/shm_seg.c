/* A pair's shared segment: a memfd holding two rings and two eventfds,
 * handed over a Unix socket with SCM_RIGHTS (see shm_seg.h). Layout:
 * ring A at 0 (the creator writes it), ring B after it (the creator reads
 * it); descriptors in the order memfd, the creator's wake-up eventfd, the
 * receiver's. */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>
#include "shm_seg.h"

#define NFDS 3

static size_t ring_span(size_t capacity) {
  size_t n = rlx__shm_ring_bytes(capacity);
  return (n + RLX__SHM_LINE - 1) & ~(size_t)(RLX__SHM_LINE - 1);
}

static void clear(struct rlx__shm_seg *s) {
  memset(s, 0, sizeof(*s));
  s->memfd = s->wake_out = s->wake_in = -1;
}

int rlx__shm_seg_create(struct rlx__shm_seg *s, size_t capacity) {
  clear(s);
  if (capacity < 4096 || (capacity & (capacity - 1)) != 0)
    return -EINVAL;
  size_t span = ring_span(capacity);
  s->len = 2 * span;
  s->memfd = memfd_create("rlxcoll-shm", MFD_CLOEXEC | MFD_ALLOW_SEALING);
  if (s->memfd < 0)
    return -errno;
  int rc = 0;
  /* sealed at this size: the peer can neither shrink it under our mapping
   * (SIGBUS) nor grow it */
  if (ftruncate(s->memfd, (off_t)s->len) != 0 ||
      fcntl(s->memfd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) != 0) {
    rc = -errno;
    goto fail;
  }
  s->base = mmap(NULL, s->len, PROT_READ | PROT_WRITE, MAP_SHARED, s->memfd, 0);
  if (s->base == MAP_FAILED) {
    s->base = NULL;
    rc = -errno;
    goto fail;
  }
  s->wake_in = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  s->wake_out = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (s->wake_in < 0 || s->wake_out < 0) {
    rc = -errno;
    goto fail;
  }
  struct rlx__shm_ring *a = s->base, *b = (void *)((char *)s->base + span);
  rlx__shm_ring_init(&s->out, a, capacity);
  rlx__shm_ring_init(&s->in, b, capacity);
  return 0;
fail:
  rlx__shm_seg_close(s);
  return rc;
}

int rlx__shm_seg_send(const struct rlx__shm_seg *s, int sock, const void *tag8) {
  int fds[NFDS] = {s->memfd, s->wake_in, s->wake_out};
  union {
    char buf[CMSG_SPACE(sizeof(fds))];
    struct cmsghdr align;
  } ctl;
  struct iovec iov = {(void *)tag8, 8};
  struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl.buf,
                     .msg_controllen = sizeof(ctl.buf)};
  memset(ctl.buf, 0, sizeof(ctl.buf));
  struct cmsghdr *c = CMSG_FIRSTHDR(&m);
  c->cmsg_level = SOL_SOCKET;
  c->cmsg_type = SCM_RIGHTS;
  c->cmsg_len = CMSG_LEN(sizeof(fds));
  memcpy(CMSG_DATA(c), fds, sizeof(fds));
  ssize_t n;
  do
    n = sendmsg(sock, &m, MSG_NOSIGNAL | MSG_DONTWAIT);
  while (n < 0 && errno == EINTR);
  if (n < 0)
    return -errno;
  return n == 8 ? 0 : -EIO;
}

int rlx__shm_seg_recv(struct rlx__shm_seg *s, int sock, void *tag8) {
  clear(s);
  int fds[NFDS];
  union {
    char buf[CMSG_SPACE(sizeof(int) * 8)]; /* room for more, to close extras */
    struct cmsghdr align;
  } ctl;
  struct iovec iov = {tag8, 8};
  struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl.buf,
                     .msg_controllen = sizeof(ctl.buf)};
  ssize_t n;
  do
    n = recvmsg(sock, &m, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
  while (n < 0 && errno == EINTR);
  if (n < 0)
    return -errno;
  int got = 0, rc = 0;
  for (struct cmsghdr *c = CMSG_FIRSTHDR(&m); c; c = CMSG_NXTHDR(&m, c)) {
    if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
      continue;
    size_t k = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
    for (size_t i = 0; i < k; i++) {
      int fd;
      memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof(int));
      if (got < NFDS)
        fds[got] = fd;
      else
        close(fd);
      got++;
    }
  }
  if (n != 8 || got != NFDS || (m.msg_flags & MSG_CTRUNC)) {
    rc = -EPROTO;
    goto fail;
  }
  struct stat st;
  if (fstat(fds[0], &st) != 0 || !S_ISREG(st.st_mode) || st.st_size <= 0 ||
      fcntl(fds[0], F_GET_SEALS) != (F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL)) {
    rc = -EPROTO; /* not a memfd sealed at its size: it could shrink under us */
    goto fail;
  }
  s->len = (size_t)st.st_size;
  s->base = mmap(NULL, s->len, PROT_READ | PROT_WRITE, MAP_SHARED, fds[0], 0);
  if (s->base == MAP_FAILED) {
    s->base = NULL;
    rc = -errno;
    goto fail;
  }
  close(fds[0]);
  fds[0] = -1;
  /* The creator's ring A (its out) is our in; ring B follows it. */
  struct rlx__shm_ring *a = s->base;
  if (rlx__shm_ring_attach(&s->in, a, s->len / 2) != 0 ||
      ring_span(s->in.cap) * 2 != s->len ||
      rlx__shm_ring_attach(&s->out, (void *)((char *)s->base + s->len / 2), s->len / 2) != 0 ||
      s->out.cap != s->in.cap) {
    rc = -EPROTO;
    goto fail;
  }
  s->wake_out = fds[1]; /* the creator sleeps on its wake_in */
  s->wake_in = fds[2];
  return 0;
fail:
  for (int i = 0; i < got && i < NFDS; i++)
    if (fds[i] >= 0)
      close(fds[i]);
  if (s->base)
    munmap(s->base, s->len);
  clear(s);
  return rc;
}

void rlx__shm_seg_close(struct rlx__shm_seg *s) {
  if (s->base)
    munmap(s->base, s->len);
  if (s->memfd >= 0)
    close(s->memfd);
  if (s->wake_in >= 0)
    close(s->wake_in);
  if (s->wake_out >= 0)
    close(s->wake_out);
  clear(s);
}

void rlx__shm_seg_wake_peer(struct rlx__shm_seg *s) {
  if (rlx__shm_ring_wake_needed(&s->out)) {
    uint64_t one = 1;
    ssize_t n = write(s->wake_out, &one, sizeof one);
    (void)n; /* EAGAIN: the counter is full, so the peer is woken anyway */
  }
}
