/* A rank started by rlxrun dies with it. rlxrun hands every local rank the
 * read end of a pipe whose write end only rlxrun holds (RLX_LAUNCHER_FD);
 * the progress loop watches it, and its end of file means rlxrun is gone
 * (killed, or dead of SIGPIPE when its output's reader left): the rank
 * says so, removes its run directory, and exits, instead of running on as
 * an orphan nobody reads or stops. (A rank that never calls rlx_init, or
 * runs on another host, is not covered: ssh closes the latter's session.) */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "base/internal.h"
#include "runtime/runtime.h"

static uv_pipe_t watch;
static int watching;
static char buf[64];

static void on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *b) {
  (void)h;
  (void)suggested;
  *b = uv_buf_init(buf, sizeof(buf));
}

static void on_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *b) {
  (void)s;
  (void)b;
  if (nread >= 0)
    return; /* rlxrun writes nothing; bytes would be a stranger's: ignore */
  struct rlx__runtime *rt = &rlx__rt;
  fprintf(stderr, "rlxcoll[%d] error: rlxrun, which started this rank, is gone: exiting\n",
          rt->cfg.rank);
  if (rt->unix_path[0])
    unlink(rt->unix_path);
  if (rt->rundir[0])
    rmdir(rt->rundir);
  _exit(1);
}

void rlx__watch_launcher(uv_loop_t *loop) {
  const char *v = getenv("RLX_LAUNCHER_FD"), *l = getenv("RLX_LAUNCHER");
  long fd;
  struct stat st;
  if (watching || v == NULL || l == NULL || strcmp(l, "rlxrun") != 0 ||
      rlx__parse_long(v, 3, 1 << 20, &fd) != 0 || fstat((int)fd, &st) != 0 ||
      !S_ISFIFO(st.st_mode))
    return;
  /* our own copy, kept from the programs we exec (they would not hold the
   * write end anyway: only rlxrun does) */
  int mine = fcntl((int)fd, F_DUPFD_CLOEXEC, 0);
  if (mine < 0)
    return;
  if (uv_pipe_init(loop, &watch, 0) != 0 || uv_pipe_open(&watch, mine) != 0) {
    close(mine);
    return;
  }
  uv_read_start((uv_stream_t *)&watch, on_alloc, on_read);
  uv_unref((uv_handle_t *)&watch); /* not a reason for the loop to run */
  watching = 1;
}

void rlx__unwatch_launcher(void) {
  if (!watching)
    return;
  uv_close((uv_handle_t *)&watch, NULL);
  watching = 0;
}
