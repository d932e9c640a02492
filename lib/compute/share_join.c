/* Which process of a job serves device D on this host (share.h): the
 * first rank to bind the job's socket for it serves it (share_serve.c);
 * the others connect and compute there through the remote backend
 * (share_client.c). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>
#include "compute/share.h"
#include "base/internal.h"

/* RLX_DEVICE_SHARE: 1 (any device), 0, or auto (-1, the default: GPUs,
 * which run two processes' contexts time-sliced; a CPU device does not). */
static int share_mode(int *mode) {
  const char *e = getenv("RLX_DEVICE_SHARE");
  if (!e || !*e || strcmp(e, "auto") == 0)
    *mode = -1;
  else if (strcmp(e, "0") == 0 || strcmp(e, "1") == 0)
    *mode = e[0] - '0';
  else
    return rlx__err(RLX_ERR_ARG, "RLX_DEVICE_SHARE=\"%.40s\": expected auto, 0 or 1", e);
  return RLX_OK;
}

int rlx__share_join(int d, const char *name, int is_gpu, const struct rlx__layout *lo,
                    float momentum, struct rlx__backend **out, char *why, size_t whylen) {
  int mode = -1, rc = share_mode(&mode);
  if (rc != RLX_OK) {
    snprintf(why, whylen, "%s", rlx_errmsg());
    return rc;
  }
  const char *dir = getenv("RLX_RUNDIR");
  if (mode == 0 || (mode < 0 && !is_gpu))
    return RLX__SHARE_SELF;
  if (!dir || !*dir) {
    if (mode < 0)
      return RLX__SHARE_SELF; /* not started by rlxrun: no job directory to meet in */
    snprintf(why, whylen, "RLX_DEVICE_SHARE=1, but RLX_RUNDIR is not set (ranks rlxrun starts "
             "share a device through their job's directory)");
    return RLX_ERR_ARG;
  }
  struct sockaddr_un sa = {.sun_family = AF_UNIX};
  if ((size_t)snprintf(sa.sun_path, sizeof sa.sun_path, "%s/compute-%d", dir, d) >=
      sizeof sa.sun_path) {
    rlx__info("compute: RLX_RUNDIR is too long for a socket: device %d not shared", d);
    return RLX__SHARE_SELF;
  }
  int fd = -1;
  /* The first to bind serves; the rest connect. A socket left by a server
   * that died refuses connections: it is removed and bound again, once. */
  for (int tries = 0; tries < 2; tries++) {
    fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
    if (fd < 0)
      break;
    if (bind(fd, (struct sockaddr *)&sa, sizeof sa) == 0) {
      if (listen(fd, 64) != 0 || (rc = rlx__share_serve(fd, d, why, whylen)) != RLX_OK) {
        close(fd);
        unlink(sa.sun_path);
        return RLX__SHARE_SELF;
      }
      rlx__info("compute: serving OpenCL device %d (%s) to this job's other ranks on this host",
                d, name);
      return RLX__SHARE_SELF;
    }
    close(fd);
    fd = -1;
    if (errno != EADDRINUSE)
      break;
    /* bound but not listening yet (a moment), or left behind */
    for (int i = 0; i < 100; i++) {
      fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
      if (fd >= 0 && connect(fd, (struct sockaddr *)&sa, sizeof sa) == 0)
        return rlx__share_remote(fd, sa.sun_path, d, name, lo, momentum, out, why, whylen);
      int e = errno;
      if (fd >= 0)
        close(fd);
      fd = -1;
      if (e != ECONNREFUSED && e != EAGAIN)
        break;
      nanosleep(&(struct timespec){0, 10 * 1000 * 1000}, NULL);
    }
    unlink(sa.sun_path);
  }
  rlx__info("compute: device %d not shared: %s", d, strerror(errno));
  return RLX__SHARE_SELF;
}
