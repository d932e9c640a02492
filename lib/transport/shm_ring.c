/* The shared-memory byte stream (see shm_ring.h for the protocol). The
 * ordering that makes it safe: the producer copies a record's bytes, then
 * stores its word with release; the consumer loads the word with acquire
 * before reading them, and publishes head with release after it has
 * copied the whole record out, so the producer (acquire on head) never
 * overwrites bytes still being read. The sleep handshake is the classic
 * Dekker pair: the consumer stores `sleeping` then loads the word at its
 * position, the producer stores the word then loads `sleeping`, both
 * sequentially consistent, so at least one of them sees the other and no
 * wake-up is lost. `wants_room` is the same pair the other way: the
 * producer stores it then loads head, the consumer stores head then loads
 * it. When both sides have registered for asymmetric fences
 * (rlx__shm_ring_fence), the side that runs on every message (the
 * producer's word, the consumer's head) stores with release only, and the
 * side about to sleep or wait fences heavily for both (lib/base/fence.h):
 * a full fence after each message made the producer wait until the lines
 * it had written were its own again, about a third of a small message's
 * time. */
#include <stdint.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include "base/copy.h"
#include "base/fence.h"
#include "base/prefetch.h"
#include "shm_ring.h"

/* A record's word: its length in the low 23 bits and the whole-frame
 * flag above it (24 bits), its position (in 8-byte units) above them,
 * under the ring's key. */
#define REC_WORD 8
#define REC_LEN_BITS 24
#define REC_WHOLE ((uint64_t)1 << 23)
#define REC_MAX ((size_t)REC_WHOLE - 1)
/* lines of the next record the producer asks for after each (2: a small
 * message's record; 4 measured the same) */
#define PREFETCH_LINES 2
_Static_assert(REC_LEN_BITS == 24 && REC_WHOLE == 0x800000u, "rlx__shm_ring_maybe decodes so");

static uint64_t pad8(uint64_t n) { return (n + 7) & ~(uint64_t)7; }

static uint64_t word_of(uint64_t key, uint64_t pos, uint64_t len) {
  return key ^ ((pos >> 3) << REC_LEN_BITS) ^ len;
}

static _Atomic uint64_t *word_at(const struct rlx__shm_end *e, uint64_t pos) {
  return (_Atomic uint64_t *)(void *)(e->r->data + (pos & (e->cap - 1)));
}

/* The most a record may carry in a ring of capacity cap: its word and
 * padding must fit too. */
static size_t rec_max(size_t cap) {
  size_t m = cap - REC_WORD;
  return m < REC_MAX ? m : REC_MAX;
}

size_t rlx__shm_ring_bytes(size_t capacity) {
  return sizeof(struct rlx__shm_ring) + capacity;
}

/* The key: random where the kernel gives it, else the clock and an
 * address (it need not be secret, only unrelated to what programs send). */
static uint64_t new_key(const void *where) {
  uint64_t k;
  if (getrandom(&k, sizeof k, GRND_NONBLOCK) != (ssize_t)sizeof k) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    k = ((uint64_t)ts.tv_nsec << 32) ^ (uint64_t)ts.tv_sec ^ (uint64_t)(uintptr_t)where;
    k *= 0x9E3779B97F4A7C15u;
  }
  /* the top bit set: the zeroed memory of a new ring decodes to no record
   * (until 2^63 bytes have passed, far beyond its first lap) */
  return k | (uint64_t)1 << 63;
}

static void end_init(struct rlx__shm_end *e, struct rlx__shm_ring *r, size_t cap, uint64_t key) {
  e->r = r;
  e->cap = cap;
  e->key = key;
  e->seen = 0;
  e->pos = 0; /* (made or attached before either side moved) */
  e->at = 0;
  e->left = 0;
  e->fenced = 0;
}

void rlx__shm_ring_init(struct rlx__shm_end *e, struct rlx__shm_ring *r, size_t capacity) {
  atomic_store(&r->fenced_producer, 0);
  atomic_store(&r->fenced_consumer, 0);
  atomic_store(&r->head, 0);
  atomic_store(&r->sleeping, 0);
  atomic_store(&r->wants_room, 0);
  atomic_store(&r->closed, 0);
  r->capacity = capacity;
  r->key = new_key(r);
  end_init(e, r, capacity, r->key);
}

