/* rlxrun's option parsing: strict (a bad value is an error that names the
 * option), and the first non-option argument starts the program. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "base/internal.h"
#include "options.h"
#include "bind.h"

static void usage(FILE *f) {
  fprintf(f,
          "usage: rlxrun -n N [--tag-output | --no-tag-output] [--timeout S] [--grace S]\n"
          "              [--host H1:N,H2:N | --hostfile F] [--bind-to core|numa|none]\n"
          "              [--report-bindings] [--local] [--enable-recovery] [--max-np N]\n"
          "              [--trace FILE] [--stats] [-x VAR[=VALUE]]... program [args...]\n"
          "       rlxrun --join FILE|HOST:PORT -n K [...] program [args...]\n"
          "       rlxrun --dump [PID]\n"
          "Start N ranks of program, wired together for rlxcoll; start K ranks that join\n"
          "a running job (started with --max-np); or ask a running rlxrun for every\n"
          "rank's flight recorder. See rlxrun(1).\n");
}

/* Long options also take one dash (-np, as mpirun's); the short ones are
 * -n, -H, -x and -h. Option values only as the next word or after '='. */
enum {
  O_DUMP = 256, O_TRACE, O_STATS, O_BIND, O_HOSTFILE, O_REPORT, O_RECOVERY, O_MAXNP, O_JOIN,
  O_LOCAL, O_TAG, O_NOTAG, O_TIMEOUT, O_GRACE, O_VERSION
};
static const struct option longopts[] = {
    {"help", no_argument, NULL, 'h'},
    {"version", no_argument, NULL, O_VERSION},
    {"dump", no_argument, NULL, O_DUMP},
    {"trace", required_argument, NULL, O_TRACE},
    {"stats", no_argument, NULL, O_STATS},
    {"np", required_argument, NULL, 'n'},
    {"bind-to", required_argument, NULL, O_BIND},
    {"host", required_argument, NULL, 'H'},
    {"hostfile", required_argument, NULL, O_HOSTFILE},
    {"report-bindings", no_argument, NULL, O_REPORT},
    {"enable-recovery", no_argument, NULL, O_RECOVERY},
    {"max-np", required_argument, NULL, O_MAXNP},
    {"join", required_argument, NULL, O_JOIN},
    {"local", no_argument, NULL, O_LOCAL},
    {"tag-output", no_argument, NULL, O_TAG},
    {"no-tag-output", no_argument, NULL, O_NOTAG},
    {"timeout", required_argument, NULL, O_TIMEOUT},
    {"grace", required_argument, NULL, O_GRACE},
    {NULL, 0, NULL, 0}};

/* The option as the user wrote it, for messages (-n for -np, as before). */
static const char *spelled(int c, int longindex) {
  switch (c) {
  case 'n': return "-n";
  case 'H': return "--host";
  case 'x': return "-x";
  default: return longindex >= 0 ? longopts[longindex].name : "?";
  }
}

/* --dump [PID]: the pid, if any, is the next word (and the last). */
static int parse_dump(int argc, char **argv, struct rlxrun_opts *o) {
  long v;
  o->dump = 1;
  if (optind >= argc)
    return 0;
  if (rlx__parse_long(argv[optind], 2, 1L << 30, &v) != 0 || optind + 1 < argc) {
    fprintf(stderr, "rlxrun: --dump takes one optional argument, the pid of a running "
                    "rlxrun (\"%s\" is not one)\n", argv[optind]);
    return -1;
  }
  o->dump_pid = (int)v;
  return 0;
}

