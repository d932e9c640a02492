/* The shared-memory byte stream: wrap-around and partial writes in one
 * process, a memfd shared with a forked producer (16 MiB through a 64 KiB
 * ring, each side sleeping on an eventfd whenever it must wait, with full
 * fences and with asymmetric ones), the
 * sleep handshake losing no wake-up, and hostile headers refused. */
#include <check.h>
#include "suite.h"
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <sched.h>
#include <unistd.h>
#include "transport/shm_ring.h"

static unsigned char pattern(uint64_t pos) { return (unsigned char)((pos * 2654435761u) >> 13); }

/* A ring in this process's own memory, laid out for capacity cap. */
static struct rlx__shm_ring *local_ring(struct rlx__shm_end *e, size_t cap) {
  struct rlx__shm_ring *r = aligned_alloc(64, rlx__shm_ring_bytes(cap));
  memset(r, 0, rlx__shm_ring_bytes(cap));
  rlx__shm_ring_init(e, r, cap);
  return r;
}

/* 0 when buf holds the pattern from pos on (one check per call: an
 * assertion per byte is what made this slow under the sanitizers). */
static int differs(const unsigned char *buf, size_t n, uint64_t pos) {
  for (size_t i = 0; i < n; i++)
    if (buf[i] != pattern(pos + i))
      return 1;
  return 0;
}

static uint64_t next_rand(uint64_t *s) {
  *s ^= *s << 13;
  *s ^= *s >> 7;
  *s ^= *s << 17;
  return *s;
}

START_TEST(wraps_and_takes_what_fits) {
  const size_t cap = 4096;
  struct rlx__shm_end e, peer;
  struct rlx__shm_ring *r = local_ring(&e, cap);
  ck_assert_int_eq(rlx__shm_ring_attach(&peer, r, rlx__shm_ring_bytes(cap)), 0);
  ck_assert_uint_eq(peer.cap, cap);
  unsigned char src[3000], dst[3000];
  uint64_t wpos = 0, rpos = 0, s = 42;
  while (rpos < (4u << 20)) {
    size_t n = 1 + next_rand(&s) % sizeof src;
    for (size_t i = 0; i < n; i++)
      src[i] = pattern(wpos + i);
    /* two pieces, so a write spans iovecs as frames (header + payload) do */
    struct iovec iov[2] = {{src, n / 3}, {src + n / 3, n - n / 3}};
    /* a record: an 8-byte word, the bytes, padding to 8 (empty: all but the word fits) */
    int empty = wpos == rpos;
    size_t w = rlx__shm_ring_write(&e, iov, 2);
    ck_assert_uint_le(w, n);
    if (empty)
      ck_assert_uint_eq(w, n < cap - 8 ? n : cap - 8);
    wpos += w;
    ck_assert_uint_eq(rlx__shm_ring_readable(&peer), wpos - rpos);
    size_t want = 1 + next_rand(&s) % sizeof dst;
    size_t got = rlx__shm_ring_read(&peer, dst, want);
    ck_assert_uint_eq(got, want < wpos - rpos ? want : wpos - rpos);
    ck_assert_msg(!differs(dst, got, rpos), "bytes from %llu wrong", (unsigned long long)rpos);
    rpos += got;
  }
  free(r);
}
END_TEST

/* A producer process writes total bytes in random pieces; the consumer
 * reads them back, sleeping on an eventfd whenever the ring is empty, and
 * the producer sleeps on another whenever it is full (both handshakes:
 * a lost wake-up hangs the test). _i 1: both sides registered for
 * asymmetric fences (positions published with plain stores). */
