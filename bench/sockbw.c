/* sockbw: Unix-socket bandwidth between two processes, both directions at
 * once, the ceiling a same-host collective over sockets works against.
 *   sockbw [MiB per direction, default 2048] [chunk KiB, default 256]
 *          [buffer MiB, default 0: one chunk]
 * Each side sends from and receives into a buffer of that size, a chunk at
 * a time, walking through it: with one chunk the data stays in the cache;
 * with 64 MiB it comes from memory, as a large collective's does.
 * Prints GB/s per direction. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <poll.h>

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Send and receive total bytes at once on fd, in chunks, through buffers
 * of span bytes (a multiple of chunk). */
static void pump(int fd, size_t total, size_t chunk, size_t span) {
  char *out = malloc(span), *in = malloc(span);
  size_t sent = 0, got = 0;
  memset(out, 7, span);
  memset(in, 0, span);
  while (sent < total || got < total) {
    struct pollfd p = {fd, (short)((got < total ? POLLIN : 0) | (sent < total ? POLLOUT : 0)), 0};
    if (poll(&p, 1, 1000) <= 0)
      continue;
    if ((p.revents & POLLOUT) && sent < total) {
      size_t n = total - sent < chunk ? total - sent : chunk;
      size_t at = sent % span;
      if (n > span - at)
        n = span - at;
      ssize_t w = send(fd, out + at, n, MSG_DONTWAIT);
      if (w > 0)
        sent += (size_t)w;
    }
    if ((p.revents & POLLIN) && got < total) {
      size_t at = got % span;
      ssize_t r = recv(fd, in + at, chunk < span - at ? chunk : span - at, MSG_DONTWAIT);
      if (r > 0)
        got += (size_t)r;
    }
  }
  free(out);
  free(in);
}

int main(int argc, char **argv) {
  size_t total = (argc > 1 ? strtoull(argv[1], NULL, 10) : 2048) << 20;
  size_t chunk = (argc > 2 ? strtoull(argv[2], NULL, 10) : 256) << 10;
  size_t span = (argc > 3 ? strtoull(argv[3], NULL, 10) : 0) << 20;
  if (chunk == 0 || total == 0) {
    fprintf(stderr, "sockbw: sizes must be positive\n");
    return 2;
  }
  if (span < chunk)
    span = chunk;
  span -= span % chunk;
  int sv[2];
  if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0) {
    perror("socketpair");
    return 1;
  }
  int big = 4 << 20;
  for (int i = 0; i < 2; i++) {
    setsockopt(sv[i], SOL_SOCKET, SO_SNDBUF, &big, sizeof(big));
    setsockopt(sv[i], SOL_SOCKET, SO_RCVBUF, &big, sizeof(big));
  }
  double t0 = now();
  pid_t pid = fork();
  if (pid == 0) {
    close(sv[0]);
    pump(sv[1], total, chunk, span);
    _exit(0);
  }
  close(sv[1]);
  pump(sv[0], total, chunk, span);
  waitpid(pid, NULL, 0);
  double dt = now() - t0;
  printf("sockbw: %zu MiB each way at once, %zu KiB chunks, through %zu KiB buffers: "
         "%.2f GB/s per direction\n",
         total >> 20, chunk >> 10, span >> 10, (double)total / dt / 1e9);
  return 0;
}
