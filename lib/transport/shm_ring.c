/* The shared-memory byte stream (see shm_ring.h for the protocol). The
 * ordering that makes it safe: the producer copies bytes, then publishes
 * tail with release; the consumer loads tail with acquire before reading
 * them, and publishes head with release after it has copied them out, so
 * the producer (acquire on head) never overwrites bytes still being read.
 * The sleep handshake is the classic Dekker pair: the consumer stores
 * `sleeping` then loads tail, the producer stores tail then loads
 * `sleeping`, both sequentially consistent, so at least one of them sees
 * the other and no wake-up is lost. `wants_room` is the same pair the
 * other way: the producer stores it then loads head, the consumer stores
 * head then loads it. When both sides have registered for asymmetric
 * fences (rlx__shm_ring_fence), the side that runs on every message (the
 * producer's tail, the consumer's head) stores with release only, and the
 * side about to sleep or wait fences heavily for both (lib/base/fence.h):
 * a full fence after each message made the producer wait until the lines
 * it had written were its own again, about a third of a small message's
 * time. */
#include <string.h>
#include "base/fence.h"
#include "shm_ring.h"

size_t rlx__shm_ring_bytes(size_t capacity) {
  return sizeof(struct rlx__shm_ring) + capacity;
}

void rlx__shm_ring_init(struct rlx__shm_end *e, struct rlx__shm_ring *r, size_t capacity) {
  e->r = r;
  e->cap = capacity;
  e->seen = 0;
  e->pos = 0;
  e->fenced = 0;
  atomic_store(&r->fenced_producer, 0);
  atomic_store(&r->fenced_consumer, 0);
  atomic_store(&r->tail, 0);
  atomic_store(&r->head, 0);
  atomic_store(&r->sleeping, 0);
  atomic_store(&r->wants_room, 0);
  atomic_store(&r->closed, 0);
  r->capacity = capacity;
}

int rlx__shm_ring_attach(struct rlx__shm_end *e, struct rlx__shm_ring *r, size_t len) {
  if (len < sizeof(*r))
    return -1;
  uint64_t cap = r->capacity; /* read once: this copy is the one we trust */
  if (cap < 4096 || (cap & (cap - 1)) != 0 || cap > len - sizeof(*r))
    return -1;
  e->r = r;
  e->cap = (size_t)cap;
  e->seen = 0;
  e->pos = 0; /* (attached before either side moved) */
  e->fenced = 0;
  return 0;
}

int rlx__shm_ring_fence(struct rlx__shm_end *e, int producer) {
  e->fenced = rlx__fence_register();
  if (e->fenced)
    atomic_store(producer ? &e->r->fenced_producer : &e->r->fenced_consumer, 1);
  return e->fenced;
}

/* Publish a position. The plain store only when both sides fence
 * heavily: then the other one, before it sleeps or waits, makes this
 * process's stores visible itself. (A side that reads the other's flag
 * as 0, still or forever, fences fully: safe either way.) */
static void publish(const struct rlx__shm_end *e, _Atomic uint64_t *pos, uint64_t v,
                    _Atomic uint32_t *other_fenced) {
  if (e->fenced && atomic_load_explicit(other_fenced, memory_order_relaxed)) {
    atomic_store_explicit(pos, v, memory_order_release);
    atomic_signal_fence(memory_order_seq_cst); /* the compiler keeps the flag's load after it */
  } else
    atomic_store(pos, v); /* seq_cst: ordered before the load of the other's flag */
}


/* Copy n bytes into the ring at position pos, in two pieces at the end. */
static void put(const struct rlx__shm_end *e, uint64_t pos, const unsigned char *src, size_t n) {
  struct rlx__shm_ring *r = e->r;
  size_t at = (size_t)(pos & (e->cap - 1)), first = e->cap - at;
  if (first > n)
    first = n;
  memcpy(r->data + at, src, first);
  if (n > first)
    memcpy(r->data, src + first, n - first);
}

static void get(const struct rlx__shm_end *e, uint64_t pos, unsigned char *dst, size_t n) {
  const struct rlx__shm_ring *r = e->r;
  size_t at = (size_t)(pos & (e->cap - 1)), first = e->cap - at;
  if (first > n)
    first = n;
  memcpy(dst, r->data + at, first);
  if (n > first)
    memcpy(dst + first, r->data, n - first);
}

/* Room for the producer from head; a peer's head beyond our tail (corrupt)
 * leaves none, not a wrap. */
static size_t room_from(const struct rlx__shm_end *e, uint64_t tail, uint64_t head) {
  size_t used = (size_t)(tail - head);
  return used <= e->cap ? e->cap - used : 0;
}

size_t rlx__shm_ring_write(struct rlx__shm_end *e, const struct iovec *iov, int n) {
  struct rlx__shm_ring *r = e->r;
  uint64_t tail = e->pos;
  size_t want = 0, done = 0;
  for (int i = 0; i < n; i++)
    want += iov[i].iov_len;
  /* head only grows: the one we saw last leaves less room than there is,
   * never more; read it again only when that is not enough */
  size_t room = room_from(e, tail, e->seen);
  if (room < want) {
    e->seen = atomic_load_explicit(&r->head, memory_order_acquire);
    room = room_from(e, tail, e->seen);
  }
  for (int i = 0; i < n && room > 0; i++) {
    size_t k = iov[i].iov_len < room ? iov[i].iov_len : room;
    put(e, tail + done, iov[i].iov_base, k);
    done += k;
    room -= k;
  }
  if (done) {
    e->pos = tail + done;
    publish(e, &r->tail, e->pos, &r->fenced_consumer);
  }
  return done;
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
  uint64_t used = e->pos - atomic_load(&r->head);
  if (used < e->cap || atomic_load(&r->closed)) {
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

/* Bytes the consumer may read from head: fresh, or (cached) those below
 * the tail it saw last, which are published (that load was an acquire),
 * reading tail again only when none of them are left. */
static size_t have_from(struct rlx__shm_end *e, uint64_t head, int cached) {
  if (!cached || e->seen == head || e->seen - head > e->cap)
    e->seen = atomic_load_explicit(&e->r->tail, memory_order_acquire);
  size_t have = (size_t)(e->seen - head);
  return have <= e->cap ? have : e->cap; /* a corrupt tail yields garbage, never a bad copy */
}

size_t rlx__shm_ring_readable(struct rlx__shm_end *e) { return have_from(e, e->pos, 0); }

size_t rlx__shm_ring_read(struct rlx__shm_end *e, void *dst, size_t len) {
  struct rlx__shm_ring *r = e->r;
  uint64_t head = e->pos;
  size_t have = have_from(e, head, 1);
  size_t k = have < len ? have : len;
  if (k == 0)
    return 0;
  get(e, head, dst, k);
  e->pos = head + k;
  publish(e, &r->head, e->pos, &r->fenced_producer);
  return k;
}

int rlx__shm_ring_sleep_flag(struct rlx__shm_end *e) {
  if (e->fenced)
    atomic_store_explicit(&e->r->sleeping, 1, memory_order_relaxed);
  else
    atomic_store(&e->r->sleeping, 1); /* seq_cst: ordered before the load of tail */
  return e->fenced;
}

int rlx__shm_ring_sleep_check(struct rlx__shm_end *e) {
  struct rlx__shm_ring *r = e->r;
  if (atomic_load(&r->tail) != e->pos ||
      atomic_load(&r->closed)) {
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