START_TEST(across_processes_with_sleep) {
  int fenced = _i;
  const size_t cap = 64 << 10, total = (size_t)16 << 20;
  size_t len = rlx__shm_ring_bytes(cap);
  int fd = memfd_create("rlx-test-ring", MFD_CLOEXEC);
  ck_assert_int_ge(fd, 0);
  ck_assert_int_eq(ftruncate(fd, (off_t)len), 0);
  struct rlx__shm_ring *r = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  ck_assert(r != MAP_FAILED);
  struct rlx__shm_end e;
  rlx__shm_ring_init(&e, r, cap);
  if (fenced)
    ck_assert_msg(rlx__shm_ring_fence(&e, 0), "membarrier(2) refused: no asymmetric fences here");
  int efd = eventfd(0, EFD_CLOEXEC), room_fd = eventfd(0, EFD_CLOEXEC);
  ck_assert_int_ge(efd, 0);
  ck_assert_int_ge(room_fd, 0);
  pid_t pid = fork();
  ck_assert_int_ge(pid, 0);
  if (pid == 0) {
    /* the producer maps the segment itself, as a peer that got the fd would */
    struct rlx__shm_ring *m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    struct rlx__shm_end we, *w = &we;
    if (m == MAP_FAILED || rlx__shm_ring_attach(w, m, len) != 0)
      _exit(3);
    if (fenced && !rlx__shm_ring_fence(w, 1))
      _exit(5);
    static unsigned char src[100000];
    uint64_t pos = 0, s = 7;
    while (pos < total) {
      size_t n = 1 + next_rand(&s) % sizeof src;
      if (n > total - pos)
        n = total - pos;
      for (size_t i = 0; i < n; i++)
        src[i] = pattern(pos + i);
      size_t off = 0;
      while (off < n) {
        struct iovec iov = {src + off, n - off};
        size_t k = rlx__shm_ring_write(w, &iov, 1);
        off += k;
        if (rlx__shm_ring_wake_needed(w)) {
          uint64_t one = 1;
          if (write(efd, &one, sizeof one) != sizeof one)
            _exit(4);
        }
        if (k == 0 && !rlx__shm_ring_want_room(w)) { /* full: wait until the reader rings */
          uint64_t v;
          if (read(room_fd, &v, sizeof v) != sizeof v)
            _exit(6);
        }
      }
      pos += n;
    }
    rlx__shm_ring_close(w);
    if (rlx__shm_ring_wake_needed(w)) {
      uint64_t one = 1;
      if (write(efd, &one, sizeof one) != sizeof one)
        _exit(4);
    }
    _exit(0);
  }
  static unsigned char dst[50000];
  uint64_t pos = 0;
  long sleeps = 0;
  while (pos < total) {
    size_t k = rlx__shm_ring_read(&e, dst, sizeof dst);
    if (differs(dst, k, pos))
      ck_abort_msg("bytes from %llu wrong", (unsigned long long)pos);
    pos += k;
    if (k > 0 && rlx__shm_ring_room_wake_needed(&e)) {
      uint64_t one = 1;
      ck_assert_int_eq(write(room_fd, &one, sizeof one), sizeof one);
    }
    if (k == 0) {
      ck_assert_msg(!rlx__shm_ring_is_closed(&e) || rlx__shm_ring_readable(&e) > 0,
                    "closed after %llu of %zu bytes", (unsigned long long)pos, total);
      if (rlx__shm_ring_prepare_sleep(&e) == 0) {
        uint64_t v;
        ck_assert_int_eq(read(efd, &v, sizeof v), sizeof v); /* blocks until woken */
        sleeps++;
      }
      rlx__shm_ring_awake(&e);
    }
  }
  int st;
  ck_assert_int_eq(waitpid(pid, &st, 0), pid);
  ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "producer status %d", st);
  ck_assert_uint_eq(rlx__shm_ring_readable(&e), 0);
  ck_assert(rlx__shm_ring_is_closed(&e));
  if (fenced) /* both sides said so in the ring: the plain stores were used */
    ck_assert(atomic_load(&r->fenced_producer) && atomic_load(&r->fenced_consumer));
  (void)sleeps; /* how often depends on scheduling; that it ends at all is the test */
  munmap(r, len);
  close(fd);
  close(efd);
  close(room_fd);
}
END_TEST

/* The sleep handshake as a store-buffering litmus test, across two
 * processes: in each round the producer writes a byte and asks whether to
 * wake the consumer, while the consumer announces that it sleeps and looks
 * once more, both let go at the same moment (after a random pause each,
 * so their stores and loads overlap). A consumer that would sleep while
 * the producer saw no need to wake it is a lost wake-up: none may happen,
 * with full fences and with asymmetric ones (_i 1). Without the fences,
 * x86's store buffer produced 3738 such rounds of 20000 here. */
