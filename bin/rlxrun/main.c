/* rlxrun: start N ranks of a program wired together for rlxcoll. It hosts
 * the rendezvous, gives every rank the job key in its environment only
 * (never in argv), forwards output and signals, and when a rank fails says
 * which and how, stops the rest and exits non-zero. */
#include <fcntl.h>
#include <sys/resource.h>
#include <signal.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sodium.h>
#include <uv.h>
#include "bootstrap/bootstrap.h"
#include "bind.h"
#include "join.h"
#include "options.h"
#include "remote.h"
#include "report.h"
#include "outq.h"
#include "spawn.h"

extern char **environ;

static struct job job;
static struct rlxrun_opts opts;
static uv_timer_t grace_timer, timeout_timer, drain_timer;
static uv_signal_t sig_int, sig_term, sig_usr1;
static uv_timer_t dump_timer;
static char *rank_is_local; /* ranks we may signal (their pid is on this host) */
static int dump_pending;     /* a flight-recorder dump asked for, not yet printed */
static const char *dump_why;
static uint64_t dump_asked_ms;
static void (*after_dump)(void); /* what to do once the dumps are in */
static int interrupted;
static int via_srun; /* inside a Slurm allocation: one child, srun, starts the ranks */
static int any_rank_failed; /* a rank exited non-zero or by a signal */
static int lost_ranks;      /* killed, but --enable-recovery kept the job going */

static void rdv_log(const char *msg) { fprintf(stderr, "rlxrun: %s\n", msg); }

static void close_if_open(uv_handle_t *h) {
  if (h->type != UV_UNKNOWN_HANDLE && !uv_is_closing(h))
    uv_close(h, NULL);
}

static void on_grace(uv_timer_t *t) {
  (void)t;
  if (job.alive > 0) {
    fprintf(stderr, "rlxrun: %d rank(s) still running after %g s; killing them\n", job.alive,
            opts.grace_s);
    job_signal(&job, SIGKILL);
  }
}

/* Stop every rank: SIGTERM now, SIGKILL after the grace period. */
static void stop_job(int sig) {
  if (job.stopping)
    return;
  job.stopping = 1;
  job_signal(&job, sig);
  uv_timer_start(&grace_timer, on_grace, (uint64_t)(opts.grace_s * 1000), 0);
}

/* ---- flight recorders: ask every rank still running for its record (a
 * SIGUSR1 to the pid it announced, when that pid is here and in the rank's
 * process group), wait for the dumps to come in on stderr, print one table. */

static int may_signal(int r) {
  int pid = report_pid(r);
  return pid > 0 && rank_is_local && rank_is_local[r] && job.ranks[r].running &&
         getpgid(pid) == job.ranks[r].proc.pid;
}

static void dump_finish(void) {
  uv_timer_stop(&dump_timer);
  dump_pending = 0;
  report_print_flight(stderr, dump_why);
  void (*next)(void) = after_dump;
  after_dump = NULL;
  if (next)
    next();
}

static void on_dump_timer(uv_timer_t *t) {
  int waiting = 0;
  for (int r = 0; r < job.n; r++)
    waiting += may_signal(r) && !report_flight_done(r);
  if (waiting == 0 || uv_now(t->loop) - dump_asked_ms >= 2000)
    dump_finish();
}

/* Returns 1 if some rank was asked (then next runs once the dumps are in). */
static int ask_for_dumps(const char *why, void (*next)(void)) {
  int asked = 0;
  if (dump_pending)
    return 0;
  report_flight_expect();
  for (int r = 0; r < job.n; r++)
    if (may_signal(r) && kill(report_pid(r), SIGUSR1) == 0)
      asked++;
  if (asked == 0)
    return 0;
  dump_pending = 1;
  dump_why = why;
  after_dump = next;
  uv_update_time(job.loop);
  dump_asked_ms = uv_now(job.loop);
  uv_timer_start(&dump_timer, on_dump_timer, 50, 50);
  return 1;
}

static void on_usr1(uv_signal_t *s, int sig) {
  (void)s;
  (void)sig;
  if (!ask_for_dumps("asked for with rlxrun --dump or SIGUSR1", NULL))
    fprintf(stderr, "rlxrun: no rank to ask for its flight recorder (ranks here announce their "
                    "pid when rlx_init is done)\n");
}

