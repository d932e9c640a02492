/* rlxrun's option parsing: strict (a bad value is an error that names the
 * option), and the first non-option argument starts the program. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "internal.h"
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

static int need_value(int i, int argc, char **argv) {
  if (i + 1 >= argc) {
    fprintf(stderr, "rlxrun: %s needs a value\n", argv[i]);
    return -1;
  }
  return 0;
}

int rlxrun_parse(int argc, char **argv, struct rlxrun_opts *o) {
  int i;
  memset(o, 0, sizeof(*o));
  o->tag_output = -1;
  o->grace_s = 3.0;
  o->bind_to = BIND_DEFAULT;
  o->exports = calloc((size_t)argc + 1, sizeof(char *));
  if (o->exports == NULL)
    return -1;
  for (i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (a[0] != '-')
      break;
    if (strcmp(a, "--") == 0) {
      i++;
      break;
    }
    if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
      usage(stdout);
      return 1;
    }
    if (strcmp(a, "--version") == 0) {
      printf("rlxrun (rlxcoll) %d.%d.%d\n", RLXCOLL_VERSION_MAJOR, RLXCOLL_VERSION_MINOR,
             RLXCOLL_VERSION_PATCH);
      return 1;
    }
    if (strcmp(a, "--dump") == 0) {
      long v;
      o->dump = 1;
      if (i + 1 < argc) {
        if (rlx__parse_long(argv[++i], 2, 1L << 30, &v) != 0 || i + 1 < argc) {
          fprintf(stderr, "rlxrun: --dump takes one optional argument, the pid of a running "
                          "rlxrun (\"%s\" is not one)\n", argv[i]);
          return -1;
        }
        o->dump_pid = (int)v;
      }
      return 0;
    }
    if (strcmp(a, "--trace") == 0) {
      if (need_value(i, argc, argv) != 0)
        return -1;
      o->trace = argv[++i];
      if (o->trace[0] == '\0' || strlen(o->trace) > 3900) {
        fprintf(stderr, "rlxrun: --trace \"%s\": expected a file name\n", o->trace);
        return -1;
      }
    } else if (strcmp(a, "--stats") == 0) {
      o->stats = 1;
    } else if (strcmp(a, "-n") == 0 || strcmp(a, "-np") == 0) {
      long v;
      if (need_value(i, argc, argv) != 0)
        return -1;
      if (rlx__parse_long(argv[++i], 1, 4096, &v) != 0) {
        fprintf(stderr, "rlxrun: -n \"%s\": expected a rank count from 1 to 4096\n", argv[i]);
        return -1;
      }
      o->nranks = (int)v;
    } else if (strcmp(a, "--bind-to") == 0) {
      if (need_value(i, argc, argv) != 0)
        return -1;
      const char *v = argv[++i];
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
    } else if (strcmp(a, "--host") == 0 || strcmp(a, "-H") == 0) {
      if (need_value(i, argc, argv) != 0 || hosts_parse_list(&o->hosts, argv[++i]) != 0)
        return -1;
    } else if (strcmp(a, "--hostfile") == 0) {
      if (need_value(i, argc, argv) != 0 || hosts_parse_file(&o->hosts, argv[++i]) != 0)
        return -1;
    } else if (strcmp(a, "--report-bindings") == 0) {
      o->report_bindings = 1;
    } else if (strcmp(a, "--enable-recovery") == 0) {
      o->recovery = 1;
    } else if (strcmp(a, "--max-np") == 0) {
      long v;
      if (need_value(i, argc, argv) != 0)
        return -1;
      if (rlx__parse_long(argv[++i], 1, 1 << 20, &v) != 0) {
        fprintf(stderr, "rlxrun: --max-np \"%s\": expected a rank count from 1 to 1048576\n",
                argv[i]);
        return -1;
      }
      o->max_np = (int)v;
    } else if (strcmp(a, "--join") == 0) {
      if (need_value(i, argc, argv) != 0)
        return -1;
      o->join = argv[++i];
    } else if (strcmp(a, "--local") == 0) {
      o->local = 1;
    } else if (strcmp(a, "--tag-output") == 0) {
      o->tag_output = 1;
    } else if (strcmp(a, "--no-tag-output") == 0) {
      o->tag_output = 0;
    } else if (strcmp(a, "--timeout") == 0 || strcmp(a, "--grace") == 0) {
      double v;
      if (need_value(i, argc, argv) != 0)
        return -1;
      if (rlx__parse_double(argv[++i], 0.0, 1e7, &v) != 0) {
        fprintf(stderr, "rlxrun: %s \"%s\": expected seconds, a number >= 0\n", a, argv[i]);
        return -1;
      }
      if (strcmp(a, "--timeout") == 0)
        o->timeout_s = v;
      else
        o->grace_s = v;
    } else if (strcmp(a, "-x") == 0) {
      if (need_value(i, argc, argv) != 0)
        return -1;
      const char *x = argv[++i];
      if (x[0] == '\0' || x[0] == '=') {
        fprintf(stderr, "rlxrun: -x \"%s\": expected VAR or VAR=VALUE\n", x);
        return -1;
      }
      o->exports[o->nexports++] = argv[i];
    } else {
      fprintf(stderr, "rlxrun: unknown option \"%s\" (see rlxrun --help)\n", a);
      return -1;
    }
  }
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