START_TEST(sleep_handshake_litmus) {
  int fenced = _i;
  const size_t cap = 4096;
  const long rounds = 20000;
  struct shared {
    _Alignas(64) _Atomic long go;
    _Alignas(64) _Atomic long wrote;
    _Atomic int woke;
  };
  size_t len = rlx__shm_ring_bytes(cap) + 4096;
  char *m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  ck_assert(m != MAP_FAILED);
  struct shared *sh = (struct shared *)m;
  struct rlx__shm_ring *r = (struct rlx__shm_ring *)(m + 4096);
  struct rlx__shm_end e;
  rlx__shm_ring_init(&e, r, cap);
  if (fenced)
    ck_assert(rlx__shm_ring_fence(&e, 0));
  pid_t pid = fork();
  ck_assert_int_ge(pid, 0);
  if (pid == 0) {
    struct rlx__shm_end w;
    if (rlx__shm_ring_attach(&w, r, rlx__shm_ring_bytes(cap)) != 0 ||
        (fenced && !rlx__shm_ring_fence(&w, 1)))
      _exit(3);
    uint64_t s = 11;
    unsigned char b = 1;
    for (long i = 1; i <= rounds; i++) {
      while (atomic_load(&sh->go) != i)
        ;
      for (volatile unsigned k = next_rand(&s) % 64; k > 0; k--)
        ;
      struct iovec iov = {&b, 1};
      if (rlx__shm_ring_write(&w, &iov, 1) != 1)
        _exit(4);
      atomic_store(&sh->woke, rlx__shm_ring_wake_needed(&w));
      atomic_store(&sh->wrote, i);
    }
    _exit(0);
  }
  uint64_t s = 5;
  long lost = 0;
  for (long i = 1; i <= rounds; i++) {
    atomic_store(&sh->go, i);
    for (volatile unsigned k = next_rand(&s) % 1024; k > 0; k--) /* (it starts first) */
      ;
    int sleeps = rlx__shm_ring_prepare_sleep(&e) == 0;
    while (atomic_load(&sh->wrote) != i)
      ;
    if (sleeps && !atomic_load(&sh->woke))
      lost++;
    unsigned char b;
    ck_assert_uint_eq(rlx__shm_ring_read(&e, &b, 1), 1);
    rlx__shm_ring_awake(&e);
  }
  int st;
  ck_assert_int_eq(waitpid(pid, &st, 0), pid);
  ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "producer status %d", st);
  ck_assert_msg(lost == 0, "%ld of %ld rounds lost their wake-up", lost, rounds);
  munmap(m, len);
}
END_TEST

/* A segment whose header lies about its size is refused before use. */
START_TEST(hostile_header_refused) {
  const size_t cap = 8192;
  size_t len = rlx__shm_ring_bytes(cap);
  struct rlx__shm_ring *r = aligned_alloc(64, len);
  memset(r, 0, len);
  struct rlx__shm_end e, peer;
  rlx__shm_ring_init(&e, r, cap);
  ck_assert_int_eq(rlx__shm_ring_attach(&peer, r, len), 0);
  ck_assert_int_eq(rlx__shm_ring_attach(&peer, r, len - 1), -1); /* mapping smaller than claimed */
  r->capacity = 3 << 12;                                         /* not a power of two */
  ck_assert_int_eq(rlx__shm_ring_attach(&peer, r, len * 4), -1);
  r->capacity = 1024; /* too small */
  ck_assert_int_eq(rlx__shm_ring_attach(&peer, r, len), -1);
  r->capacity = 0;
  ck_assert_int_eq(rlx__shm_ring_attach(&peer, r, len), -1);
  ck_assert_int_eq(rlx__shm_ring_attach(&peer, r, 10), -1); /* shorter than the header */
  /* After attaching, a peer rewriting the header or the positions moves
   * nothing outside the mapping (ASan would see it): our copy of the
   * capacity masks every position. */
  r->capacity = cap;
  ck_assert_int_eq(rlx__shm_ring_attach(&peer, r, len), 0);
  r->capacity = (uint64_t)1 << 40;
  r->key ^= 1; /* (the key as attached stays ours) */
  static unsigned char b[8192];
  unsigned char out[100];
  /* A record's word that decodes to more than the ring holds is no record. */
  _Atomic uint64_t *w0 = (_Atomic uint64_t *)(void *)r->data;
  atomic_store(w0, peer.key ^ ((uint64_t)cap << 1));
  ck_assert_uint_eq(rlx__shm_ring_readable(&peer), 0);
  ck_assert_uint_eq(rlx__shm_ring_read(&peer, out, sizeof out), 0);
  /* One that claims the most a record may carry: read within the mapping
   * (ASan would see a copy past it), garbage for the frame reader to refuse. */
  atomic_store(w0, peer.key ^ (cap - 8));
  ck_assert_uint_eq(rlx__shm_ring_readable(&peer), cap - 8);
  ck_assert_uint_eq(rlx__shm_ring_read(&peer, b, sizeof b), cap - 8);
  /* A head beyond the producer's position (the consumer claims to be
   * ahead of us) leaves no room, not a wrap. */
  struct iovec iov = {b, 7};
  ck_assert_uint_eq(rlx__shm_ring_write(&e, &iov, 1), 7);
  atomic_store(&r->head, 12345);
  iov.iov_len = cap; /* (more than the room the head we saw last left, so it is read again) */
  ck_assert_uint_eq(rlx__shm_ring_write(&e, &iov, 1), 0);
  free(r);
}
END_TEST