int rlx__shm_ring_attach(struct rlx__shm_end *e, struct rlx__shm_ring *r, size_t len) {
  if (len < sizeof(*r))
    return -1;
  uint64_t cap = r->capacity; /* read once: this copy is the one we trust */
  if (cap < 4096 || (cap & (cap - 1)) != 0 || cap > len - sizeof(*r))
    return -1;
  end_init(e, r, (size_t)cap, r->key);
  return 0;
}

int rlx__shm_ring_fence(struct rlx__shm_end *e, int producer) {
  e->fenced = rlx__fence_register();
  if (e->fenced)
    atomic_store(producer ? &e->r->fenced_producer : &e->r->fenced_consumer, 1);
  return e->fenced;
}

/* Publish a word or a position. The plain store only when both sides
 * fence heavily: then the other one, before it sleeps or waits, makes
 * this process's stores visible itself. (A side that reads the other's
 * flag as 0, still or forever, fences fully: safe either way.) */
static void publish(const struct rlx__shm_end *e, _Atomic uint64_t *at, uint64_t v,
                    _Atomic uint32_t *other_fenced) {
  if (e->fenced && atomic_load_explicit(other_fenced, memory_order_relaxed)) {
    atomic_store_explicit(at, v, memory_order_release);
    atomic_signal_fence(memory_order_seq_cst); /* the compiler keeps the flag's load after it */
  } else
    atomic_store(at, v); /* seq_cst: ordered before the load of the other's flag */
}

/* Copy n bytes into the ring at position pos, in two pieces at the end. */
static void put(const struct rlx__shm_end *e, uint64_t pos, const unsigned char *src, size_t n) {
  struct rlx__shm_ring *r = e->r;
  size_t at = (size_t)(pos & (e->cap - 1)), first = e->cap - at;
  if (first > n)
    first = n;
  rlx__copy(r->data + at, src, first);
  if (n > first)
    rlx__copy(r->data, src + first, n - first);
}

static void get(const struct rlx__shm_end *e, uint64_t pos, unsigned char *dst, size_t n) {
  const struct rlx__shm_ring *r = e->r;
  size_t at = (size_t)(pos & (e->cap - 1)), first = e->cap - at;
  if (first > n)
    first = n;
  rlx__copy(dst, r->data + at, first);
  if (n > first)
    rlx__copy(dst + first, r->data, n - first);
}

/* Room for the producer from head; a peer's head beyond our position
 * (corrupt) leaves none, not a wrap. */
static size_t room_from(const struct rlx__shm_end *e, uint64_t pos, uint64_t head) {
  size_t used = (size_t)(pos - head);
  return used <= e->cap ? e->cap - used : 0;
}

/* The bytes a record can carry in room bytes (0: none). */
static size_t carries(const struct rlx__shm_end *e, size_t room) {
  if (room < REC_WORD + 8)
    return 0;
  size_t k = room - REC_WORD;
  return k < rec_max(e->cap) ? k : rec_max(e->cap);
}

/* The record at pos, done bytes (with REC_WHOLE for a whole frame) copied
 * in: its word published, the next one's lines asked for. */
static void seal(struct rlx__shm_end *e, uint64_t pos, size_t done, uint64_t whole) {
  e->pos = pos + REC_WORD + pad8(done);
  publish(e, word_at(e, pos), word_of(e->key, pos, done | whole), &e->r->fenced_consumer);
  /* the next record's first lines, asked for now where the consumer is
   * done with them (base/prefetch.h): the consumer read them a lap ago */
  for (uint64_t at = e->pos & ~(uint64_t)(RLX__SHM_LINE - 1), k = 0;
       k < PREFETCH_LINES && room_from(e, at + RLX__SHM_LINE, e->seen) > 0;
       k++, at += RLX__SHM_LINE)
    rlx__prefetch_write(e->r->data + (at & (e->cap - 1)));
}

