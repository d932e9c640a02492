/* A waiting caller reads the sockets it waits on itself (those of a
 * pollable transport, transport.h: TCP's): recv() with
 * MSG_DONTWAIT, before libuv's epoll_wait, on the connections of peers
 * with a receive posted (or a frame half read). An arriving frame then
 * costs one syscall instead of two (epoll_wait, then read) on the path
 * every small collective waits on, as the shared-memory rings are polled
 * without libuv. The bytes go through the same reader as libuv's
 * (rlx__read_alloc, rlx__read_cb); an error or the end of the stream too.
 * Unix sockets are left to libuv: they may carry a descriptor
 * (SCM_RIGHTS), which a plain recv() would drop. */
#include <errno.h>
#include <sys/socket.h>
#include "p2p_internal.h"

void rlx__sock_watch(struct rlx__p2p *p, int peer) {
  struct rlx__p2p_peer *pe = &p->peers[peer];
  if (pe->watched || !pe->tr->pollable)
    return;
  pe->watched = 1;
  p->watch[p->nwatch++] = peer;
}

/* Still worth a recv(): ready, on a socket, and something expected. */
static int wanted(const struct rlx__p2p_peer *pe) {
  const struct rlx__p2p_conn *c = pe->conn;
  if (c == NULL || c->state != C_READY || !c->tr->pollable)
    return 0;
  return !rlx__list_empty(&pe->posted) || pe->msg_waits > 0 || c->target != NULL || c->um != NULL || c->got > 0;
}

/* One recv() into where the reader wants the next bytes. c may be gone
 * after it (a callback can close it). */
static size_t read_some(struct rlx__p2p_conn *c) {
  uv_os_fd_t fd;
  if (uv_fileno(&c->h.handle, &fd) != 0)
    return 0;
  uv_buf_t b;
  rlx__read_alloc(&c->h.handle, RLX__STAGE_SIZE, &b);
  ssize_t n = recv(fd, b.base, b.len, MSG_DONTWAIT);
  if (n > 0) {
    rlx__read_cb(&c->h.stream, n, &b);
    return (size_t)n;
  }
  if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
    return 0;
  rlx__read_cb(&c->h.stream, n == 0 ? UV_EOF : uv_translate_sys_error(errno), &b);
  return 1;
}

size_t rlx__sock_poll(struct rlx__p2p *p) {
  size_t moved = 0;
  /* by index: a callback may post receives (appending) or fail peers */
  for (int i = 0; i < p->nwatch;) {
    int peer = p->watch[i];
    struct rlx__p2p_peer *pe = &p->peers[peer];
    if (!wanted(pe)) {
      pe->watched = 0;
      p->watch[i] = p->watch[--p->nwatch];
      continue;
    }
    moved += read_some(pe->conn);
    i++;
  }
  return moved;
}
