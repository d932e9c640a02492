/* Spawning ranks with libuv and forwarding their output. Each rank runs in
 * its own session (so a terminal's Ctrl-C reaches rlxrun alone, which
 * forwards it once), with stdout and stderr on pipes read line by line.
 * The ranks' bytes go out unchanged: a tag only at the start of a line,
 * NULs and binary kept, no newline added (a last line without one stays
 * so), and a line too long to hold goes out in pieces, the tag on its
 * first piece alone. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sodium.h>
#include "outq.h"
#include "spawn.h"

/* Write len bytes of a line (ended: its newline follows them). */
static void emit(struct rank_out *o, const char *line, size_t len, int ended) {
  FILE *f = o->is_err ? stderr : stdout;
  if (!o->midline && ended && o->is_err && o->rp->job->filter &&
      o->rp->job->filter(line, len))
    return; /* a whole line of the ranks' reports to rlxrun */
  if (o->rp->job->tag && !o->midline)
    fprintf(f, "[%s%d] ", o->rp->job->tag_prefix ? o->rp->job->tag_prefix : "", o->rp->rank);
  fwrite(line, 1, len, f);
  if (ended)
    fputc('\n', f);
  fflush(f);
  o->midline = !ended;
}

static void on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf) {
  struct rank_out *o = h->data;
  if (o->cap - o->len < 4096) {
    size_t cap = o->cap ? o->cap * 2 : 8192;
    char *nb = realloc(o->buf, cap);
    if (nb == NULL) {
      *buf = uv_buf_init(NULL, 0);
      return;
    }
    o->buf = nb;
    o->cap = cap;
  }
  (void)suggested;
  *buf = uv_buf_init(o->buf + o->len, (unsigned)(o->cap - o->len));
}

static void out_closed(uv_handle_t *h) {
  struct rank_out *o = h->data;
  free(o->buf);
  o->buf = NULL;
  o->len = o->cap = 0;
}

static void flush_partial(struct rank_out *o) {
  if (o->len > 0) {
    emit(o, o->buf, o->len, 0);
    o->len = 0;
  }
}

static void on_read(uv_stream_t *s, ssize_t n, const uv_buf_t *b) {
  struct rank_out *o = s->data;
  (void)b;
  if (n < 0) {
    flush_partial(o);
    if (o->open) {
      o->open = 0;
      o->rp->job->open_pipes--;
      uv_close((uv_handle_t *)&o->pipe, out_closed);
    }
    return;
  }
  o->len += (size_t)n;
  size_t start = 0;
  for (size_t i = 0; i < o->len; i++) {
    if (o->buf[i] == '\n') {
      emit(o, o->buf + start, i - start, 1);
      start = i + 1;
    }
  }
  memmove(o->buf, o->buf + start, o->len - start);
  o->len -= start;
  /* A line longer than 1 MiB goes out in pieces rather than growing
   * forever (another rank's lines may then come between them). */
  if (o->len > (1u << 20))
    flush_partial(o);
  if (outq_full() && !o->rp->job->paused)
    job_pause(o->rp->job);
}

void job_pause(struct job *j) {
  for (int r = 0; r < j->n; r++) {
    struct rank_out *outs[2] = {&j->ranks[r].out, &j->ranks[r].err};
    for (int i = 0; i < 2; i++)
      if (outs[i]->open)
        uv_read_stop((uv_stream_t *)&outs[i]->pipe);
  }
  j->paused = 1;
  outq_paused();
}

void job_resume(struct job *j) {
  if (!j->paused)
    return;
  j->paused = 0;
  for (int r = 0; r < j->n; r++) {
    struct rank_out *outs[2] = {&j->ranks[r].out, &j->ranks[r].err};
    for (int i = 0; i < 2; i++)
      if (outs[i]->open)
        uv_read_start((uv_stream_t *)&outs[i]->pipe, on_alloc, on_read);
  }
}

static void on_exit_cb(uv_process_t *p, int64_t status, int sig) {
  struct rank_proc *rp = p->data;
  rp->running = 0;
  rp->exit_status = status;
  rp->term_signal = sig;
  rp->job->alive--;
  if (rp->job->on_rank_exit)
    rp->job->on_rank_exit(rp->job, rp);
  uv_close((uv_handle_t *)p, NULL);
}