/* One option with its value: 0, or -1 with a message naming it. */
static int take(int c, const char *name, const char *v, struct rlxrun_opts *o) {
  long n;
  double t;
  switch (c) {
  case O_TRACE:
    o->trace = v;
    if (v[0] == '\0' || strlen(v) > 3900) {
      fprintf(stderr, "rlxrun: --trace \"%s\": expected a file name\n", v);
      return -1;
    }
    return 0;
  case O_STATS: o->stats = 1; return 0;
  case 'n':
    if (rlx__parse_long(v, 1, 4096, &n) != 0) {
      fprintf(stderr, "rlxrun: -n \"%s\": expected a rank count from 1 to 4096\n", v);
      return -1;
    }
    o->nranks = (int)n;
    return 0;
  case O_BIND:
    if (strcmp(v, "core") == 0)
      o->bind_to = BIND_CORE;
    else if (strcmp(v, "numa") == 0)
      o->bind_to = BIND_NUMA;
    else if (strcmp(v, "none") == 0)
      o->bind_to = BIND_NONE;
    else {
      fprintf(stderr, "rlxrun: --bind-to \"%s\": expected core, numa or none\n", v);
      return -1;
    }
    return 0;
  case 'H': return hosts_parse_list(&o->hosts, v) != 0 ? -1 : 0;
  case O_HOSTFILE: return hosts_parse_file(&o->hosts, v) != 0 ? -1 : 0;
  case O_REPORT: o->report_bindings = 1; return 0;
  case O_RECOVERY: o->recovery = 1; return 0;
  case O_MAXNP:
    if (rlx__parse_long(v, 1, 1 << 20, &n) != 0) {
      fprintf(stderr, "rlxrun: --max-np \"%s\": expected a rank count from 1 to 1048576\n", v);
      return -1;
    }
    o->max_np = (int)n;
    return 0;
  case O_JOIN: o->join = v; return 0;
  case O_LOCAL: o->local = 1; return 0;
  case O_TAG: o->tag_output = 1; return 0;
  case O_NOTAG: o->tag_output = 0; return 0;
  case O_TIMEOUT:
  case O_GRACE:
    if (rlx__parse_double(v, 0.0, 1e7, &t) != 0) {
      fprintf(stderr, "rlxrun: --%s \"%s\": expected seconds, a number >= 0\n", name, v);
      return -1;
    }
    *(c == O_TIMEOUT ? &o->timeout_s : &o->grace_s) = t;
    return 0;
  case 'x':
    if (v[0] == '\0' || v[0] == '=') {
      fprintf(stderr, "rlxrun: -x \"%s\": expected VAR or VAR=VALUE\n", v);
      return -1;
    }
    o->exports[o->nexports++] = (char *)v;
    return 0;
  }
  return -1;
}

int rlxrun_parse(int argc, char **argv, struct rlxrun_opts *o) {
  memset(o, 0, sizeof(*o));
  o->tag_output = -1;
  o->grace_s = 3.0;
  o->bind_to = BIND_DEFAULT;
  o->exports = calloc((size_t)argc + 1, sizeof(char *));
  if (o->exports == NULL)
    return -1;
  optind = 1;
  opterr = 0; /* (our messages, which name the option) */
  /* "+": the first word that is not an option starts the program; ":":
   * a missing value is told apart from an unknown option */
  for (;;) {
    int li = -1, at = optind;
    int c = getopt_long_only(argc, argv, "+:n:H:x:h", longopts, &li);
    if (c == -1)
      break;
    if (c == 'h') {
      usage(stdout);
      return 1;
    }
    if (c == O_VERSION) {
      printf("rlxrun (rlxcoll) %d.%d.%d\n", RLXCOLL_VERSION_MAJOR, RLXCOLL_VERSION_MINOR,
             RLXCOLL_VERSION_PATCH);
      return 1;
    }
    if (c == O_DUMP)
      return parse_dump(argc, argv, o);
    if (c == ':') {
      fprintf(stderr, "rlxrun: %s needs a value\n", argv[at]);
      return -1;
    }
    if (c == '?') {
      fprintf(stderr, "rlxrun: unknown option \"%s\" (see rlxrun --help)\n", argv[at]);
      return -1;
    }
    if (take(c, spelled(c, li), optarg, o) != 0)
      return -1;
  }
  int i = optind;
  if (i >= argc) {
    fprintf(stderr, "rlxrun: no program to run\n");
    usage(stderr);
    return -1;
  }
  if (o->nranks == 0) {
    fprintf(stderr, "rlxrun: -n N is required\n");
    return -1;
  }
  if (o->hosts.n > 0 && hosts_total_slots(&o->hosts) < o->nranks) {
    fprintf(stderr, "rlxrun: -n %d but the hosts have %d slot(s)\n", o->nranks,
            hosts_total_slots(&o->hosts));
    return -1;
  }
  if (o->max_np > 0 && o->max_np < o->nranks) {
    fprintf(stderr, "rlxrun: --max-np %d is less than -n %d\n", o->max_np, o->nranks);
    return -1;
  }
  if (o->join && (o->max_np || o->hosts.n > 0)) {
    fprintf(stderr, "rlxrun: --join starts ranks here for a job that is already running: "
                    "without --max-np, --host or --hostfile\n");
    return -1;
  }
  /* Joiners keep off the cores the job's ranks take (the job's file says
   * which): binding by their own count would put the first on the job's
   * first core. */
  if (o->join && o->bind_to == BIND_DEFAULT)
    o->bind_to = BIND_AWAY;
  o->argv = argv + i;
  if (o->tag_output < 0)
    o->tag_output = o->nranks > 1;
  return 0;
}
