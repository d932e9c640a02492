/* The remote command line. The job key is not on it: the remote shell
 * reads it from standard input, which rlxrun writes and closes, so it
 * never shows in ps or in the remote shell's history. */
#include <stdlib.h>
#include <string.h>
#include "remote.h"

/* Append s single-quoted for sh ('it'\''s'). */
static void quote(char **out, size_t *len, size_t *cap, const char *s) {
  size_t need = *len + 4 * strlen(s) + 4;
  if (need > *cap) {
    size_t c = need * 2;
    char *n = realloc(*out, c);
    if (!n)
      return;
    *out = n;
    *cap = c;
  }
  char *o = *out + *len;
  *o++ = '\'';
  for (; *s; s++) {
    if (*s == '\'') {
      memcpy(o, "'\\''", 4);
      o += 4;
    } else
      *o++ = *s;
  }
  *o++ = '\'';
  *o++ = ' ';
  *o = '\0';
  *len = (size_t)(o - *out);
}

static void raw(char **out, size_t *len, size_t *cap, const char *s) {
  size_t n = strlen(s);
  if (*len + n + 1 > *cap) {
    size_t c = (*len + n + 1) * 2;
    char *m = realloc(*out, c);
    if (!m)
      return;
    *out = m;
    *cap = c;
  }
  memcpy(*out + *len, s, n + 1);
  *len += n;
}

char **remote_argv(const char *rsh, const char *host, const char *cwd, char *const *kv,
                   char *const *prog) {
  size_t len = 0, cap = 256;
  char *cmd = malloc(cap);
  if (!cmd)
    return NULL;
  cmd[0] = '\0';
  if (cwd) {
    raw(&cmd, &len, &cap, "cd ");
    quote(&cmd, &len, &cap, cwd);
    raw(&cmd, &len, &cap, "2>/dev/null; ");
  }
  raw(&cmd, &len, &cap, "IFS= read -r RLX_JOB_KEY && export RLX_JOB_KEY && exec env ");
  for (int i = 0; kv[i]; i++)
    quote(&cmd, &len, &cap, kv[i]);
  for (int i = 0; prog[i]; i++)
    quote(&cmd, &len, &cap, prog[i]);
  /* rsh's words (spaces separate them; no quoting), then host and command. */
  char *words = strdup(rsh && *rsh ? rsh : "ssh");
  int n = 0;
  for (char *p = words; p && *p; p++)
    if (*p != ' ' && (p == words || p[-1] == ' '))
      n++;
  char **argv = calloc((size_t)n + 3, sizeof(char *));
  if (!words || !argv) {
    free(words);
    free(argv);
    free(cmd);
    return NULL;
  }
  int k = 0;
  char *save;
  for (char *t = strtok_r(words, " ", &save); t; t = strtok_r(NULL, " ", &save))
    argv[k++] = strdup(t);
  free(words);
  argv[k++] = strdup(host);
  argv[k++] = cmd;
  argv[k] = NULL;
  return argv;
}

void remote_argv_free(char **argv) {
  for (int i = 0; argv && argv[i]; i++)
    free(argv[i]);
  free(argv);
}
