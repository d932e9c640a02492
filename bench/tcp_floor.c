/* tcp_floor: the least time a 2-rank allreduce over TCP on this host can
 * take, whatever the library: the data such an allreduce must move, with
 * nothing else (no reduction, no header, no checksum, no progress engine).
 *
 * Each of 2 ranks must learn all S bytes of the other's vector, in some
 * form (whole, as recursive doubling sends it, or as two reduced halves,
 * as a ring does): at least S bytes in and S bytes out per rank. Two
 * processes on one loopback TCP connection (TCP_NODELAY, as Open MPI's
 * TCP path and rlxcoll set it) exchange S bytes both ways per iteration,
 * timed like bench/osu_allreduce.c (same sizes, iterations and warm-up):
 *   spin:  send and recv with MSG_DONTWAIT, in turn, until both are done
 *          (how rlxcoll's and Open MPI's waiting callers run on free
 *          cores), at most 64 KiB, 256 KiB or all of it per send: the
 *          best of the three (which is best moves from run to run);
 *   block: one blocking send, then blocking recvs (S up to 256 KiB, which
 *          the socket buffers hold); on these VMs a wake-up costs ~30 us.
 * raw is the better of the two; crc is the best spin exchange again with
 * CRC32C (ISA-L, as rlxcoll's frames) over what each side sends and over
 * what it receives: the floor for a library that checks every payload
 * byte at both ends, as rlxcoll does on sockets.
 *   tcp_floor [max bytes, default 4 MiB] [min bytes, default 8]
 * Each variant runs on a connection of its own (fresh() says why).
 * Prints "bytes raw_us crc_us" per size. */
#include <arpa/inet.h>
#include <errno.h>
#include <isa-l/crc.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double now_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static void die(const char *what) {
  perror(what);
  exit(1);
}

static size_t chunk;    /* the most one send() is given */
static int with_crc;    /* checksum what goes and what comes */
static volatile uint32_t crc_sink;

static void exchange_spin(int fd, const char *out, char *in, size_t n) {
  if (with_crc)
    crc_sink = crc32_iscsi((unsigned char *)out, (uint64_t)n, 0);
  size_t sent = 0, got = 0;
  while (sent < n || got < n) {
    if (sent < n) {
      size_t m = n - sent < chunk ? n - sent : chunk;
      ssize_t w = send(fd, out + sent, m, MSG_DONTWAIT);
      if (w > 0)
        sent += (size_t)w;
      else if (w < 0 && errno != EAGAIN && errno != EINTR)
        die("send");
    }
    if (got < n) {
      ssize_t r = recv(fd, in + got, n - got, MSG_DONTWAIT);
      if (r > 0)
        got += (size_t)r;
      else if (r == 0 || (errno != EAGAIN && errno != EINTR))
        die("recv");
    }
  }
  if (with_crc)
    crc_sink = crc32_iscsi((unsigned char *)in, (uint64_t)n, 0);
}

static void exchange_block(int fd, const char *out, char *in, size_t n) {
  size_t sent = 0, got = 0;
  while (sent < n) {
    ssize_t w = send(fd, out + sent, n - sent, 0);
    if (w <= 0)
      die("send");
    sent += (size_t)w;
  }
  while (got < n) {
    ssize_t r = recv(fd, in + got, n - got, 0);
    if (r <= 0)
      die("recv");
    got += (size_t)r;
  }
}

/* A new connection for each variant: TCP's state from the one before
 * (its congestion control's estimates: BBR here) moved the large sizes
 * between two speeds, 200 and 400 us at 1 MiB, by the order of the runs.
 * Rank 0 accepts on ls, rank 1 connects to a. */
static int ls = -1;
static struct sockaddr_in a;

static int fresh(int rank, int old) {
  int fd, one = 1;
  if (old >= 0)
    close(old);
  if (rank == 0) {
    if ((fd = accept(ls, NULL, NULL)) < 0)
      die("accept");
  } else if ((fd = socket(AF_INET, SOCK_STREAM, 0)) < 0 ||
             connect(fd, (struct sockaddr *)&a, sizeof a) != 0) {
    die("connect");
  }
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  return fd;
}

/* One variant's time per exchange on a connection of its own, timed like
 * the OSU-style client (which warms up 10,000 8-byte calls first). */
static double timed(int rank, void (*x)(int, const char *, char *, size_t), const char *out,
                    char *in, size_t bytes) {
  static int fd = -1;
  fd = fresh(rank, fd);
  for (int i = 0; i < 10000; i++) /* (8 bytes: any chunk sends them whole) */
    exchange_spin(fd, out, in, 8);
  long iters = (long)((256u << 20) / bytes);
  iters = iters > 2000 ? 2000 : iters < 5 ? 5 : iters;
  for (long i = 0; i < iters / 10 + 2; i++)
    x(fd, out, in, bytes);
  double t0 = now_us();
  for (long i = 0; i < iters; i++)
    x(fd, out, in, bytes);
  return (now_us() - t0) / (double)iters;
}

/* Both ranks run the same variants in the same order; rank 0 prints. */
static void run(int rank, size_t max, size_t min) {
  static const size_t chunks[] = {64u << 10, 256u << 10, SIZE_MAX};
  char *out = malloc(max), *in = malloc(max);
  if (out == NULL || in == NULL)
    die("malloc");
  memset(out, rank + 1, max);
  memset(in, 0, max);
  if (rank == 0)
    printf("# bytes raw_us crc_us\n");
  for (size_t bytes = min; bytes <= max; bytes *= 2) {
    double best[2] = {1e30, 1e30};
    for (with_crc = 0; with_crc < 2; with_crc++)
      for (size_t c = 0; c < sizeof chunks / sizeof chunks[0]; c++) {
        if (chunks[c] != SIZE_MAX && chunks[c] >= bytes)
          continue; /* (the same as all of it) */
        chunk = chunks[c];
        double t = timed(rank, exchange_spin, out, in, bytes);
        best[with_crc] = t < best[with_crc] ? t : best[with_crc];
      }
    with_crc = 0;
    if (bytes <= (256u << 10)) {
      double t = timed(rank, exchange_block, out, in, bytes);
      best[0] = t < best[0] ? t : best[0];
    }
    if (rank == 0)
      printf("%zu %.2f %.2f\n", bytes, best[0], best[1]);
  }
  free(out);
  free(in);
}

int main(int argc, char **argv) {
  size_t max = argc > 1 ? strtoull(argv[1], NULL, 10) : (4u << 20);
  size_t min = argc > 2 ? strtoull(argv[2], NULL, 10) : 8;
  if (min == 0 || max < min) {
    fprintf(stderr, "tcp_floor: sizes must be 0 < min <= max\n");
    return 2;
  }
  ls = socket(AF_INET, SOCK_STREAM, 0);
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t alen = sizeof a;
  if (ls < 0 || bind(ls, (struct sockaddr *)&a, sizeof a) != 0 || listen(ls, 4) != 0 ||
      getsockname(ls, (struct sockaddr *)&a, &alen) != 0)
    die("listen on 127.0.0.1");
  fflush(stdout);
  pid_t pid = fork();
  if (pid < 0)
    die("fork");
  if (pid == 0)
    close(ls);
  run(pid == 0 ? 1 : 0, max, min);
  if (pid == 0)
    return 0;
  int st = 0;
  waitpid(pid, &st, 0);
  return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : 1;
}
