/* Blocking TCP helpers with deadlines for the bootstrap: connect with retry
 * (a rank may start before the rendezvous is up), full reads and writes that
 * give up at the deadline instead of hanging. */
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <arpa/inet.h>
#include <time.h>
#include <unistd.h>
#include "bootstrap.h"

uint64_t rlx__bs_now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

uint64_t rlx__bs_realtime_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static int ms_left(uint64_t deadline) {
  if (deadline == 0)
    return 1000;
  uint64_t now = rlx__bs_now_ns();
  if (now >= deadline)
    return 0;
  uint64_t ms = (deadline - now) / 1000000u + 1;
  return ms > 1000 ? 1000 : (int)ms;
}

static int split_hostport(const char *hp, char *host, size_t hl, char *port, size_t pl) {
  const char *colon = strrchr(hp, ':');
  size_t n;
  if (colon == NULL || colon == hp)
    return -EINVAL;
  n = (size_t)(colon - hp);
  if (hp[0] == '[' && n >= 2 && hp[n - 1] == ']') {
    hp++;
    n -= 2;
  }
  if (n >= hl || strlen(colon + 1) >= pl)
    return -EINVAL;
  memcpy(host, hp, n);
  host[n] = '\0';
  snprintf(port, pl, "%s", colon + 1);
  return 0;
}

/* hostport's stream addresses into *res (freeaddrinfo it): 0 or -errno. */
static int lookup(const char *hostport, struct addrinfo **res) {
  char host[256], port[16];
  struct addrinfo hints;
  int rc;
  *res = NULL;
  if ((rc = split_hostport(hostport, host, sizeof(host), port, sizeof(port))) != 0)
    return rc;
  memset(&hints, 0, sizeof(hints));
  hints.ai_socktype = SOCK_STREAM;
  if (getaddrinfo(host, port, &hints, res) != 0 || *res == NULL)
    return -EHOSTUNREACH;
  return 0;
}

int rlx__sock_connect(const char *hostport, uint64_t deadline, int *fd_out) {
  struct addrinfo *res;
  int rc, err = -ECONNREFUSED;
  if ((rc = lookup(hostport, &res)) != 0)
    return rc;
  for (;;) {
    for (struct addrinfo *ai = res; ai != NULL; ai = ai->ai_next) {
      int fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, 0);
      if (fd < 0) {
        err = -errno;
        continue;
      }
      if (connect(fd, ai->ai_addr, ai->ai_addrlen) == 0) {
        int one = 1;
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
        freeaddrinfo(res);
        *fd_out = fd;
        return 0;
      }
      err = -errno;
      close(fd);
    }
    /* Refused or unreachable: the server may not be up yet; retry. */
    if (ms_left(deadline) == 0)
      break;
    struct timespec ts = {0, 50 * 1000 * 1000};
    nanosleep(&ts, NULL);
  }
  freeaddrinfo(res);
  return err;
}

int rlx__sock_connect_within(const char *hostport, int timeout_ms, int *fd_out) {
  struct addrinfo *res;
  int rc;
  *fd_out = -1;
  if ((rc = lookup(hostport, &res)) != 0)
    return rc;
  int fd = socket(res->ai_family, res->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) {
    freeaddrinfo(res);
    return -errno;
  }
  rc = connect(fd, res->ai_addr, res->ai_addrlen) == 0 ? 0 : -errno;
  freeaddrinfo(res);
  if (rc == -EINPROGRESS) {
    struct pollfd p = {fd, POLLOUT, 0};
    int n = poll(&p, 1, timeout_ms);
    int err = 0;
    socklen_t len = sizeof(err);
    if (n == 0)
      rc = -ETIMEDOUT;
    else if (n < 0)
      rc = -errno;
    else
      rc = getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0 ? -errno : -err;
  }
  if (rc != 0) {
    close(fd);
    return rc;
  }
  *fd_out = fd;
  return 0;
}

int rlx__sock_listen(const char *hostport, int *fd_out, char *bound, size_t bound_len) {
  char host[256], port[16], ip[INET6_ADDRSTRLEN];
  struct addrinfo hints, *res = NULL;
  struct sockaddr_storage ss;
  socklen_t sl = sizeof(ss);
  int fd, one = 1, rc;
  if ((rc = split_hostport(hostport, host, sizeof(host), port, sizeof(port))) != 0)
    return rc;
  memset(&hints, 0, sizeof(hints));
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE;
  if (getaddrinfo(host, port, &hints, &res) != 0 || res == NULL)
    return -EADDRNOTAVAIL;
  fd = socket(res->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    rc = -errno;
    freeaddrinfo(res);
    return rc;
  }
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  if (bind(fd, res->ai_addr, res->ai_addrlen) != 0 || listen(fd, 1024) != 0 ||
      getsockname(fd, (struct sockaddr *)&ss, &sl) != 0) {
    rc = -errno;
    close(fd);
    freeaddrinfo(res);
    return rc;
  }
  freeaddrinfo(res);
  if (ss.ss_family == AF_INET6) {
    inet_ntop(AF_INET6, &((struct sockaddr_in6 *)&ss)->sin6_addr, ip, sizeof(ip));
    snprintf(bound, bound_len, "[%s]:%d", ip, ntohs(((struct sockaddr_in6 *)&ss)->sin6_port));
  } else {
    inet_ntop(AF_INET, &((struct sockaddr_in *)&ss)->sin_addr, ip, sizeof(ip));
    snprintf(bound, bound_len, "%s:%d", ip, ntohs(((struct sockaddr_in *)&ss)->sin_port));
  }
  *fd_out = fd;
  return 0;
}

int rlx__sock_read_full(int fd, void *buf, size_t n, uint64_t deadline) {
  char *p = buf;
  while (n > 0) {
    struct pollfd pfd = {fd, POLLIN, 0};
    int t = ms_left(deadline);
    if (t == 0)
      return -ETIMEDOUT;
    int r = poll(&pfd, 1, t);
    if (r < 0 && errno != EINTR)
      return -errno;
    if (r <= 0)
      continue;
    ssize_t got = read(fd, p, n);
    if (got == 0)
      return -ECONNRESET;
    if (got < 0) {
      if (errno == EINTR || errno == EAGAIN)
        continue;
      return -errno;
    }
    p += got;
    n -= (size_t)got;
  }
  return 0;
}

int rlx__sock_write_full(int fd, const void *buf, size_t n, uint64_t deadline) {
  const char *p = buf;
  while (n > 0) {
    struct pollfd pfd = {fd, POLLOUT, 0};
    int t = ms_left(deadline);
    if (t == 0)
      return -ETIMEDOUT;
    int r = poll(&pfd, 1, t);
    if (r < 0 && errno != EINTR)
      return -errno;
    if (r <= 0)
      continue;
    ssize_t put = send(fd, p, n, MSG_NOSIGNAL);
    if (put < 0) {
      if (errno == EINTR || errno == EAGAIN)
        continue;
      return -errno;
    }
    p += put;
    n -= (size_t)put;
  }
  return 0;
}

int rlx__sock_local_ip(int fd, char *ip, size_t len) {
  struct sockaddr_storage ss;
  socklen_t sl = sizeof(ss);
  if (getsockname(fd, (struct sockaddr *)&ss, &sl) != 0)
    return -errno;
  if (ss.ss_family == AF_INET6)
    inet_ntop(AF_INET6, &((struct sockaddr_in6 *)&ss)->sin6_addr, ip, (socklen_t)len);
  else
    inet_ntop(AF_INET, &((struct sockaddr_in *)&ss)->sin_addr, ip, (socklen_t)len);
  return 0;
}