/* What a record at the producer's position can carry, at least want if
 * there is room for it: head only grows, so the one seen last leaves less
 * room than there is, never more; it is read again only when that is
 * not enough. */
static size_t can_carry(struct rlx__shm_end *e, size_t want) {
  size_t can = carries(e, room_from(e, e->pos, e->seen));
  if (can < want) {
    e->seen = atomic_load_explicit(&e->r->head, memory_order_acquire);
    can = carries(e, room_from(e, e->pos, e->seen));
  }
  return can;
}

size_t rlx__shm_ring_write(struct rlx__shm_end *e, const struct iovec *iov, int n) {
  uint64_t pos = e->pos;
  size_t want = 0, done = 0;
  for (int i = 0; i < n; i++)
    want += iov[i].iov_len;
  if (want == 0)
    return 0;
  size_t can = can_carry(e, want);
  for (int i = 0; i < n && can > 0; i++) {
    size_t k = iov[i].iov_len < can ? iov[i].iov_len : can;
    put(e, pos + REC_WORD + done, iov[i].iov_base, k);
    done += k;
    can -= k;
  }
  if (done)
    seal(e, pos, done, 0);
  return done;
}

size_t rlx__shm_ring_write_packed(struct rlx__shm_end *e, const void *hdr, size_t hlen,
                                  const void *payload, size_t plen) {
  uint64_t pos = e->pos;
  size_t want = hlen + plen;
  if (can_carry(e, want) < want)
    return 0;
  put(e, pos + REC_WORD, hdr, hlen);
  if (plen)
    put(e, pos + REC_WORD + hlen, payload, plen);
  seal(e, pos, want, REC_WHOLE);
  return want;
}

int rlx__shm_ring_wake_needed(struct rlx__shm_end *e) {
  struct rlx__shm_ring *r = e->r;
  if (atomic_load(&r->sleeping) == 0)
    return 0;
  return atomic_exchange(&r->sleeping, 0) != 0;
}

int rlx__shm_ring_want_room(struct rlx__shm_end *e) {
  struct rlx__shm_ring *r = e->r;
  if (e->fenced) {
    atomic_store_explicit(&r->wants_room, 1, memory_order_relaxed);
    rlx__fence_heavy();
  } else {
    atomic_store(&r->wants_room, 1); /* seq_cst: ordered before the load of head */
  }
  e->seen = atomic_load(&r->head);
  if (carries(e, room_from(e, e->pos, e->seen)) > 0 || atomic_load(&r->closed)) {
    atomic_store(&r->wants_room, 0);
    return 1;
  }
  return 0;
}

int rlx__shm_ring_room_wake_needed(struct rlx__shm_end *e) {
  struct rlx__shm_ring *r = e->r;
  if (atomic_load(&r->wants_room) == 0) /* seq_cst: after the store of head */
    return 0;
  return atomic_exchange(&r->wants_room, 0) != 0;
}

/* The record at pos: its length, with REC_WHOLE for a whole frame; 0 if
 * none is there yet (or what is there does not decode to one that fits).
 * order: the load's. */
static uint64_t record_at(const struct rlx__shm_end *e, uint64_t pos, memory_order order) {
  uint64_t v = atomic_load_explicit(word_at(e, pos), order) ^ word_of(e->key, pos, 0);
  uint64_t len = v & ~REC_WHOLE;
  return len >= 1 && len <= rec_max(e->cap) ? v : 0;
}

/* The consumer's current record: take the next one when the last is
 * read. 0 when none is there, or the next is a whole frame (read by
 * rlx__shm_ring_read_whole, never as bytes). */
static size_t take_record(struct rlx__shm_end *e) {
  if (e->left == 0) {
    uint64_t v = record_at(e, e->pos, memory_order_acquire);
    if (v == 0 || (v & REC_WHOLE))
      return 0;
    e->at = e->pos + REC_WORD;
    e->left = (size_t)v;
  }
  return e->left;
}

/* The consumer's head after a read: up to what was read, within a record
 * too (its word was read already, and the producer writes only beyond the
 * record), so a big record's room comes back as it is read. */