static void on_drain(uv_timer_t *t) {
  (void)t;
  /* Ranks are gone, but something they started still holds the pipes. */
  for (int r = 0; r < job.n; r++) {
    struct rank_out *outs[2] = {&job.ranks[r].out, &job.ranks[r].err};
    for (int i = 0; i < 2; i++)
      if (outs[i]->open) {
        outs[i]->open = 0;
        job.open_pipes--;
        uv_close((uv_handle_t *)&outs[i]->pipe, NULL);
      }
  }
}

static void finish_if_done(void) {
  if (job.alive > 0)
    return;
  uv_timer_stop(&grace_timer);
  close_if_open((uv_handle_t *)&grace_timer);
  close_if_open((uv_handle_t *)&timeout_timer);
  close_if_open((uv_handle_t *)&sig_int);
  close_if_open((uv_handle_t *)&sig_term);
  close_if_open((uv_handle_t *)&sig_usr1);
  if (dump_pending)
    dump_finish();
  close_if_open((uv_handle_t *)&dump_timer);
  if (job.open_pipes > 0) {
    uv_timer_start(&drain_timer, on_drain, 1000, 0);
    uv_unref((uv_handle_t *)&drain_timer);
  }
}

static void stop_term(void) { stop_job(SIGTERM); }

/* "rlxrun: rank 2 (pid 4711) was killed by signal 9 (Killed)", or the exit code. */
static void report_exit(const struct rank_proc *rp) {
  if (rp->term_signal)
    fprintf(stderr, "rlxrun: rank %d (pid %d) was killed by signal %d (%s)\n", rp->rank,
            rp->proc.pid, rp->term_signal, strsignal(rp->term_signal));
  else
    fprintf(stderr, "rlxrun: rank %d (pid %d) exited with code %d\n", rp->rank, rp->proc.pid,
            (int)rp->exit_status);
}

static void on_rank_exit(struct job *j, struct rank_proc *rp) {
  int bad = rp->exit_status != 0 || rp->term_signal != 0;
  any_rank_failed |= bad;
  /* After an interrupt a rank that did not exit 0 is still worth a line:
   * it tells a clean stop from a killed one. */
  if (bad && via_srun && !interrupted && j->failed_rank < 0) {
    j->failed_rank = 0;
    j->exit_code = rp->term_signal ? 128 + rp->term_signal : (int)rp->exit_status;
    fprintf(stderr, "rlxrun: srun exited with %s %d\n", rp->term_signal ? "signal" : "code",
            rp->term_signal ? rp->term_signal : (int)rp->exit_status);
  }
  /* --enable-recovery: a rank killed by a signal is lost, not the end of
   * the job; the survivors may shrink and go on. A rank that exits with an
   * error still fails the job. */
  if (bad && opts.recovery && !interrupted && rp->term_signal && !j->stopping) {
    fprintf(stderr, "rlxrun: rank %d (pid %d) was killed by signal %d (%s); %d rank(s) go on "
            "(--enable-recovery)\n", rp->rank, rp->proc.pid, rp->term_signal,
            strsignal(rp->term_signal), j->alive);
    lost_ranks++;
    finish_if_done();
    return;
  }
  if (bad && interrupted)
    report_exit(rp);
  if (bad && j->failed_rank < 0 && !interrupted && !(j->stopping && j->failed_rank >= 0)) {
    j->failed_rank = rp->rank;
    report_exit(rp);
    j->exit_code = rp->term_signal ? 128 + rp->term_signal : (int)rp->exit_status;
    if (j->exit_code == 0)
      j->exit_code = 1;
    if (j->alive > 0) {
      fprintf(stderr, "rlxrun: stopping the other %d rank(s)\n", j->alive);
      if (!ask_for_dumps("a rank failed; the others were asked before being stopped", stop_term))
        stop_job(SIGTERM);
    }
  }
  finish_if_done();
}

