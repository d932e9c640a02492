/* A pair's shared segment: a memfd holding two rings, handed over a Unix
 * socket with SCM_RIGHTS (see shm_seg.h). Layout: ring A at 0 (the creator
 * writes it), ring B after it (the creator reads it). */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>
#include "base/internal.h"
#include "shm_seg.h"

static size_t ring_span(size_t capacity) {
  size_t n = rlx__shm_ring_bytes(capacity);
  return (n + RLX__SHM_LINE - 1) & ~(size_t)(RLX__SHM_LINE - 1);
}

static void clear(struct rlx__shm_seg *s) {
  memset(s, 0, sizeof(*s));
  s->memfd = -1;
}

int rlx__memfd_size(int fd, size_t len, const char *what, const char *instead) {
  struct rlimit lim;
  if (getrlimit(RLIMIT_FSIZE, &lim) == 0 && lim.rlim_cur != RLIM_INFINITY &&
      (rlim_t)len > lim.rlim_cur) {
    static atomic_int said; /* (the first is enough: every later one is alike) */
    if (atomic_exchange(&said, 1) == 0)
      rlx__warn("%s: %zu bytes of shared memory pass the file-size limit (ulimit -f: %llu "
                "bytes): none made, %s", what, len, (unsigned long long)lim.rlim_cur, instead);
    else
      rlx__debug("%s: %zu bytes pass ulimit -f: none made, %s", what, len, instead);
    return -EFBIG;
  }
  return ftruncate(fd, (off_t)len) == 0 ? 0 : -errno;
}

/* Fault the rings' pages in now, writable, in one call: touched as used,
 * a first lap through a 1 MiB ring took a page fault every 56 small
 * messages, on each side (a small ping-pong's first 10000 round trips
 * 1.5x slower). MADV_POPULATE_WRITE (Linux 5.14) where there is one,
 * else reads of every page (mapped, if not yet writable). */
static void prefault(const struct rlx__shm_seg *s) {
#ifdef MADV_POPULATE_WRITE
  if (madvise(s->base, s->len, MADV_POPULATE_WRITE) == 0)
    return;
#endif
  volatile const unsigned char *b = s->base;
  for (size_t i = 0; i < s->len; i += 4096)
    (void)b[i];
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
  if ((rc = rlx__memfd_size(s->memfd, s->len, "rings to a peer",
                            "the Unix socket carries the frames instead")) != 0)
    goto fail;
  if (fcntl(s->memfd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) != 0) {
    rc = -errno;
    goto fail;
  }
  s->base = mmap(NULL, s->len, PROT_READ | PROT_WRITE, MAP_SHARED, s->memfd, 0);
  if (s->base == MAP_FAILED) {
    s->base = NULL;
    rc = -errno;
    goto fail;
  }
  prefault(s);
  /* and its lines into this core's caches: a new page's lines come from
   * memory, a cold miss each on the first lap (a 1 MiB ring's first
   * 13000 small messages 0.2-0.35 us slower each on 2 cores); from here
   * the peer takes them core to core */
  memset(s->base, 0, s->len);
  struct rlx__shm_ring *a = s->base, *b = (void *)((char *)s->base + span);
  rlx__shm_ring_init(&s->out, a, capacity);
  rlx__shm_ring_init(&s->in, b, capacity);
  rlx__shm_ring_fence(&s->out, 1);
  rlx__shm_ring_fence(&s->in, 0);
  return 0;
fail:
  rlx__shm_seg_close(s);
  return rc;
}

long rlx__shm_seg_send(const struct rlx__shm_seg *s, int sock, const void *data, size_t len) {
  return rlx__send_with_fd(sock, s->memfd, data, len);
}

long rlx__send_with_fd(int sock, int fd, const void *data, size_t len) {
  union {
    char buf[CMSG_SPACE(sizeof(int))];
    struct cmsghdr align;
  } ctl;
  struct iovec iov = {(void *)data, len};
  struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl.buf,
                     .msg_controllen = sizeof(ctl.buf)};
  memset(ctl.buf, 0, sizeof(ctl.buf));
  struct cmsghdr *c = CMSG_FIRSTHDR(&m);
  c->cmsg_level = SOL_SOCKET;
  c->cmsg_type = SCM_RIGHTS;
  c->cmsg_len = CMSG_LEN(sizeof(int));
  memcpy(CMSG_DATA(c), &fd, sizeof(int));
  ssize_t n;
  do
    n = sendmsg(sock, &m, MSG_NOSIGNAL | MSG_DONTWAIT);
  while (n < 0 && errno == EINTR);
  return n < 0 ? -errno : (long)n;
}

int rlx__shm_seg_map(struct rlx__shm_seg *s, int fd) {
  int rc = 0;
  clear(s);
  struct stat st;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size <= 0 ||
      fcntl(fd, F_GET_SEALS) != (F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL)) {
    rc = -EPROTO; /* not a memfd sealed at its size: it could shrink under us */
    goto fail;
  }
  s->len = (size_t)st.st_size;
  s->base = mmap(NULL, s->len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (s->base == MAP_FAILED) {
    s->base = NULL;
    rc = -errno;
    goto fail;
  }
  prefault(s);
  close(fd);
  fd = -1;
  /* The creator's ring A (its out) is our in; ring B follows it. */
  struct rlx__shm_ring *a = s->base;
  if (rlx__shm_ring_attach(&s->in, a, s->len / 2) != 0 ||
      ring_span(s->in.cap) * 2 != s->len ||
      rlx__shm_ring_attach(&s->out, (void *)((char *)s->base + s->len / 2), s->len / 2) != 0 ||
      s->out.cap != s->in.cap) {
    rc = -EPROTO;
    goto fail;
  }
  rlx__shm_ring_fence(&s->in, 0);
  rlx__shm_ring_fence(&s->out, 1);
  return 0;
fail:
  if (fd >= 0)
    close(fd);
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
  clear(s);
}
