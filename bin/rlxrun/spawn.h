/* Ranks as child processes: spawn, forward their output line by line with
 * a rank tag, signal them, and learn how each one ended. */
#ifndef RLXRUN_SPAWN_H
#define RLXRUN_SPAWN_H

#include <uv.h>

struct rank_out {
  uv_pipe_t pipe;
  struct rank_proc *rp;
  int is_err;
  int open;
  char *buf; /* a partial line */
  size_t len, cap;
  int midline; /* a piece of this line went out already (untagged from here) */
};

struct rank_proc {
  uv_process_t proc;
  int rank;
  int running;
  int64_t exit_status;
  int term_signal;
  struct rank_out out, err;
  uv_pipe_t in;       /* stdin, only to hand a remote rank its job key */
  uv_write_t in_req;
  char *in_data;
  struct job *job;
};

struct job {
  uv_loop_t *loop;
  int n;
  int tag;
  const char *tag_prefix; /* before the rank in a tag ("j": joiners), NULL: none */
  struct rank_proc *ranks;
  int alive;      /* processes not yet exited */
  int open_pipes; /* output pipes not yet at EOF */
  int stopping;
  int paused; /* not reading the ranks' output: rlxrun's own output is behind (outq.h) */
  int failed_rank;
  int exit_code;
  void (*on_rank_exit)(struct job *j, struct rank_proc *rp);
  /* Sees every line of the ranks' standard error first; returns 1 to keep
   * it out of the output (the ranks' reports to rlxrun). */
  int (*filter)(const char *line, size_t len);
};

/* Spawn rank r with the given environment. stdin_data, when not NULL, is
 * written to its standard input, which is then closed (a remote rank reads
 * its job key there: never on a command line). life_fd >= 0 becomes the
 * rank's descriptor 3 (RLX_LAUNCHER_FD: the read end of a pipe only
 * rlxrun writes to, whose end tells the rank rlxrun is gone). Returns 0
 * or a libuv error. */
int job_spawn(struct job *j, int r, char **argv, char **env, const char *stdin_data, int life_fd);
/* Send sig to every rank still running (to its whole process group). */
void job_signal(struct job *j, int sig);
/* Flush what is left of partial lines. */
void job_flush(struct job *j);
/* Stop reading the ranks' output while rlxrun's own is far behind; read
 * again. */
void job_pause(struct job *j);
void job_resume(struct job *j);

#endif
