/* Reading the ranks' reports (pid, flight recorder, statistics) out of
 * their standard error, and the tables rlxrun prints from them. */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "report.h"

#define FIELDS 10

struct call_rec {
  int have;
  unsigned comm;
  unsigned long long seq;
  char state[40];
  double dur;
  char call[160];
  char waiting[400];
};

struct stats_row {
  struct stats_row *next;
  char call[32];
  unsigned long long calls, bytes, errors;
  double secs;
  char bands[512];
};

struct rank_report {
  int pid;
  /* the dump being read, and the last whole one */
  int reading, done, fresh;
  char reason[300];
  int kept;
  unsigned long long calls;
  struct call_rec entered, completed;
  /* --stats */
  struct stats_row *stats;
  int have_conn;
  int nshm, nunix, ntcp;
  unsigned long retrans, strangers, corrupt;
};

static struct rank_report *rr;
static int nr;

void report_init(int nranks) {
  rr = calloc((size_t)nranks, sizeof(*rr));
  nr = rr ? nranks : 0;
}

/* Split s (modified) at tabs into at most max fields. */
static int split_tabs(char *s, char **f, int max) {
  int n = 0;
  while (n < max) {
    f[n++] = s;
    char *t = strchr(s, '\t');
    if (t == NULL)
      break;
    *t = '\0';
    s = t + 1;
  }
  return n;
}

static void take_flight_entry(struct rank_report *r, char **f, int n) {
  /* comm, seq, state, start, duration, call, algo, waiting */
  if (n < 7)
    return;
  struct call_rec c;
  memset(&c, 0, sizeof(c));
  c.have = 1;
  c.comm = (unsigned)strtoul(f[0], NULL, 10);
  c.seq = strtoull(f[1], NULL, 10);
  snprintf(c.state, sizeof(c.state), "%s", f[2]);
  c.dur = strtod(f[4], NULL);
  snprintf(c.call, sizeof(c.call), "%s", f[5]);
  if (n >= 8)
    snprintf(c.waiting, sizeof(c.waiting), "%s", f[7]);
  r->entered = c;
  if (strcmp(c.state, "in-flight") != 0)
    r->completed = c;
}

static void take_stats(struct rank_report *r, char **f, int n) {
  if (n < 6)
    return;
  struct stats_row *s = calloc(1, sizeof(*s)), **tail = &r->stats;
  if (s == NULL)
    return;
  snprintf(s->call, sizeof(s->call), "%s", f[0]);
  s->calls = strtoull(f[1], NULL, 10);
  s->bytes = strtoull(f[2], NULL, 10);
  s->secs = strtod(f[3], NULL);
  s->errors = strtoull(f[4], NULL, 10);
  snprintf(s->bands, sizeof(s->bands), "%s", f[5]);
  while (*tail)
    tail = &(*tail)->next;
  *tail = s;
}