static void publish_head(struct rlx__shm_end *e) {
  uint64_t head = e->left ? e->at : e->pos;
  if (head != e->seen) {
    e->seen = head;
    publish(e, &e->r->head, head, &e->r->fenced_producer);
  }
}

size_t rlx__shm_ring_readable(struct rlx__shm_end *e) {
  /* the current record's rest, then the whole ones after it (whole
   * frames too); the producer writes up to a ring's length past the head */
  size_t have = e->left;
  uint64_t from = e->left ? e->at : e->pos, pos = e->left ? pad8(e->at + e->left) : e->pos, v;
  while (pos - from < e->cap && (v = record_at(e, pos, memory_order_acquire)) > 0) {
    have += v & ~REC_WHOLE;
    pos += REC_WORD + pad8(v & ~REC_WHOLE);
  }
  return have;
}

size_t rlx__shm_ring_read(struct rlx__shm_end *e, void *dst, size_t len) {
  unsigned char *out = dst;
  size_t done = 0;
  while (done < len && take_record(e) > 0) {
    size_t k = e->left < len - done ? e->left : len - done;
    get(e, e->at, out + done, k);
    done += k;
    e->at += k;
    e->left -= k;
    if (e->left == 0) /* the next record starts after this one's padding */
      e->pos = pad8(e->at);
  }
  publish_head(e);
  return done;
}

size_t rlx__shm_ring_peek_whole(struct rlx__shm_end *e, void *buf, size_t cap,
                                const unsigned char **at) {
  if (e->left != 0)
    return 0;
  uint64_t v = record_at(e, e->pos, memory_order_acquire);
  if (!(v & REC_WHOLE))
    return 0;
  size_t len = (size_t)(v & ~REC_WHOLE);
  if (len > cap)
    return SIZE_MAX; /* (not one of ours: the caller fails the stream) */
  size_t from = (size_t)((e->pos + REC_WORD) & (e->cap - 1));
  if (from + len <= e->cap) {
    *at = e->r->data + from;
  } else {
    get(e, e->pos + REC_WORD, buf, len);
    *at = buf;
  }
  return len;
}

void rlx__shm_ring_release_whole(struct rlx__shm_end *e, size_t len) {
  e->pos += REC_WORD + pad8(len);
  publish_head(e);
}

size_t rlx__shm_ring_read_whole(struct rlx__shm_end *e, void *dst, size_t cap) {
  const unsigned char *at;
  size_t len = rlx__shm_ring_peek_whole(e, dst, cap, &at);
  if (len == 0 || len == SIZE_MAX)
    return len;
  if (at != dst)
    rlx__copy(dst, at, len);
  rlx__shm_ring_release_whole(e, len);
  return len;
}

int rlx__shm_ring_sleep_flag(struct rlx__shm_end *e) {
  if (e->fenced)
    atomic_store_explicit(&e->r->sleeping, 1, memory_order_relaxed);
  else
    atomic_store(&e->r->sleeping, 1); /* seq_cst: ordered before the load of the word */
  return e->fenced;
}

int rlx__shm_ring_sleep_check(struct rlx__shm_end *e) {
  struct rlx__shm_ring *r = e->r;
  if (e->left > 0 || record_at(e, e->pos, memory_order_seq_cst) > 0 || atomic_load(&r->closed)) {
    atomic_store(&r->sleeping, 0);
    return 1;
  }
  return 0;
}

int rlx__shm_ring_prepare_sleep(struct rlx__shm_end *e) {
  if (rlx__shm_ring_sleep_flag(e))
    rlx__fence_heavy();
  return rlx__shm_ring_sleep_check(e);
}

void rlx__shm_ring_awake(struct rlx__shm_end *e) { atomic_store(&e->r->sleeping, 0); }

void rlx__shm_ring_close(struct rlx__shm_end *e) { atomic_store(&e->r->closed, 1); }

int rlx__shm_ring_is_closed(const struct rlx__shm_end *e) {
  return atomic_load(&e->r->closed) != 0;
}
