/* rlxrun's command line. */
#ifndef RLXRUN_OPTIONS_H
#define RLXRUN_OPTIONS_H

#include "hosts.h"

struct rlxrun_opts {
  int nranks;
  int tag_output; /* -1 = default (on when nranks > 1) */
  double timeout_s; /* 0 = none */
  double grace_s;   /* between SIGTERM and SIGKILL when stopping ranks */
  char **exports;   /* -x VAR[=VALUE], NULL-terminated */
  int nexports;
  char **argv;      /* the program and its arguments */
  int local;        /* --local: spawn here even inside a Slurm allocation */
  int bind_to;      /* --bind-to: enum bind_to (bind.h) */
  struct hostlist hosts; /* --host, --hostfile; empty: all here */
  int report_bindings;
  int recovery;     /* --enable-recovery: a lost rank does not stop the job */
  const char *trace; /* --trace FILE: merged timeline of every rank */
  int stats;        /* --stats: a table of each rank's statistics at the end */
  int dump;         /* --dump [PID]: ask a running rlxrun for its flight recorders */
  int dump_pid;     /* 0: the only rlxrun running */
  int max_np;       /* --max-np N: the job may grow to N ranks (0: it does not) */
  const char *join; /* --join FILE|HOST:PORT: the ranks join a running job */
};

/* Parse argv; on error prints a message naming the option and returns -1;
 * returns 1 when --help or --version was handled. */
int rlxrun_parse(int argc, char **argv, struct rlxrun_opts *o);

#endif
