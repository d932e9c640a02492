/* A one-way byte stream between two processes of one host, in shared
 * memory: one producer, one consumer, no lock, no syscall while both run.
 * It behaves like a socket to its user: a write takes as many bytes as
 * there is room for, a read gives as many as are there; frames keep their
 * 64-byte header, so the reader's state machine is the socket's.
 *
 * Inside, a write is a record: an 8-byte word, then its bytes, padded to
 * 8. The word, stored last (release), says the record is there and how
 * long it is: it is the ring's key XOR the record's position (in 8-byte
 * units, shifted up 24 bits) XOR the length (below 2^24). The consumer
 * polls the word at its own position and takes it when it decodes to a
 * length that fits; what the memory there held before (a record a lap
 * earlier, or the bytes of one) decodes to the old position, or, being
 * someone's data, to the key's bits, which a program does not know. So a
 * small message costs the line or two it is written in, and no other:
 * with a tail position beside the data the consumer read the tail's line
 * and then the data's, and the producer took both back, every message.
 *
 * Positions are byte counts that only grow (64-bit: they never wrap in
 * practice); the byte at position x lives at data[x % capacity]. Each
 * side keeps its own position in its own memory; the consumer publishes
 * head (on its own line) after each read, and the producer
 * reads it again only when the head it saw last leaves too little room.
 * The flags below sit on lines of their own: each is read on every write
 * or read and written only before a sleep or a wait for room, so it stays
 * in the reader's cache. A consumer about to block sets `sleeping` and
 * looks once more; a producer that publishes a record and sees
 * `sleeping` wakes it (the caller's doorbell: one byte on the pair's
 * Unix socket, the only syscall, and only then). The other way round, a
 * producer that found the ring full sets `wants_room`, and the consumer
 * that frees room rings it. The segment itself is a memfd handed over
 * the authenticated Unix socket, so no name exists a stranger could open
 * and nothing outlives the processes that map it. A peer that writes
 * garbage into the ring can make us read garbage (the frame reader checks
 * every header), never copy outside it: every offset is masked with the
 * capacity this side checked once. */
#ifndef RLX_SHM_RING_H
#define RLX_SHM_RING_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#define RLX__SHM_LINE 64

struct rlx__shm_ring {
  _Alignas(RLX__SHM_LINE) _Atomic uint64_t head;       /* consumer: bytes read so far */
  _Alignas(RLX__SHM_LINE) _Atomic uint32_t wants_room; /* producer: full, tell me when it drains */
  _Alignas(RLX__SHM_LINE) _Atomic uint32_t sleeping;   /* consumer: about to block, wake me */
  _Alignas(RLX__SHM_LINE) _Atomic uint32_t closed;     /* either side: gone, no more bytes */
  uint64_t capacity;                                   /* set once by the creator */
  uint64_t key;                                        /* the records' key, set once by the creator */
  /* set once by each side: it is registered for asymmetric fences and
   * fences heavily before it sleeps or waits (lib/base/fence.h); only
   * then may the other side publish its position without a full fence */
  _Atomic uint32_t fenced_producer, fenced_consumer;
  _Alignas(RLX__SHM_LINE) unsigned char data[];
};

/* One side's handle on a ring: the shared header and data, and the
 * capacity as this side checked it (never re-read from shared memory, so
 * a peer that rewrites the header cannot move our copies outside the
 * mapping; positions are masked with it). */
struct rlx__shm_end {
  struct rlx__shm_ring *r;
  size_t cap;
  uint64_t key;  /* the records' key, as this side read it once */
  uint64_t seen; /* the head: as last read (producer), as last published (consumer) */
  uint64_t pos;  /* this side's own position: the next record's (producer), the
                  * current record's (consumer); kept here, never read back from the ring */
  uint64_t at;   /* consumer: the position of the current record's next byte */
  size_t left;   /* consumer: bytes of the current record not read yet (0: none taken) */
  int fenced;    /* this side said it fences heavily (rlx__shm_ring_fence) */
};

/* Bytes a segment needs for a ring of capacity bytes (a power of two, at
 * least 4 KiB). */
size_t rlx__shm_ring_bytes(size_t capacity);
/* Lay out a ring in zeroed memory of rlx__shm_ring_bytes(capacity). */
void rlx__shm_ring_init(struct rlx__shm_end *e, struct rlx__shm_ring *r, size_t capacity);
/* A ring mapped by the other side, in len bytes of mapping: 0 and e set
 * when its header is sane, -1 when not (a corrupt or hostile segment). */
int rlx__shm_ring_attach(struct rlx__shm_end *e, struct rlx__shm_ring *r, size_t len);

