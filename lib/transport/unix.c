/* Unix-domain socket transport, for peers on the same host: a socket file
 * in the rank's private 0700 run directory, open to our own user only. */
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>
#include "bootstrap/bootstrap.h"
#include "p2p_internal.h"

static int unix_listen(uv_loop_t *loop, union rlx__stream_handle *h, const char *where,
                       char *addr_out, size_t addr_len, uv_connection_cb cb) {
  int rc;
  if ((rc = uv_pipe_init(loop, &h->pipe, 0)) != 0)
    return rc;
  if ((rc = uv_pipe_bind(&h->pipe, where)) != 0 || (rc = uv_listen(&h->stream, 128, cb)) != 0)
    return rc;
  chmod(where, 0600);
  snprintf(addr_out, addr_len, "%s", where);
  return 0;
}

static int unix_connect(uv_loop_t *loop, union rlx__stream_handle *h, uv_connect_t *req,
                        const char *addr, uv_connect_cb cb) {
  int rc;
  /* ipc too: the collectives' group segments come either way (shm.c) */
  if ((rc = uv_pipe_init(loop, &h->pipe, 1)) != 0)
    return rc;
  uv_pipe_connect(req, &h->pipe, addr, cb);
  return 0;
}

static int unix_accept(uv_loop_t *loop, uv_stream_t *server, union rlx__stream_handle *h) {
  int rc;
  /* ipc: libuv reads with recvmsg and keeps a descriptor that comes with
   * the bytes, as the dialer's shared segment does (shm.c) */
  if ((rc = uv_pipe_init(loop, &h->pipe, 1)) != 0)
    return rc;
  return uv_accept(server, &h->stream);
}

static char *unix_card_addr(struct rlx__card *card, size_t *cap) {
  *cap = sizeof(card->unix_path);
  return card->unix_path;
}

/* Host identities are equal only on one host (host.c says how they are
 * made), and the socket is a file there. */
static int unix_reaches(const struct rlx__card *me, const struct rlx__card *them) {
  return them->unix_path[0] != '\0' && strcmp(me->host, them->host) == 0;
}

/* Our own user only: another user's process has no business here, key or
 * not (the run directory is 0700 as well). */
static int unix_admit(uv_stream_t *s, char *label, size_t len) {
  struct ucred cred;
  socklen_t clen = sizeof(cred);
  uv_os_fd_t fd;
  snprintf(label, len, "unix socket");
  if (uv_fileno((uv_handle_t *)s, &fd) != 0 ||
      getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &clen) != 0)
    return 0;
  if (cred.uid != getuid()) {
    snprintf(label, len, "dropped a connection on our Unix socket from pid %d of uid %u (not ours)",
             (int)cred.pid, (unsigned)cred.uid);
    return -1;
  }
  snprintf(label, len, "unix socket, pid %d uid %u", (int)cred.pid, (unsigned)cred.uid);
  return 0;
}

const struct rlx__transport_ops rlx__unix_transport = {
    .name = "unix",
    .same_host = 1,
    .card_addr = unix_card_addr,
    .reaches = unix_reaches,
    .listen = unix_listen,
    .connect = unix_connect,
    .accept = unix_accept,
    .admit = unix_admit,
    .retransmissions = NULL,
    /* (libuv reads it: a descriptor may come with the bytes) */
    .pollable = 0,
    RLX__STREAM_DATA_PATH,
};