/* The sleep handshake: bytes written between the reader's last look and
 * its announcement are seen, so it never blocks on data already there. */
START_TEST(no_lost_wakeup) {
  const size_t cap = 4096;
  struct rlx__shm_end e, c; /* the producer's end and the consumer's */
  struct rlx__shm_ring *r = local_ring(&e, cap);
  ck_assert_int_eq(rlx__shm_ring_attach(&c, r, rlx__shm_ring_bytes(cap)), 0);
  unsigned char b = 1;
  struct iovec iov = {&b, 1};
  ck_assert_int_eq(rlx__shm_ring_prepare_sleep(&c), 0); /* empty: may sleep */
  ck_assert_uint_eq(rlx__shm_ring_write(&e, &iov, 1), 1);
  ck_assert_int_eq(rlx__shm_ring_wake_needed(&e), 1); /* the writer must wake it */
  ck_assert_int_eq(rlx__shm_ring_wake_needed(&e), 0); /* once */
  ck_assert_int_eq(rlx__shm_ring_prepare_sleep(&c), 1); /* data there: do not sleep */
  ck_assert_int_eq(rlx__shm_ring_wake_needed(&e), 0);
  rlx__shm_ring_close(&e);
  unsigned char out;
  ck_assert_uint_eq(rlx__shm_ring_read(&c, &out, 1), 1);
  ck_assert_int_eq(rlx__shm_ring_prepare_sleep(&c), 1); /* closed: do not sleep either */
  free(r);
}
END_TEST

/* Whole records (packed frames, shm.c): all or nothing; a byte read
 * stops before one and takes what follows it only after it was read
 * whole; one longer than the reader's room is refused, not copied. */
START_TEST(whole_records) {
  const size_t cap = 4096;
  struct rlx__shm_end e, c;
  struct rlx__shm_ring *r = local_ring(&e, cap);
  ck_assert_int_eq(rlx__shm_ring_attach(&c, r, rlx__shm_ring_bytes(cap)), 0);
  unsigned char a[40], w[30], out[100];
  memset(a, 'a', sizeof a);
  memset(w, 'w', sizeof w);
  struct iovec va = {a, sizeof a};
  ck_assert_uint_eq(rlx__shm_ring_write(&e, &va, 1), sizeof a);
  ck_assert_uint_eq(rlx__shm_ring_write_packed(&e, w, sizeof w, NULL, 0), sizeof w);
  ck_assert_uint_eq(rlx__shm_ring_write(&e, &va, 1), sizeof a);
  ck_assert_uint_eq(rlx__shm_ring_readable(&c), 2 * sizeof a + sizeof w);
  ck_assert_uint_eq(rlx__shm_ring_read_whole(&c, out, sizeof out), 0); /* bytes come first */
  ck_assert_uint_eq(rlx__shm_ring_read(&c, out, sizeof out), sizeof a); /* and stop before it */
  ck_assert_uint_eq(rlx__shm_ring_read(&c, out, sizeof out), 0);
  ck_assert_uint_eq(rlx__shm_ring_read_whole(&c, out, 10), SIZE_MAX); /* longer than the room */
  ck_assert_uint_eq(rlx__shm_ring_read_whole(&c, out, sizeof out), sizeof w);
  ck_assert(memcmp(out, w, sizeof w) == 0);
  ck_assert_uint_eq(rlx__shm_ring_read(&c, out, sizeof out), sizeof a);
  ck_assert(memcmp(out, a, sizeof a) == 0);
  ck_assert_int_eq(rlx__shm_ring_prepare_sleep(&c), 0); /* all read */
  rlx__shm_ring_awake(&c);
  /* all or nothing: a whole record that does not fit is not written */
  static unsigned char big[4096];
  struct iovec vb = {big, cap - 8 - 16};
  ck_assert_uint_eq(rlx__shm_ring_write(&e, &vb, 1), cap - 8 - 16);
  ck_assert_uint_eq(rlx__shm_ring_write_packed(&e, w, sizeof w, NULL, 0), 0);
  ck_assert_int_eq(rlx__shm_ring_prepare_sleep(&c), 1); /* (bytes there) */
  free(r);
}
END_TEST

