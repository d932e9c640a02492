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
 * head then loads it. */
#include <string.h>
#include "shm_ring.h"

size_t rlx__shm_ring_bytes(size_t capacity) {
  return sizeof(struct rlx__shm_ring) + capacity;
}

void rlx__shm_ring_init(struct rlx__shm_end *e, struct rlx__shm_ring *r, size_t capacity) {
  e->r = r;
  e->cap = capacity;
  e->seen = 0;
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
  return 0;
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
  uint64_t tail = atomic_load_explicit(&r->tail, memory_order_relaxed);
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
  if (done)
    atomic_store(&r->tail, tail + done); /* seq_cst: ordered before the load of sleeping */
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
  atomic_store(&r->wants_room, 1); /* seq_cst: ordered before the load of head */
  uint64_t used = atomic_load(&r->tail) - atomic_load(&r->head);
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

size_t rlx__shm_ring_readable(struct rlx__shm_end *e) {
  return have_from(e, atomic_load_explicit(&e->r->head, memory_order_relaxed), 0);
}

size_t rlx__shm_ring_read(struct rlx__shm_end *e, void *dst, size_t len) {
  struct rlx__shm_ring *r = e->r;
  uint64_t head = atomic_load_explicit(&r->head, memory_order_relaxed);
  size_t have = have_from(e, head, 1);
  size_t k = have < len ? have : len;
  if (k == 0)
    return 0;
  get(e, head, dst, k);
  atomic_store(&r->head, head + k); /* seq_cst: ordered before the load of wants_room */
  return k;
}

int rlx__shm_ring_prepare_sleep(struct rlx__shm_end *e) {
  struct rlx__shm_ring *r = e->r;
  atomic_store(&r->sleeping, 1); /* seq_cst: ordered before the load of tail */
  if (atomic_load(&r->tail) != atomic_load_explicit(&r->head, memory_order_relaxed) ||
      atomic_load(&r->closed)) {
    atomic_store(&r->sleeping, 0);
    return 1;
  }
  return 0;
}

void rlx__shm_ring_awake(struct rlx__shm_end *e) { atomic_store(&e->r->sleeping, 0); }

void rlx__shm_ring_close(struct rlx__shm_end *e) { atomic_store(&e->r->closed, 1); }

int rlx__shm_ring_is_closed(const struct rlx__shm_end *e) {
  return atomic_load(&e->r->closed) != 0;
}
