/* The shared segment of a pair of ranks on one host: two shm rings (one
 * each way) in one memfd, and an eventfd each side sleeps on. The side
 * that dials makes it and hands the three descriptors over the already
 * authenticated Unix socket (SCM_RIGHTS): no name in /dev/shm or /tmp a
 * stranger could open, and when both processes are gone (exit or kill -9)
 * the kernel frees it all. Each side keeps its own copy of the capacity
 * and the mapping length, so a peer scribbling on the header cannot make
 * this side read or write outside its mapping. */
#ifndef RLX_SHM_SEG_H
#define RLX_SHM_SEG_H

#include <stddef.h>
#include "shm_ring.h"

struct rlx__shm_seg {
  void *base;   /* the mapping */
  size_t len;   /* its length */
  int memfd;    /* kept until handed over (the dialing side), else -1 */
  int wake_out; /* eventfd the peer sleeps on: written to wake it */
  int wake_in;  /* eventfd this side sleeps on (libuv may watch it) */
  struct rlx__shm_end out, in; /* this side writes out, reads in */
};

/* Make a segment with two rings of capacity bytes each (a power of two,
 * >= 4 KiB) and two eventfds. 0, or -errno. */
int rlx__shm_seg_create(struct rlx__shm_seg *s, size_t capacity);
/* Send the segment's memfd and both eventfds over the connected Unix
 * socket fd, with the 8 bytes of tag as the message (nonblocking socket:
 * -EAGAIN when it is full). 0, or -errno. */
int rlx__shm_seg_send(const struct rlx__shm_seg *s, int sock, const void *tag8);
/* Receive what rlx__shm_seg_send sent and map it as the other side (its
 * out ring is our in ring). 0; -EAGAIN when nothing is there yet; -EPROTO
 * for a message without exactly three descriptors or with a segment whose
 * header is not sane (every received descriptor is closed then);
 * another -errno. The tag read is written to tag8. */
int rlx__shm_seg_recv(struct rlx__shm_seg *s, int sock, void *tag8);
/* Unmap and close everything this side holds. */
void rlx__shm_seg_close(struct rlx__shm_seg *s);
/* Wake the peer if it said it sleeps (after writing to s->out). */
void rlx__shm_seg_wake_peer(struct rlx__shm_seg *s);

#endif