/* A small message's packed record (header and payload in one, all or
 * nothing) reads back as a whole record, over many laps of the ring; the
 * idle poll's inline look (rlx__shm_ring_maybe) says 0 exactly when a
 * read would find nothing: on the zeroed memory of a new ring, after
 * everything was read, on a record a lap old. */
START_TEST(packed_records_and_idle_look) {
  const size_t cap = 4096;
  struct rlx__shm_end e, c;
  struct rlx__shm_ring *r = local_ring(&e, cap);
  ck_assert_int_eq(rlx__shm_ring_attach(&c, r, rlx__shm_ring_bytes(cap)), 0);
  ck_assert_int_eq(rlx__shm_ring_maybe(&c), 0); /* zeroed memory: no record */
  unsigned char hdr[24], pay[300], out[400];
  uint64_t s = 7, pos = 0;
  for (int i = 0; i < 3000; i++) { /* (about 130 laps) */
    size_t plen = next_rand(&s) % sizeof pay;
    for (size_t k = 0; k < sizeof hdr; k++)
      hdr[k] = pattern(pos + k);
    for (size_t k = 0; k < plen; k++)
      pay[k] = pattern(pos + sizeof hdr + k);
    ck_assert_uint_eq(rlx__shm_ring_write_packed(&e, hdr, sizeof hdr, pay, plen),
                      sizeof hdr + plen);
    ck_assert_int_eq(rlx__shm_ring_maybe(&c), 1);
    if (i % 3 == 0) { /* a byte record behind it, read after it */
      struct iovec v = {pay, 1 + plen % 50};
      ck_assert_uint_eq(rlx__shm_ring_write(&e, &v, 1), v.iov_len);
    }
    ck_assert_uint_eq(rlx__shm_ring_read_whole(&c, out, sizeof out), sizeof hdr + plen);
    ck_assert_int_eq(differs(out, sizeof hdr + plen, pos), 0);
    if (i % 3 == 0) {
      ck_assert_int_eq(rlx__shm_ring_maybe(&c), 1);
      ck_assert_uint_eq(rlx__shm_ring_read(&c, out, 1), 1); /* half read: still there */
      ck_assert_int_eq(rlx__shm_ring_maybe(&c), 1 + plen % 50 > 1);
      rlx__shm_ring_read(&c, out, sizeof out);
    }
    ck_assert_int_eq(rlx__shm_ring_maybe(&c), 0);
    ck_assert_uint_eq(rlx__shm_ring_readable(&c), 0);
    pos += sizeof hdr + plen;
  }
  /* all or nothing: no room, nothing written */
  static unsigned char big[4096];
  struct iovec vb = {big, cap - 8 - 16};
  ck_assert_uint_eq(rlx__shm_ring_write(&e, &vb, 1), cap - 8 - 16);
  ck_assert_uint_eq(rlx__shm_ring_write_packed(&e, hdr, sizeof hdr, pay, 8), 0);
  ck_assert_uint_eq(rlx__shm_ring_read(&c, big, sizeof big), cap - 8 - 16);
  ck_assert_int_eq(rlx__shm_ring_maybe(&c), 0);
  free(r);
}
END_TEST

/* A whole record read in place: in the ring where it does not wrap
 * around the end, copied where it does, and its room the producer's only
 * once released (a producer that wrote over it before would spoil a
 * payload still being copied out). */