int report_take(const char *line, size_t len) {
  char buf[2048], *f[FIELDS];
  /* srun --label and the like put something before it */
  const char *p = memmem(line, len, "rlxcoll[", 8);
  if (p == NULL || rr == NULL)
    return 0;
  size_t rest = len - (size_t)(p - line);
  if (rest >= sizeof(buf))
    return 0;
  memcpy(buf, p, rest);
  buf[rest] = '\0';
  char *end;
  long rank = strtol(buf + 8, &end, 10);
  if (end == buf + 8 || strncmp(end, "] ", 2) != 0 || rank < 0)
    return 0;
  char *word = end + 2, *tab = strchr(word, '\t');
  if (tab)
    *tab = '\0';
  /* A rank that joined a running job: its job index is no rank of ours;
   * its reports are taken (out of the output) into a record nobody reads. */
  static struct rank_report joiner;
  struct rank_report *r = rank < nr ? &rr[rank] : &joiner;
  int n = tab ? split_tabs(tab + 1, f, FIELDS) : 0;
  if (strcmp(word, "pid") == 0 && n >= 1) {
    r->pid = atoi(f[0]);
  } else if (strcmp(word, "flight-recorder") == 0 && n >= 3) {
    r->reading = 1;
    snprintf(r->reason, sizeof(r->reason), "%s", f[0]);
    r->kept = atoi(f[1]);
    r->calls = strtoull(f[2], NULL, 10);
    memset(&r->entered, 0, sizeof(r->entered));
    memset(&r->completed, 0, sizeof(r->completed));
  } else if (strcmp(word, "flight") == 0) {
    if (r->reading)
      take_flight_entry(r, f, n);
  } else if (strcmp(word, "flight-end") == 0) {
    r->reading = 0;
    r->done = r->fresh = 1;
  } else if (strcmp(word, "stats") == 0) {
    take_stats(r, f, n);
  } else if (strcmp(word, "stats-conn") == 0 && n >= 6) {
    r->have_conn = 1;
    r->nshm = atoi(f[0]);
    r->nunix = atoi(f[1]);
    r->ntcp = atoi(f[2]);
    r->retrans = strtoul(f[3], NULL, 10);
    r->strangers = strtoul(f[4], NULL, 10);
    r->corrupt = strtoul(f[5], NULL, 10);
  } else {
    return 0; /* a log line ("rlxcoll[2] info: ..."): the user's to see */
  }
  return 1;
}

int report_pid(int rank) { return rank >= 0 && rank < nr ? rr[rank].pid : 0; }

void report_flight_expect(void) {
  for (int r = 0; r < nr; r++)
    rr[r].done = 0;
}

int report_flight_done(int rank) { return rank >= 0 && rank < nr && rr[rank].done; }

static void describe(const struct call_rec *c, char *buf, size_t len) {
  if (!c->have)
    snprintf(buf, len, "-");
  else if (c->seq >> 63) /* the library's own exchange (a segment's set-up): no call number */
    snprintf(buf, len, "(set-up) %s", c->call);
  else
    snprintf(buf, len, "#%llu %s", c->seq, c->call);
}

/* A program's call on one of the first 64 communicators: one whose number
 * says how far a rank got (the library's own set-up calls have none). */
static int numbered(const struct call_rec *e) {
  return e->have && e->comm < 64 && !(e->seq >> 63);
}

int report_print_flight(FILE *f, const char *why) {
  int any = 0;
  for (int r = 0; r < nr; r++)
    any |= rr[r].fresh;
  if (!any)
    return 0;
  /* The furthest call entered on each communicator: a rank short of it is
   * behind (or stuck before it). */
  unsigned long long top[64] = {0};
  int seen[64] = {0};
  for (int r = 0; r < nr; r++) {
    const struct call_rec *e = &rr[r].entered;
    if (rr[r].fresh && numbered(e) && (!seen[e->comm] || e->seq > top[e->comm])) {
      top[e->comm] = e->seq;
      seen[e->comm] = 1;
    }
  }
  fprintf(f, "rlxrun: flight recorder (%s): last call entered and last completed, per rank\n",
          why);
  fprintf(f, "rlxrun:  rank  %-44s  %-44s  now\n", "last entered (#seq on its communicator)",
          "last completed");
  int n = 0, behind = 0;
  for (int r = 0; r < nr; r++) {
    const struct rank_report *rp = &rr[r];
    char a[200], b[200], now[480];
    if (!rp->fresh) {
      fprintf(f, "rlxrun:  %4d  %-44s  %-44s  no record (exited or did not answer)\n", r, "?",
              "?");
      continue;
    }
    n++;
    describe(&rp->entered, a, sizeof(a));
    describe(&rp->completed, b, sizeof(b));
    const struct call_rec *e = &rp->entered;
    if (!e->have)
      snprintf(now, sizeof(now), "no call yet");
    else if (strcmp(e->state, "in-flight") == 0)
      snprintf(now, sizeof(now), "inside it for %.2f s%s%s", e->dur,
               e->waiting[0] ? ", waiting for " : "", e->waiting);
    else
      snprintf(now, sizeof(now), "%s, between calls", e->state);
    int is_behind = numbered(e) && e->seq < top[e->comm];
    behind += is_behind;
    fprintf(f, "rlxrun:  %4d  %-44s  %-44s  %s%s\n", r, a, b, now,
            is_behind ? "   <-- behind" : "");
  }
  for (int r = 0; r < nr; r++) {
    const struct call_rec *e = &rr[r].entered;
    if (rr[r].fresh && numbered(e) && e->seq < top[e->comm])
      fprintf(f, "rlxrun: rank %d is behind: its last call on communicator %u was #%llu, "
                 "others entered #%llu\n", r, e->comm, e->seq, top[e->comm]);
  }
  for (int r = 0; r < nr; r++)
    rr[r].fresh = 0;
  return n;
}

