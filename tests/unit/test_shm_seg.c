/* The pair segment's handover: a forked peer makes it and sends it over a
 * Unix socket pair with a few bytes of data; both directions carry bytes,
 * and a sleeping side is woken by one byte on the socket (the doorbell a
 * rank uses); a descriptor that is not a sealed memfd, or one whose header
 * is garbage, is refused and closed; nothing stays open once both sides
 * close, also when the creator was killed. */
#include <check.h>
#include "suite.h"
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <fcntl.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>
#include "transport/shm_seg.h"

static int open_fds(void) {
  int n = 0;
  DIR *d = opendir("/proc/self/fd");
  for (struct dirent *e; d && (e = readdir(d));)
    n += e->d_name[0] != '.';
  if (d)
    closedir(d);
  return n - 1; /* the directory's own descriptor */
}

/* Wait until the in ring has bytes, sleeping on the socket as a rank
 * would; 0 when they came within 10 s. */
static int wait_readable(struct rlx__shm_seg *s, int sock) {
  for (int i = 0; i < 1000; i++) {
    if (rlx__shm_ring_readable(&s->in))
      return 0;
    if (rlx__shm_ring_prepare_sleep(&s->in) == 0) {
      struct pollfd p = {sock, POLLIN, 0};
      if (poll(&p, 1, 10) == 1) {
        char b[16];
        ssize_t n = read(sock, b, sizeof b);
        (void)n;
      }
    }
    rlx__shm_ring_awake(&s->in);
  }
  return -1;
}

static void put_str(struct rlx__shm_seg *s, int sock, const char *m) {
  struct iovec iov = {(void *)m, strlen(m) + 1};
  size_t n = rlx__shm_ring_write(&s->out, &iov, 1);
  if (n != iov.iov_len)
    abort();
  if (rlx__shm_ring_wake_needed(&s->out) && write(sock, "!", 1) != 1)
    abort();
}

/* One message with data and up to 4 descriptors, as the acceptor's
 * libuv receives it; returns the data length and the descriptors. */
static ssize_t recv_fds(int sock, char *data, size_t len, int *fds, int *nfds) {
  union {
    char buf[CMSG_SPACE(sizeof(int) * 4)];
    struct cmsghdr align;
  } ctl;
  struct iovec iov = {data, len};
  struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl.buf,
                     .msg_controllen = sizeof(ctl.buf)};
  ssize_t n = recvmsg(sock, &m, MSG_CMSG_CLOEXEC);
  *nfds = 0;
  for (struct cmsghdr *c = CMSG_FIRSTHDR(&m); c; c = CMSG_NXTHDR(&m, c)) {
    size_t k = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
    for (size_t i = 0; i < k && *nfds < 4; i++)
      memcpy(&fds[(*nfds)++], CMSG_DATA(c) + i * sizeof(int), sizeof(int));
  }
  return n;
}

/* Fork a peer that makes a segment of cap bytes a ring, sends it over a
 * socket pair and then runs then(); the parent maps the segment into *s
 * and gets the child's pid. */
static pid_t fork_creator(size_t cap, void (*then)(struct rlx__shm_seg *, int),
                          struct rlx__shm_seg *s, int *sock) {
  int sv[2];
  ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
  pid_t pid = fork();
  ck_assert_int_ge(pid, 0);
  if (pid == 0) {
    close(sv[0]);
    struct rlx__shm_seg mine;
    if (rlx__shm_seg_create(&mine, cap) != 0 || rlx__shm_seg_send(&mine, sv[1], "proof!", 6) != 6)
      _exit(2);
    then(&mine, sv[1]);
    rlx__shm_seg_close(&mine);
    _exit(0);
  }
  close(sv[1]);
  char data[16];
  int fds[4], nfds;
  ck_assert_int_eq(recv_fds(sv[0], data, sizeof data, fds, &nfds), 6);
  ck_assert_int_eq(memcmp(data, "proof!", 6), 0);
  ck_assert_int_eq(nfds, 1);
  ck_assert_int_eq(rlx__shm_seg_map(s, fds[0]), 0);
  *sock = sv[0];
  return pid;
}