static void in_closed(uv_handle_t *h) {
  struct rank_proc *rp = h->data;
  if (rp->in_data) {
    sodium_memzero(rp->in_data, strlen(rp->in_data));
    free(rp->in_data);
    rp->in_data = NULL;
  }
}

static void in_written(uv_write_t *w, int status) {
  (void)status; /* a rank that cannot read its key fails to join, and says so */
  uv_close((uv_handle_t *)w->handle, in_closed);
}

int job_spawn(struct job *j, int r, char **argv, char **env, const char *stdin_data, int life_fd) {
  struct rank_proc *rp = &j->ranks[r];
  uv_process_options_t opt;
  uv_stdio_container_t stdio[4];
  int rc;
  memset(rp, 0, sizeof(*rp));
  rp->rank = r;
  rp->job = j;
  struct rank_out *outs[2] = {&rp->out, &rp->err};
  for (int i = 0; i < 2; i++) {
    outs[i]->rp = rp;
    outs[i]->is_err = i;
    uv_pipe_init(j->loop, &outs[i]->pipe, 0);
    outs[i]->pipe.data = outs[i];
  }
  memset(&opt, 0, sizeof(opt));
  stdio[0].flags = UV_IGNORE;
  if (stdin_data) {
    uv_pipe_init(j->loop, &rp->in, 0);
    rp->in.data = rp;
    stdio[0].flags = UV_CREATE_PIPE | UV_READABLE_PIPE;
    stdio[0].data.stream = (uv_stream_t *)&rp->in;
  }
  stdio[1].flags = UV_CREATE_PIPE | UV_WRITABLE_PIPE;
  stdio[1].data.stream = (uv_stream_t *)&rp->out.pipe;
  stdio[2].flags = UV_CREATE_PIPE | UV_WRITABLE_PIPE;
  stdio[2].data.stream = (uv_stream_t *)&rp->err.pipe;
  opt.file = argv[0];
  opt.args = argv;
  opt.env = env;
  opt.stdio = stdio;
  opt.stdio_count = 3;
  if (life_fd >= 0) {
    stdio[3].flags = UV_INHERIT_FD;
    stdio[3].data.fd = life_fd;
    opt.stdio_count = 4;
  }
  opt.exit_cb = on_exit_cb;
  opt.flags = UV_PROCESS_DETACHED; /* own session and process group */
  rp->proc.data = rp;
  if ((rc = uv_spawn(j->loop, &rp->proc, &opt)) != 0) {
    uv_close((uv_handle_t *)&rp->proc, NULL);
    uv_close((uv_handle_t *)&rp->out.pipe, NULL);
    uv_close((uv_handle_t *)&rp->err.pipe, NULL);
    if (stdin_data)
      uv_close((uv_handle_t *)&rp->in, NULL);
    return rc;
  }
  if (stdin_data) {
    rp->in_data = strdup(stdin_data);
    uv_buf_t b = uv_buf_init(rp->in_data, rp->in_data ? (unsigned)strlen(rp->in_data) : 0);
    if (!rp->in_data || uv_write(&rp->in_req, (uv_stream_t *)&rp->in, &b, 1, in_written) != 0)
      uv_close((uv_handle_t *)&rp->in, in_closed);
  }
  rp->running = 1;
  j->alive++;
  for (int i = 0; i < 2; i++) {
    outs[i]->open = 1;
    j->open_pipes++;
    uv_read_start((uv_stream_t *)&outs[i]->pipe, on_alloc, on_read);
  }
  return 0;
}

void job_signal(struct job *j, int sig) {
  for (int r = 0; r < j->n; r++)
    if (j->ranks[r].running)
      kill(-j->ranks[r].proc.pid, sig); /* the rank and anything it started */
}

void job_flush(struct job *j) {
  for (int r = 0; r < j->n; r++) {
    flush_partial(&j->ranks[r].out);
    flush_partial(&j->ranks[r].err);
  }
}