/* After init or attach, the side that produces (producer 1) or consumes
 * (0) on e: registers this process for asymmetric fences and says so in
 * the ring, so that the other side, once it has said the same, publishes
 * its position with a plain store. Without it (or where the kernel has no
 * membarrier) both sides use full fences, as a ring always did. Returns
 * whether this side now fences heavily. */
int rlx__shm_ring_fence(struct rlx__shm_end *e, int producer);

/* Producer: copy as much of iov[0..n) as fits, as one record; returns
 * the bytes taken (a record's word and padding take room too). */
size_t rlx__shm_ring_write(struct rlx__shm_end *e, const struct iovec *iov, int n);
/* Consumer: when the next record is a whole frame (and no record is half
 * read), copy it into dst and return its length; 0 when it is not one
 * (rlx__shm_ring_read stops before one, and takes the others); SIZE_MAX
 * when it is longer than cap (a broken stream). */
size_t rlx__shm_ring_read_whole(struct rlx__shm_end *e, void *dst, size_t cap);
#define RLX__SHM_WHOLE_MAX 4096
/* Consumer: the same without the copy where it can: *at points at the
 * record's bytes in the ring itself when they do not wrap around its
 * end, else at buf, where they were copied. The record stays the
 * consumer's (the producer does not write over it) until
 * rlx__shm_ring_release_whole; nothing else may be read meanwhile. */
size_t rlx__shm_ring_peek_whole(struct rlx__shm_end *e, void *buf, size_t cap,
                                const unsigned char **at);
/* Consumer: done with the len bytes rlx__shm_ring_peek_whole gave. */
void rlx__shm_ring_release_whole(struct rlx__shm_end *e, size_t len);

/* Producer: hdr (hlen bytes), then payload (plen), as one record flagged
 * as a whole frame (a frame packed by the caller, shm.c), all of it or
 * nothing (0: no room; write it as bytes then). At most
 * RLX__SHM_WHOLE_MAX bytes. */
size_t rlx__shm_ring_write_packed(struct rlx__shm_end *e, const void *hdr, size_t hlen,
                                  const void *payload, size_t plen);

/* Producer, after writing: 1 when the consumer said it sleeps and must be
 * woken (the caller rings it), else 0. Clears the flag. */
int rlx__shm_ring_wake_needed(struct rlx__shm_end *e);

/* Producer, when a write did not take everything: announce that it waits
 * for room, then 1 if room appeared meanwhile (write again now), 0 if the
 * consumer will ring once it has read. */
int rlx__shm_ring_want_room(struct rlx__shm_end *e);
/* Consumer, after reading: 1 when the producer waits for room and must be
 * told (the caller rings it), else 0. Clears the flag. */
int rlx__shm_ring_room_wake_needed(struct rlx__shm_end *e);

/* Consumer: bytes ready to read. */
size_t rlx__shm_ring_readable(struct rlx__shm_end *e);
/* Consumer: 0 when there is nothing to read (no record half read, and the
 * word at its position decodes to none: shm_ring.c's record words, 24
 * bits of length and flag under the position), 1 when there may be: the
 * look of an idle poll, inline (a call and a decode per ring were a
 * quarter of a waiting receiver's turn). */
static inline int rlx__shm_ring_maybe(const struct rlx__shm_end *e) {
  if (e->left != 0)
    return 1;
  const _Atomic uint64_t *w = (const _Atomic uint64_t *)(const void *)
      (e->r->data + (e->pos & (e->cap - 1)));
  uint64_t v = atomic_load_explicit(w, memory_order_relaxed) ^ e->key ^ ((e->pos >> 3) << 24);
  return (v >> 24) == 0 && (v & 0x7fffffu) != 0;
}
/* Consumer: copy up to len bytes into dst; returns the bytes copied. */
size_t rlx__shm_ring_read(struct rlx__shm_end *e, void *dst, size_t len);
/* Consumer, before blocking: announce it, then 1 if bytes arrived in the
 * meantime (do not block; call rlx__shm_ring_awake), 0 if it may block. */
int rlx__shm_ring_prepare_sleep(struct rlx__shm_end *e);
/* The same in two steps, for many rings with one heavy fence: set the
 * flag (1: a heavy fence must follow before the check, rlx__fence_heavy),
 * then check as rlx__shm_ring_prepare_sleep does after its fence. */
int rlx__shm_ring_sleep_flag(struct rlx__shm_end *e);
int rlx__shm_ring_sleep_check(struct rlx__shm_end *e);
void rlx__shm_ring_awake(struct rlx__shm_end *e);

/* Either side: mark the stream closed (a clean finalize); the other side
 * reads what is left, then sees it. */
void rlx__shm_ring_close(struct rlx__shm_end *e);
int rlx__shm_ring_is_closed(const struct rlx__shm_end *e);

#endif
