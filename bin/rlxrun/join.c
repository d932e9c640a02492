/* A job that may grow (--max-np) tells joiners where it is: a file, 0600
 * in rlxrun's job directory, holding the rendezvous address, the job key
 * and the cpus its ranks on this host are bound to ("cpus LIST", so that
 * joiners keep off them); rlxrun --join reads it (or takes HOST:PORT with
 * the key in RLX_JOB_KEY). The key never goes on a command line. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "join.h"

int join_file_write(const char *dir, const char *rdv, const char *key, const char *cpus,
                    char *path, size_t len) {
  snprintf(path, len, "%s/join", dir);
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0)
    return -errno;
  FILE *f = fdopen(fd, "w");
  if (f == NULL) {
    close(fd);
    return -ENOMEM;
  }
  fprintf(f, "%s\n%s\ncpus %s\n", rdv, key, *cpus ? cpus : "-");
  return fclose(f) == 0 ? 0 : -EIO;
}

int join_target(const char *spec, char *rdv, size_t rlen, char *key, size_t klen, char *cpus,
                size_t clen) {
  FILE *f = fopen(spec, "r");
  if (clen)
    cpus[0] = '\0';
  if (f != NULL) {
    char a[256] = "", k[256] = "", c[512] = "";
    int ok = fscanf(f, "%255s %255s", a, k) == 2;
    if (ok && fscanf(f, " cpus %511s", c) == 1 && strcmp(c, "-") != 0)
      snprintf(cpus, clen, "%s", c);
    fclose(f);
    if (!ok || strchr(a, ':') == NULL) {
      fprintf(stderr, "rlxrun: --join %s: expected the file a job started with --max-np wrote "
                      "(its rendezvous address and key)\n", spec);
      return -1;
    }
    snprintf(rdv, rlen, "%s", a);
    snprintf(key, klen, "%s", k);
    return 0;
  }
  const char *colon = strrchr(spec, ':');
  const char *env = getenv("RLX_JOB_KEY");
  if (colon == NULL || colon == spec || colon[1] == '\0') {
    fprintf(stderr, "rlxrun: --join %s: no such file, and not HOST:PORT\n", spec);
    return -1;
  }
  if (env == NULL || *env == '\0') {
    fprintf(stderr, "rlxrun: --join %s: the job's key is needed: set RLX_JOB_KEY, or give the "
                    "file the job's rlxrun wrote\n", spec);
    return -1;
  }
  snprintf(rdv, rlen, "%s", spec);
  snprintf(key, klen, "%s", env);
  return 0;
}