static void on_signal(uv_signal_t *s, int sig) {
  static uint64_t first_ms;
  uint64_t now = uv_now(s->loop);
  if (interrupted) {
    /* One Ctrl-C often arrives twice: the terminal signals the whole
     * process group and a wrapper (timeout, srun) forwards it too. Only a
     * second one a second later means "no more patience". */
    if (now - first_ms >= 1000)
      job_signal(&job, SIGKILL);
    return;
  }
  uv_update_time(s->loop);
  first_ms = uv_now(s->loop);
  interrupted = sig;
  fprintf(stderr, "rlxrun: got %s, forwarding to %d rank(s)\n", strsignal(sig), job.alive);
  job_signal(&job, sig);
  job.stopping = 1;
  uv_timer_start(&grace_timer, on_grace, (uint64_t)(opts.grace_s * 1000), 0);
}

static void on_timeout(uv_timer_t *t) {
  (void)t;
  if (job.alive == 0)
    return;
  fprintf(stderr, "rlxrun: job timed out after %g s (--timeout); stopping %d rank(s)\n",
          opts.timeout_s, job.alive);
  if (job.failed_rank < 0) {
    job.failed_rank = job.n; /* not a rank: the job as a whole */
    job.exit_code = 124;
  }
  if (!ask_for_dumps("the job timed out (--timeout)", stop_term))
    stop_job(SIGTERM);
}

/* The ranks of this host keep their run directories (their Unix sockets)
 * in one job directory that rlxrun removes when it exits: a rank killed
 * with SIGKILL cannot remove its own, and leaves nothing behind so. */
static char job_dir[128];

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
  (void)st;
  (void)flag;
  (void)ftw;
  remove(path);
  return 0;
}

static void make_job_dir(void) {
  const char *t = getenv("TMPDIR");
  snprintf(job_dir, sizeof job_dir, "%s/rlxrun-XXXXXX", t && *t && strlen(t) < 40 ? t : "/tmp");
  if (mkdtemp(job_dir) == NULL)
    job_dir[0] = '\0'; /* the ranks use TMPDIR or /tmp themselves */
}

/* The pipe whose end tells local ranks that rlxrun is gone (lib/launcher.c):
 * rlxrun holds the write end and never writes; both ends close on exec,
 * the read end is each rank's descriptor 3 (job_spawn). */
static int life_pipe[2] = {-1, -1};

static void make_life_pipe(void) {
  if (life_pipe[0] < 0 && pipe2(life_pipe, O_CLOEXEC) != 0)
    life_pipe[0] = life_pipe[1] = -1;
}

static void remove_job_dir(void) {
  if (job_dir[0])
    nftw(job_dir, remove_entry, 8, FTW_DEPTH | FTW_PHYS);
}

/* Out of descriptors while spawning: which limit, and what the job needs
 * (measured: -n 8 starts at ulimit -n 36, -n 16 at 56). */
static void say_fd_limit(int nranks) {
  struct rlimit lim;
  unsigned long long have = getrlimit(RLIMIT_NOFILE, &lim) == 0 ? lim.rlim_cur : 0;
  int need = nranks * 5 / 2 + 16;
  fprintf(stderr, "rlxrun: the limit on open files (ulimit -n) is %llu here; rlxrun keeps about "
          "2.5 descriptors per rank (its output pipes) and 16 of its own, so -n %d needs about "
          "%d (ulimit -n %d)\n", have, nranks, need, need);
}

/* The rank's environment: ours, less any RLX_ launch variables we set, plus
 * the launch variables (r >= 0; none for srun, whose ranks ask PMIx) and
 * -x exports. */
