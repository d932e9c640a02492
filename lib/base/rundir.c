/* A rank's private run directory (its Unix socket lives there), and the
 * sweep of ones that ranks killed before rlx_finalize left behind. Ranks
 * rlxrun starts use its job directory, which it removes when it exits; a
 * rank started by hand uses TMPDIR (or /tmp), where nobody would. So each
 * directory is named after its process, rlx-RANK-PID-XXXXXX, and a rank
 * starting there removes those of this user whose process is gone. */
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "base/internal.h"

/* Remove base/name if it is a run directory of ours whose process is
 * gone: what a killed rank leaves is its socket, nothing else. */
static void sweep_one(const char *base, const char *name) {
  int rank;
  long pid;
  char tail[16], path[512], sock[520];
  if (sscanf(name, "rlx-%d-%ld-%15s", &rank, &pid, tail) != 3 || pid <= 1 || strlen(tail) != 6)
    return;
  if (kill((pid_t)pid, 0) == 0 || errno != ESRCH)
    return; /* alive (or not ours to ask): keep it */
  snprintf(path, sizeof(path), "%s/%s", base, name);
  struct stat st;
  if (lstat(path, &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != getuid())
    return;
  snprintf(sock, sizeof(sock), "%s/s", path);
  unlink(sock);
  if (rmdir(path) == 0)
    rlx__debug("removed %s, left by rank %d (pid %ld, gone)", path, rank, pid);
}

void rlx__rundir_sweep(const char *base) {
  DIR *d = opendir(base);
  if (d == NULL)
    return;
  struct dirent *e;
  while ((e = readdir(d)) != NULL)
    if (strncmp(e->d_name, "rlx-", 4) == 0)
      sweep_one(base, e->d_name);
  closedir(d);
}

int rlx__rundir_make(char *out, size_t len, const char *base, int rank) {
  rlx__rundir_sweep(base);
  snprintf(out, len, "%s/rlx-%d-%ld-XXXXXX", base, rank, (long)getpid());
  if (mkdtemp(out) == NULL)
    return -errno;
  chmod(out, 0700);
  return 0;
}