static void creator_talks(struct rlx__shm_seg *s, int sock) {
  put_str(s, sock, "from the creator");
  char buf[64];
  if (wait_readable(s, sock) != 0)
    _exit(3);
  size_t n = rlx__shm_ring_read(&s->in, buf, sizeof buf);
  if (n != strlen("from the receiver") + 1 || strcmp(buf, "from the receiver") != 0)
    _exit(4);
}

static void creator_waits(struct rlx__shm_seg *s, int sock) {
  (void)s;
  (void)sock;
  pause();
}

START_TEST(handover_and_both_ways) {
  int before = open_fds(), sock;
  struct rlx__shm_seg s;
  pid_t pid = fork_creator(4096, creator_talks, &s, &sock);
  ck_assert_uint_eq(s.in.cap, 4096);
  ck_assert_int_eq(s.memfd, -1); /* the mapping is all the receiver keeps */
  ck_assert_int_eq(wait_readable(&s, sock), 0);
  char buf[64];
  ck_assert_uint_eq(rlx__shm_ring_read(&s.in, buf, sizeof buf), strlen("from the creator") + 1);
  ck_assert_str_eq(buf, "from the creator");
  put_str(&s, sock, "from the receiver");
  int st;
  ck_assert_int_eq(waitpid(pid, &st, 0), pid);
  ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "creator status %d", st);
  rlx__shm_seg_close(&s);
  close(sock);
  ck_assert_int_eq(open_fds(), before); /* nothing of the segment left open here */
}
END_TEST

START_TEST(wrong_descriptors_refused) {
  int before = open_fds();
  struct rlx__shm_seg s;
  /* not a memfd at all */
  int e1 = eventfd(0, EFD_CLOEXEC);
  ck_assert_int_eq(rlx__shm_seg_map(&s, e1), -EPROTO);
  /* an unsealed memfd a peer could shrink */
  int mf = memfd_create("not-sealed", MFD_CLOEXEC);
  ck_assert_int_eq(ftruncate(mf, 1 << 16), 0);
  ck_assert_int_eq(rlx__shm_seg_map(&s, mf), -EPROTO);
  /* sealed, but the header inside is garbage */
  int sf = memfd_create("garbage", MFD_CLOEXEC | MFD_ALLOW_SEALING);
  ck_assert_int_eq(ftruncate(sf, 1 << 16), 0);
  ck_assert_int_eq(fcntl(sf, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL), 0);
  ck_assert_int_eq(rlx__shm_seg_map(&s, sf), -EPROTO);
  /* sealed, a sane first ring but a second of another capacity */
  struct rlx__shm_seg good;
  ck_assert_int_eq(rlx__shm_seg_create(&good, 8192), 0);
  ((struct rlx__shm_ring *)((char *)good.base + good.len / 2))->capacity = 4096;
  int dup_fd = dup(good.memfd);
  ck_assert_int_eq(rlx__shm_seg_map(&s, dup_fd), -EPROTO);
  rlx__shm_seg_close(&good);
  ck_assert_int_eq(open_fds(), before); /* every refused descriptor was closed */
}
END_TEST

/* A creator killed with SIGKILL leaves nothing: once the receiver closes
 * its side, no descriptor and no mapping of the segment remain. */
START_TEST(killed_peer_leaves_nothing) {
  int before = open_fds(), sock;
  struct rlx__shm_seg s;
  pid_t pid = fork_creator(1 << 16, creator_waits, &s, &sock);
  kill(pid, SIGKILL);
  int st;
  waitpid(pid, &st, 0);
  rlx__shm_seg_close(&s);
  close(sock);
  ck_assert_int_eq(open_fds(), before);
  /* no mapping of it either */
  FILE *f = fopen("/proc/self/maps", "r");
  char line[512];
  int found = 0;
  while (f && fgets(line, sizeof line, f))
    found |= strstr(line, "rlxcoll-shm") != NULL;
  if (f)
    fclose(f);
  ck_assert_msg(!found, "a mapping of the segment survived");
}
END_TEST

Suite *shm_seg_suite(void) {
  Suite *s = suite_create("shm_seg");
  TCase *t = tcase_create("seg");
  tcase_set_timeout(t, 60);
  tcase_add_test(t, handover_and_both_ways);
  tcase_add_test(t, wrong_descriptors_refused);
  tcase_add_test(t, killed_peer_leaves_nothing);
  suite_add_tcase(s, t);
  return s;
}

int main(void) { return rlx_run_suite(shm_seg_suite()); }
