/* rlxrun's standard output and error, written by a thread each, so that
 * its control loop never blocks on a slow reader: "--timeout 3" fires at
 * 3 s, and Ctrl-C is forwarded at once, even while whoever reads rlxrun's
 * output is stalled. stdout and stderr become streams (fopencookie) whose
 * bytes go into an in-memory queue, in the order rlxrun prints them (the
 * ranks' bytes and its own lines alike); the writer thread hands them to
 * the real descriptor with blocking writes. A reader that is gone (EPIPE)
 * makes the rest be dropped. */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "outq.h"

struct outq {
  int fd;
  int started;
  pthread_t th;
  pthread_mutex_t m;
  pthread_cond_t cv; /* bytes queued, or the end */
  char *buf;
  size_t len, cap;
  int closing, dead;
};

static struct outq q[2] = {{.fd = 1}, {.fd = 2}};
static atomic_size_t queued;
static atomic_int paused;
static uv_async_t room;
static int room_open;
static FILE *own[2]; /* the process's stdout and stderr, back after outq_finish */
static void (*room_cb)(void);

static void on_room(uv_async_t *a) {
  (void)a;
  if (atomic_exchange(&paused, 0) && room_cb)
    room_cb();
}

static void *writer(void *arg) {
  struct outq *o = arg;
  pthread_mutex_lock(&o->m);
  for (;;) {
    while (o->len == 0 && !o->closing)
      pthread_cond_wait(&o->cv, &o->m);
    if (o->len == 0)
      break; /* closing, and all written */
    char *b = o->buf;
    size_t n = o->len, off = 0;
    o->buf = NULL;
    o->len = o->cap = 0;
    pthread_mutex_unlock(&o->m);
    while (off < n && !o->dead) {
      ssize_t w = write(o->fd, b + off, n - off);
      if (w < 0 && errno == EINTR)
        continue;
      if (w <= 0) {
        o->dead = 1; /* the reader is gone: the rest is dropped */
        break;
      }
      off += (size_t)w;
    }
    free(b);
    size_t left = atomic_fetch_sub(&queued, n) - n;
    if (left < OUTQ_LOW && atomic_load(&paused))
      uv_async_send(&room);
    pthread_mutex_lock(&o->m);
  }
  pthread_mutex_unlock(&o->m);
  return NULL;
}

static ssize_t put(void *cookie, const char *p, size_t n) {
  struct outq *o = cookie;
  pthread_mutex_lock(&o->m);
  if (o->len + n > o->cap) {
    size_t cap = o->cap ? o->cap : 65536;
    while (cap < o->len + n)
      cap *= 2;
    char *nb = realloc(o->buf, cap);
    if (nb == NULL) { /* out of memory: lose these bytes, not the run */
      pthread_mutex_unlock(&o->m);
      return (ssize_t)n;
    }
    o->buf = nb;
    o->cap = cap;
  }
  memcpy(o->buf + o->len, p, n);
  o->len += n;
  atomic_fetch_add(&queued, n);
  pthread_cond_signal(&o->cv);
  pthread_mutex_unlock(&o->m);
  return (ssize_t)n;
}

int outq_start(uv_loop_t *loop, void (*cb)(void)) {
  cookie_io_functions_t io = {NULL, put, NULL, NULL};
  FILE *f[2];
  for (int i = 0; i < 2; i++) {
    pthread_mutex_init(&q[i].m, NULL);
    pthread_cond_init(&q[i].cv, NULL);
    if ((f[i] = fopencookie(&q[i], "w", io)) == NULL)
      return -1;
    setvbuf(f[i], NULL, _IOLBF, 1 << 16);
  }
  for (int i = 0; i < 2; i++)
    if (pthread_create(&q[i].th, NULL, writer, &q[i]) == 0)
      q[i].started = 1;
  if (!q[0].started || !q[1].started) {
    outq_finish();
    return -1;
  }
  room_cb = cb;
  uv_async_init(loop, &room, on_room);
  uv_unref((uv_handle_t *)&room); /* the loop ends when the job does */
  room_open = 1;
  fflush(stdout);
  fflush(stderr);
  own[0] = stdout;
  own[1] = stderr;
  stdout = f[0];
  stderr = f[1];
  return 0;
}

int outq_full(void) { return atomic_load(&queued) > OUTQ_HIGH; }

void outq_paused(void) {
  atomic_store(&paused, 1);
  if (atomic_load(&queued) < OUTQ_LOW) /* drained meanwhile */
    uv_async_send(&room);
}

void outq_finish(void) {
  fflush(stdout);
  fflush(stderr);
  for (int i = 0; i < 2; i++) {
    if (!q[i].started)
      continue;
    pthread_mutex_lock(&q[i].m);
    q[i].closing = 1;
    pthread_cond_signal(&q[i].cv);
    pthread_mutex_unlock(&q[i].m);
    pthread_join(q[i].th, NULL);
    q[i].started = 0;
  }
  if (room_open) {
    uv_close((uv_handle_t *)&room, NULL);
    room_open = 0;
  }
  if (own[0] != NULL) {
    fclose(stdout); /* (the cookie streams: nothing left in them) */
    fclose(stderr);
    stdout = own[0];
    stderr = own[1];
    own[0] = own[1] = NULL;
  }
}