static char **rank_env(int r, const char *rdv, const char *key, size_t *owned_from) {
  static const char *const ours[] = {"RLX_RANK=",      "RLX_SIZE=",       "RLX_LOCAL_RANK=",
                                     "RLX_LOCAL_SIZE=", "RLX_RENDEZVOUS=", "RLX_JOB_KEY=",
                                     "RLX_LAUNCHER=",   "RLX_RUNDIR=",     "RLX_LAUNCHER_FD=",
                                     "RLX_JOIN=",       "RLX_MAX_NP="};
  size_t n = 0;
  while (environ[n])
    n++;
  char **env = calloc(n + 12 + (size_t)opts.nexports + 1, sizeof(char *));
  size_t k = 0;
  if (env == NULL)
    return NULL;
  for (size_t i = 0; i < n; i++) {
    int skip = 0;
    for (size_t o = 0; o < sizeof(ours) / sizeof(ours[0]); o++)
      if (strncmp(environ[i], ours[o], strlen(ours[o])) == 0)
        skip = 1;
    if ((opts.trace && strncmp(environ[i], "RLX_TRACE=", 10) == 0) ||
        (opts.stats && strncmp(environ[i], "RLX_STATS=", 10) == 0))
      skip = 1;
    if (!skip)
      env[k++] = environ[i];
  }
  char tmp[512];
  *owned_from = k;
#define SETV(...)                                                                                  \
  do {                                                                                             \
    snprintf(tmp, sizeof(tmp), __VA_ARGS__);                                                       \
    env[k++] = strdup(tmp);                                                                        \
  } while (0)
  if (r >= 0 && opts.join) { /* rank and size come with the admission */
    SETV("RLX_JOIN=1");
    SETV("RLX_RENDEZVOUS=%s", rdv);
    SETV("RLX_JOB_KEY=%s", key);
    SETV("RLX_LAUNCHER=rlxrun");
  } else if (r >= 0) {
    SETV("RLX_RANK=%d", r);
    SETV("RLX_SIZE=%d", opts.nranks);
    int lr = r, ls = opts.nranks;
    if (opts.hosts.n > 0) {
      int h = hosts_of_rank(&opts.hosts, r, &lr);
      ls = hosts_count_on(&opts.hosts, h, opts.nranks);
    }
    SETV("RLX_LOCAL_RANK=%d", lr);
    SETV("RLX_LOCAL_SIZE=%d", ls);
    SETV("RLX_RENDEZVOUS=%s", rdv);
    SETV("RLX_JOB_KEY=%s", key);
    SETV("RLX_LAUNCHER=rlxrun");
    if (opts.max_np > 0)
      SETV("RLX_MAX_NP=%d", opts.max_np);
  }
  if (r >= 0 && rank_is_local && rank_is_local[r] && job_dir[0])
    SETV("RLX_RUNDIR=%s", job_dir);
  if (r >= 0 && rank_is_local && rank_is_local[r] && life_pipe[0] >= 0)
    SETV("RLX_LAUNCHER_FD=3"); /* job_spawn puts the pipe there */
  /* What rlxrun reads back from the ranks (report.h). A failed call
   * writes the flight recorder unless the user said otherwise. */
  if (opts.trace)
    SETV("RLX_TRACE=%s", opts.trace);
  if (opts.stats)
    SETV("RLX_STATS=1");
  if (getenv("RLX_FLIGHT_DUMP") == NULL)
    SETV("RLX_FLIGHT_DUMP=error");
  for (int i = 0; i < opts.nexports; i++) {
    const char *x = opts.exports[i];
    if (strchr(x, '=') != NULL) {
      env[k++] = strdup(x);
    } else if (getenv(x) != NULL) {
      SETV("%s=%s", x, getenv(x));
    }
  }
#undef SETV
  env[k] = NULL;
  return env;
}

/* Rank r on another host: RLX_RSH host 'cd ...; read key; exec env ... prog'.
 * The ssh process itself gets our environment without any launch variable,
 * the launch variables travel on the remote command line, the key on stdin. */
static int spawn_remote(int r, const char *host, const char *rdv, const char *key) {
  size_t owned = 0, okv = 0;
  char **env = rank_env(-1, rdv, key, &owned);
  char **kv = rank_env(r, rdv, key, &okv); /* ours + launch vars; keep only RLX_* and -x */
  char cwd[4096], keyline[300];
  int rc = UV_ENOMEM;
  if (env && kv) {
    /* Keep the launch variables and the -x exports, drop the job key. */
    size_t k = 0;
    for (size_t i = okv; kv[i]; i++) {
      if (strncmp(kv[i], "RLX_JOB_KEY=", 12) == 0) {
        sodium_memzero(kv[i], strlen(kv[i]));
        free(kv[i]);
      } else
        kv[k++] = kv[i];
    }
    kv[k] = NULL;
    snprintf(keyline, sizeof keyline, "%s\n", key);
    char **argv = remote_argv(getenv("RLX_RSH"), host, getcwd(cwd, sizeof cwd), kv, opts.argv);
    rc = argv ? job_spawn(&job, r, argv, env, keyline, -1) : UV_ENOMEM;
    if (rc != 0)
      fprintf(stderr, "rlxrun: cannot start rank %d on %s through %s: %s\n", r, host,
              getenv("RLX_RSH") ? getenv("RLX_RSH") : "ssh", uv_strerror(rc));
    remote_argv_free(argv);
    sodium_memzero(keyline, sizeof keyline);
    for (size_t i = 0; kv[i]; i++)
      free(kv[i]);
  } else {
    for (size_t i = okv; kv && kv[i]; i++)
      free(kv[i]);
  }
  for (size_t i = owned; env && env[i]; i++)
    free(env[i]);
  free(env);
  free(kv);
  return rc;
}