START_TEST(whole_records_in_place) {
  const size_t cap = 4096;
  struct rlx__shm_end e, c;
  struct rlx__shm_ring *r = local_ring(&e, cap);
  ck_assert_int_eq(rlx__shm_ring_attach(&c, r, rlx__shm_ring_bytes(cap)), 0);
  unsigned char hdr[24], pay[1500], buf[RLX__SHM_WHOLE_MAX];
  const unsigned char *at = NULL;
  uint64_t pos = 0;
  for (int i = 0; i < 40; i++) { /* 14 laps: records across the end, and not */
    for (size_t k = 0; k < sizeof hdr; k++)
      hdr[k] = pattern(pos + k);
    for (size_t k = 0; k < sizeof pay; k++)
      pay[k] = pattern(pos + sizeof hdr + k);
    size_t len = sizeof hdr + sizeof pay;
    uint64_t rpos = c.pos;
    ck_assert_uint_eq(rlx__shm_ring_write_packed(&e, hdr, sizeof hdr, pay, sizeof pay), len);
    ck_assert_uint_eq(rlx__shm_ring_peek_whole(&c, buf, sizeof buf, &at), len);
    size_t from = (size_t)((rpos + 8) % cap);
    if (from + len <= cap)
      ck_assert_ptr_eq(at, r->data + from); /* in place */
    else
      ck_assert_ptr_eq(at, buf); /* wrapped: copied */
    ck_assert_int_eq(differs(at, len, pos), 0);
    /* not released: a second record of this size does not fit (4096 -
     * 1528 - 8 left, then the next one's 1536 twice) */
    if (i % 2 == 0) {
      ck_assert_uint_eq(rlx__shm_ring_write_packed(&e, hdr, sizeof hdr, pay, sizeof pay), len);
      ck_assert_uint_eq(rlx__shm_ring_write_packed(&e, hdr, sizeof hdr, pay, sizeof pay), 0);
    }
    ck_assert_int_eq(differs(at, len, pos), 0); /* still intact */
    rlx__shm_ring_release_whole(&c, len);
    if (i % 2 == 0) /* (the second one, read and dropped) */
      ck_assert_uint_eq(rlx__shm_ring_read_whole(&c, buf, sizeof buf), len);
    ck_assert_int_eq(rlx__shm_ring_maybe(&c), 0);
    pos += len;
  }
  free(r);
}
END_TEST

/* The other way: a writer that found the ring full is told once the
 * reader has made room, and not when room is there already. */
START_TEST(room_handshake) {
  const size_t cap = 4096;
  struct rlx__shm_end e, c; /* the producer's end and the consumer's */
  struct rlx__shm_ring *r = local_ring(&e, cap);
  ck_assert_int_eq(rlx__shm_ring_attach(&c, r, rlx__shm_ring_bytes(cap)), 0);
  static unsigned char big[8192], out[100];
  struct iovec iov = {big, sizeof big};
  ck_assert_uint_eq(rlx__shm_ring_write(&e, &iov, 1), cap - 8); /* full (a record's word) */
  ck_assert_int_eq(rlx__shm_ring_want_room(&e), 0);         /* no room: wait to be told */
  ck_assert_uint_eq(rlx__shm_ring_read(&c, out, sizeof out), sizeof out);
  ck_assert_int_eq(rlx__shm_ring_room_wake_needed(&c), 1); /* the reader must tell it */
  ck_assert_int_eq(rlx__shm_ring_room_wake_needed(&c), 0); /* once */
  ck_assert_int_eq(rlx__shm_ring_want_room(&e), 1);        /* room there: write again now */
  ck_assert_uint_eq(rlx__shm_ring_read(&c, out, sizeof out), sizeof out);
  ck_assert_int_eq(rlx__shm_ring_room_wake_needed(&c), 0); /* nobody waits */
  free(r);
}
END_TEST

Suite *shm_ring_suite(void) {
  Suite *s = suite_create("shm_ring");
  TCase *t = tcase_create("ring");
  tcase_set_timeout(t, 120);
  tcase_add_test(t, wraps_and_takes_what_fits);
  tcase_add_loop_test(t, across_processes_with_sleep, 0, 2);
  tcase_add_loop_test(t, sleep_handshake_litmus, 0, 2);
  tcase_add_test(t, hostile_header_refused);
  tcase_add_test(t, no_lost_wakeup);
  tcase_add_test(t, room_handshake);
  tcase_add_test(t, whole_records);
  tcase_add_test(t, packed_records_and_idle_look);
  tcase_add_test(t, whole_records_in_place);
  suite_add_tcase(s, t);
  return s;
}

int main(void) { return rlx_run_suite(shm_ring_suite()); }
