/* --host and --hostfile: a list of hosts with slots, filled in order. */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "hosts.h"

static int add(struct hostlist *hl, const char *name, size_t len, long slots, const char *where) {
  if (len == 0 || len >= sizeof hl->h[0].name) {
    fprintf(stderr, "rlxrun: %s: host name '%.*s' is empty or too long\n", where, (int)len, name);
    return -1;
  }
  for (size_t i = 0; i < len; i++)
    if (!(isalnum((unsigned char)name[i]) || strchr(".-_:@[]", name[i]))) {
      fprintf(stderr, "rlxrun: %s: '%.*s' is not a host name\n", where, (int)len, name);
      return -1;
    }
  if (slots < 1 || slots > 4096) {
    fprintf(stderr, "rlxrun: %s: %ld slots for %.*s; want 1 to 4096\n", where, slots, (int)len,
            name);
    return -1;
  }
  struct host_slot *n = realloc(hl->h, sizeof *n * (size_t)(hl->n + 1));
  if (!n)
    return -1;
  hl->h = n;
  memcpy(n[hl->n].name, name, len);
  n[hl->n].name[len] = '\0';
  n[hl->n].slots = (int)slots;
  hl->n++;
  return 0;
}

static int parse_slots(const char *s, long *out) {
  char *end;
  errno = 0;
  long v = strtol(s, &end, 10);
  if (errno || end == s || *end)
    return -1;
  *out = v;
  return 0;
}

int hosts_parse_list(struct hostlist *hl, const char *spec) {
  char buf[4096];
  if (strlen(spec) >= sizeof buf) {
    fprintf(stderr, "rlxrun: --host list too long\n");
    return -1;
  }
  snprintf(buf, sizeof buf, "%s", spec);
  char *save;
  for (char *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
    char *colon = strrchr(t, ':');
    long slots = 1;
    if (colon && parse_slots(colon + 1, &slots) != 0) {
      fprintf(stderr, "rlxrun: --host \"%s\": slots after ':' must be a number\n", t);
      return -1;
    }
    if (add(hl, t, colon ? (size_t)(colon - t) : strlen(t), slots, "--host") != 0)
      return -1;
  }
  if (hl->n == 0) {
    fprintf(stderr, "rlxrun: --host \"%s\" names no host\n", spec);
    return -1;
  }
  return 0;
}

int hosts_parse_file(struct hostlist *hl, const char *path) {
  FILE *f = fopen(path, "r");
  if (!f) {
    fprintf(stderr, "rlxrun: --hostfile %s: %s\n", path, strerror(errno));
    return -1;
  }
  char line[512], where[600];
  int lineno = 0, rc = 0, before = hl->n;
  while (rc == 0 && fgets(line, sizeof line, f)) {
    lineno++;
    snprintf(where, sizeof where, "%s:%d", path, lineno);
    char *hash = strchr(line, '#');
    if (hash)
      *hash = '\0';
    char *save, *name = strtok_r(line, " \t\r\n", &save);
    if (!name)
      continue;
    long slots = 1;
    for (char *kv = strtok_r(NULL, " \t\r\n", &save); kv && rc == 0;
         kv = strtok_r(NULL, " \t\r\n", &save)) {
      if (!strncmp(kv, "slots=", 6) && parse_slots(kv + 6, &slots) == 0)
        continue;
      if (!strncmp(kv, "max_slots=", 10))
        continue; /* Open MPI's; we do not oversubscribe a host anyway */
      fprintf(stderr, "rlxrun: %s: '%s' is not slots=N\n", where, kv);
      rc = -1;
    }
    if (rc == 0)
      rc = add(hl, name, strlen(name), slots, where);
  }
  fclose(f);
  if (rc == 0 && hl->n == before) {
    fprintf(stderr, "rlxrun: --hostfile %s names no host\n", path);
    rc = -1;
  }
  return rc;
}

int hosts_total_slots(const struct hostlist *hl) {
  int t = 0;
  for (int i = 0; i < hl->n; i++)
    t += hl->h[i].slots;
  return t;
}

int hosts_of_rank(const struct hostlist *hl, int r, int *local_rank) {
  for (int i = 0; i < hl->n; i++) {
    if (r < hl->h[i].slots) {
      *local_rank = r;
      return i;
    }
    r -= hl->h[i].slots;
  }
  return -1;
}

int hosts_count_on(const struct hostlist *hl, int h, int nranks) {
  int first = 0;
  for (int i = 0; i < h; i++)
    first += hl->h[i].slots;
  int n = nranks - first;
  return n < 0 ? 0 : n > hl->h[h].slots ? hl->h[h].slots : n;
}

int hosts_is_local(const char *name) {
  char me[256];
  if (!strcmp(name, "localhost") || !strcmp(name, "127.0.0.1"))
    return 1;
  return gethostname(me, sizeof me) == 0 && !strcmp(me, name);
}