/* srun --mpi=pmix -n N [--label] --kill-on-bad-exit=1 program args... */
static char **srun_command(void) {
  static char n[16];
  int nargs = 0;
  while (opts.argv[nargs])
    nargs++;
  char **a = calloc((size_t)nargs + 8, sizeof(char *));
  int k = 0;
  if (!a)
    return NULL;
  snprintf(n, sizeof n, "%d", opts.nranks);
  a[k++] = "srun";
  a[k++] = "--mpi=pmix";
  a[k++] = "-n";
  a[k++] = n;
  a[k++] = "--kill-on-bad-exit=1";
  if (opts.tag_output == 1 || (opts.tag_output < 0 && opts.nranks > 1))
    a[k++] = "--label";
  for (int i = 0; i < nargs; i++)
    a[k++] = opts.argv[i];
  a[k] = NULL;
  return a;
}

static void on_output_room(void) { job_resume(&job); }

/* ---- the steps of a launch (main, below, runs them in order) ---------------- */

/* The job's key: 32 random bytes, in hex, that every rank proves it holds. */
static int make_key(char *key, size_t len) {
  unsigned char raw[32];
  if (sodium_init() < 0) {
    fprintf(stderr, "rlxrun: libsodium failed to initialise\n");
    return 1;
  }
  randombytes_buf(raw, sizeof(raw));
  sodium_bin2hex(key, len, raw, sizeof(raw));
  return 0;
}

/* Where the rendezvous listens: loopback, or with ranks on other hosts
 * where they can reach it (RLX_IFACE). */
static int rendezvous_address(char *listen_on, size_t len) {
  int remote = 0;
  snprintf(listen_on, len, "127.0.0.1:0");
  for (int r = 0; r < opts.nranks && opts.hosts.n > 0; r++) {
    int lr, h = hosts_of_rank(&opts.hosts, r, &lr);
    remote |= !hosts_is_local(opts.hosts.h[h].name);
  }
  if (!remote)
    return 0;
  const char *spec = getenv("RLX_IFACE") ? getenv("RLX_IFACE") : RLX__IFACE_DEFAULT;
  char ip[64];
  if (rlx__iface_ip(spec, ip, sizeof ip) != 0) {
    fprintf(stderr, "rlxrun: no interface matching \"%s\" to host the rendezvous for the "
            "other hosts; set RLX_IFACE\n", spec);
    return 1;
  }
  snprintf(listen_on, len, "%s:0", ip);
  return 0;
}

/* The rendezvous the ranks meet at: srun's PMIx inside Slurm (none of
 * ours), the job's own when joining it, else ours, started here. */
static int open_rendezvous(const char *slurm_job, const char *listen_on,
                           struct rlx__rdv_server **server, char *rdv, size_t len,
                           const char *key) {
  if (via_srun) {
    fprintf(stderr, "rlxrun: inside Slurm job %s: starting %d rank(s) with srun\n", slurm_job,
            opts.nranks);
    if (opts.max_np > 0)
      fprintf(stderr, "rlxrun: --max-np: ranks srun starts have no rendezvous for joiners "
                      "(PMIx); this job will not grow\n");
    rdv[0] = '\0';
    return 0;
  }
  if (opts.join)
    return 0;
  int rc = rlx__rdv_server_start(listen_on, key, opts.nranks, opts.max_np, rdv_log, server, rdv,
                                 len);
  if (rc != 0)
    fprintf(stderr, "rlxrun: cannot open the rendezvous on %s: %s\n", listen_on, strerror(-rc));
  return rc != 0;
}

/* A job that may grow says where joiners find it, and which cpus its
 * ranks here take. */