void report_print_stats(FILE *f) {
  fprintf(f, "rlxrun: statistics (--stats)\n");
  fprintf(f, "rlxrun:  rank  %-20s %10s %14s %10s %6s  %s\n", "collective", "calls", "bytes",
          "time (s)", "errors", "algorithm by size (calls)");
  for (int r = 0; r < nr; r++) {
    const struct rank_report *rp = &rr[r];
    if (!rp->stats && !rp->have_conn) {
      fprintf(f, "rlxrun:  %4d  no statistics (the rank did not reach rlx_finalize)\n", r);
      continue;
    }
    for (const struct stats_row *s = rp->stats; s; s = s->next)
      fprintf(f, "rlxrun:  %4d  %-20s %10llu %14llu %10.6f %6llu  %s\n", r, s->call, s->calls,
              s->bytes, s->secs, s->errors, s->bands);
    if (rp->have_conn)
      fprintf(f, "rlxrun:  %4d  connections: %d shm, %d unix, %d tcp; tcp retransmits %lu; "
                 "strangers dropped %lu; corrupt frames %lu\n",
              r, rp->nshm, rp->nunix, rp->ntcp, rp->retrans, rp->strangers, rp->corrupt);
  }
}

/* Is pid an rlxrun of ours (same uid)? */
static int is_rlxrun(int pid) {
  char path[64], comm[64] = "";
  snprintf(path, sizeof(path), "/proc/%d/comm", pid);
  FILE *f = fopen(path, "r");
  if (f == NULL)
    return 0;
  if (fgets(comm, sizeof(comm), f) == NULL)
    comm[0] = '\0';
  fclose(f);
  comm[strcspn(comm, "\n")] = '\0';
  return strcmp(comm, "rlxrun") == 0 && kill(pid, 0) == 0;
}

int report_request_dump(int pid) {
  if (pid == 0) {
    DIR *d = opendir("/proc");
    struct dirent *e;
    int found = 0;
    while (d && (e = readdir(d)) != NULL) {
      if (!isdigit((unsigned char)e->d_name[0]))
        continue;
      int p = atoi(e->d_name);
      if (p != getpid() && is_rlxrun(p)) {
        if (found)
          fprintf(stderr, "rlxrun: more than one rlxrun runs (%d, %d, ...): say which, "
                          "rlxrun --dump PID\n", pid, p);
        found++;
        pid = p;
      }
    }
    if (d)
      closedir(d);
    if (found != 1) {
      if (found == 0)
        fprintf(stderr, "rlxrun: no running rlxrun found\n");
      return 1;
    }
  } else if (!is_rlxrun(pid)) {
    fprintf(stderr, "rlxrun: process %d is not a running rlxrun of yours\n", pid);
    return 1;
  }
  if (kill(pid, SIGUSR1) != 0) {
    fprintf(stderr, "rlxrun: cannot signal rlxrun %d: %s\n", pid, strerror(errno));
    return 1;
  }
  fprintf(stderr, "rlxrun: asked rlxrun %d for its ranks' flight recorders; it prints them\n",
          pid);
  return 0;
}