static int announce_growth(struct binder *binder, const char *rdv, const char *key,
                           char *job_cpus, size_t cpus_len) {
  char path[256];
  int here = 0;
  for (int r = 0; r < opts.nranks; r++) {
    int lr, h = opts.hosts.n > 0 ? hosts_of_rank(&opts.hosts, r, &lr) : -1;
    here += h < 0 || hosts_is_local(opts.hosts.h[h].name);
  }
  if (binder)
    binder_cpus(binder, here, job_cpus, cpus_len);
  make_job_dir();
  if (job_dir[0] == '\0' || join_file_write(job_dir, rdv, key, job_cpus, path, sizeof path) != 0) {
    fprintf(stderr, "rlxrun: --max-np: cannot write the file joiners read in %s\n",
            job_dir[0] ? job_dir : "TMPDIR");
    return 1;
  }
  fprintf(stderr, "rlxrun: the job may grow to %d ranks: rlxrun --join %s -n K %s\n",
          opts.max_np, path, opts.argv[0]);
  return 0;
}

/* The job's table of ranks (one srun inside Slurm), the flight-recorder
 * report, the timers and the signals we take. */
static void prepare_job(void) {
  job.n = via_srun ? 1 : opts.nranks;
  job.tag = via_srun ? 0 : opts.tag_output;
  job.tag_prefix = opts.join ? "j" : NULL;
  job.failed_rank = -1;
  job.on_rank_exit = on_rank_exit;
  job.filter = report_take;
  job.ranks = calloc((size_t)job.n, sizeof(*job.ranks));
  rank_is_local = calloc((size_t)job.n, 1);
  report_init(opts.nranks);
  uv_timer_init(job.loop, &dump_timer);
  uv_signal_init(job.loop, &sig_usr1);
  uv_signal_start(&sig_usr1, on_usr1, SIGUSR1);
  uv_timer_init(job.loop, &grace_timer);
  uv_timer_init(job.loop, &timeout_timer);
  uv_timer_init(job.loop, &drain_timer);
  uv_signal_init(job.loop, &sig_int);
  uv_signal_init(job.loop, &sig_term);
  uv_signal_start(&sig_int, on_signal, SIGINT);
  uv_signal_start(&sig_term, on_signal, SIGTERM);
}

/* Rank r could not be started: the job fails with code, the others stop. */
static void start_failed(int r, int code) {
  job.failed_rank = r;
  job.exit_code = code;
  stop_job(SIGTERM);
}

/* One local rank (or srun, for all of them): bound, its environment, spawned. */
static int start_local(struct binder *binder, int r, int local_rank, const char *rdv,
                       const char *key, char **srun_argv) {
  size_t owned = 0;
  int rc;
  if (rank_is_local && !via_srun)
    rank_is_local[r] = 1;
  if (!via_srun && job_dir[0] == '\0')
    make_job_dir();
  if (!via_srun)
    make_life_pipe();
  if (binder && binder_apply(binder, local_rank, opts.report_bindings) != 0) {
    start_failed(r, 1);
    return 1;
  }
  char **env = rank_env(via_srun ? -1 : r, rdv, key, &owned);
  char **argv_r = via_srun ? srun_argv : opts.argv;
  if (env == NULL ||
      (rc = job_spawn(&job, r, argv_r, env, NULL, via_srun ? -1 : life_pipe[0])) != 0) {
    fprintf(stderr, "rlxrun: cannot start %s %d (%s): %s\n", via_srun ? "srun for rank" : "rank",
            r, argv_r[0], env ? uv_strerror(rc) : "out of memory");
    if (env != NULL && (rc == UV_EMFILE || rc == UV_ENFILE))
      say_fd_limit(opts.nranks);
    start_failed(r, 127);
    return 1;
  }
  for (size_t i = owned; env[i] != NULL; i++) /* uv_spawn copied it into the child */
    free(env[i]);
  free(env);
  return 0;
}

/* Every rank, here or over ssh, until one cannot be started. */
static void start_ranks(struct binder *binder, const char *rdv, const char *key,
                        char **srun_argv) {
  if (!via_srun && !binder) {
    job.failed_rank = 0;
    job.exit_code = 1;
    return;
  }
  for (int r = 0; r < job.n; r++) {
    int local_rank = r, h = -1;
    if (opts.hosts.n > 0)
      h = hosts_of_rank(&opts.hosts, r, &local_rank);
    if (h >= 0 && !hosts_is_local(opts.hosts.h[h].name)) {
      if (spawn_remote(r, opts.hosts.h[h].name, rdv, key) != 0) {
        start_failed(r, 127);
        return;
      }
      continue;
    }
    if (start_local(binder, r, local_rank, rdv, key, srun_argv) != 0)
      return;
  }
}

/* The job is over: what is left to print and remove, and rlxrun's exit
 * code. Interrupted: 128 + the signal, unless every rank handled it and
 * exited 0 (a program that stops cleanly on SIGINT, like train). */
static int end_job(struct rlx__rdv_server *server) {
  job_flush(&job);
  remove_job_dir();
  rlx__rdv_server_stop(server);
  report_print_flight(stderr, "written by ranks whose call failed");
  if (opts.stats)
    report_print_stats(stderr);
  if (opts.trace)
    trace_merge(opts.trace, opts.nranks);
  if (lost_ranks > 0 && job.failed_rank < 0 && !interrupted)
    fprintf(stderr, "rlxrun: %d rank(s) lost; the other %d finished\n", lost_ranks,
            opts.nranks - lost_ranks);
  int code = job.failed_rank >= 0 ? job.exit_code : 0;
  if (interrupted)
    code = any_rank_failed ? 128 + interrupted : 0;
  outq_finish();
  return code;
}

int main(int argc, char **argv) {
  char rdv[256] = "", key[256], listen_on[96], job_cpus[512] = "";
  struct rlx__rdv_server *server = NULL;
  int rc = rlxrun_parse(argc, argv, &opts);
  if (rc != 0)
    return rc > 0 ? 0 : 2;
  if (opts.dump)
    return report_request_dump(opts.dump_pid);
  if (make_key(key, sizeof key) != 0)
    return 1;
  /* joining: the job's rendezvous, key, and the cpus its ranks here take */
  if (opts.join && join_target(opts.join, rdv, sizeof rdv, key, sizeof key, job_cpus,
                               sizeof job_cpus) != 0)
    return 2;
  /* Inside a Slurm allocation the ranks belong on its nodes: srun starts
   * them (and serves them PMIx), rlxrun keeps its timeout and signals. */
  const char *slurm_job = getenv("SLURM_JOB_ID");
  via_srun = slurm_job != NULL && *slurm_job && !opts.local && opts.hosts.n == 0;
  if (rendezvous_address(listen_on, sizeof listen_on) != 0)
    return 1;
  char **srun_argv = via_srun ? srun_command() : NULL;
  if (via_srun && srun_argv == NULL) {
    fprintf(stderr, "rlxrun: out of memory\n");
    return 1;
  }
  memset(&job, 0, sizeof(job));
  job.loop = uv_default_loop();
  /* From here everything printed is queued and written by threads: the
   * loop below never waits for whoever reads our output. (Before the
   * rendezvous's thread starts: it logs to our stderr too.) */
  outq_start(job.loop, on_output_room);
  if (open_rendezvous(slurm_job, listen_on, &server, rdv, sizeof rdv, key) != 0) {
    free(srun_argv);
    outq_finish();
    return 1;
  }
  struct binder *binder = via_srun ? NULL : binder_open(opts.bind_to, opts.nranks);
  if (binder && opts.join)
    binder_set_taken(binder, job_cpus);
  if (!via_srun && opts.max_np > 0 && announce_growth(binder, rdv, key, job_cpus,
                                                      sizeof job_cpus) != 0) {
    binder_close(binder);
    rlx__rdv_server_stop(server);
    free(srun_argv);
    outq_finish();
    return 1;
  }
  prepare_job();
  start_ranks(binder, rdv, key, srun_argv);
  binder_restore(binder);
  binder_close(binder);
  if (opts.timeout_s > 0)
    uv_timer_start(&timeout_timer, on_timeout, (uint64_t)(opts.timeout_s * 1000), 0);
  finish_if_done();
  uv_run(job.loop, UV_RUN_DEFAULT);
  free(srun_argv);
  return end_job(server);
}
