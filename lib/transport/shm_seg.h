/* The shared segment of a pair of ranks on one host: two shm rings (one
 * each way) in one memfd. The side that dials makes it and hands the
 * memfd over the Unix socket together with the last bytes of its
 * handshake (SCM_RIGHTS), so only the authenticated peer can have sent it:
 * no name in /dev/shm or /tmp a stranger could open, and when both
 * processes are gone (exit or kill -9) the kernel frees it all. Each side
 * keeps its own copy of the capacity and the mapping length, so a peer
 * scribbling on the header cannot make this side read or write outside
 * its mapping. Wake-ups go over the same socket (shm.c). */
#ifndef RLX_SHM_SEG_H
#define RLX_SHM_SEG_H

#include <stddef.h>
#include "shm_ring.h"

struct rlx__shm_seg {
  void *base; /* the mapping */
  size_t len; /* its length */
  int memfd;  /* kept until handed over (the dialing side), else -1 */
  struct rlx__shm_end out, in; /* this side writes out, reads in */
};

/* Make a segment with two rings of capacity bytes each (a power of two,
 * >= 4 KiB). 0, or -errno. */
int rlx__shm_seg_create(struct rlx__shm_seg *s, size_t capacity);
/* Send len bytes of data (len >= 1) with the segment's memfd attached
 * over the connected nonblocking Unix socket sock. Returns the bytes sent
 * (the memfd went with the first), or -errno (-EAGAIN: nothing sent). The
 * memfd stays open here until rlx__shm_seg_close. */
long rlx__shm_seg_send(const struct rlx__shm_seg *s, int sock, const void *data, size_t len);
/* Size a new memfd to len bytes (ftruncate), or -EFBIG without trying when
 * that passes the process's file-size limit (ulimit -f): ftruncate would
 * raise SIGXFSZ, which kills the process. what names it for the warning
 * (RLX_LOG=warn) that says the shared memory is given up, and why. */
int rlx__memfd_size(int fd, size_t len, const char *what, const char *instead);
/* The same for any descriptor fd (a collective's group segment). */
long rlx__send_with_fd(int sock, int fd, const void *data, size_t len);
/* Map a memfd received from the creator as the other side (its out ring
 * is our in ring). Takes fd: it is closed whatever happens. 0; -EPROTO
 * when it is not a memfd sealed at its size or its header is not sane (a
 * corrupt or hostile segment); another -errno. */
int rlx__shm_seg_map(struct rlx__shm_seg *s, int fd);
/* Unmap and close everything this side holds. */
void rlx__shm_seg_close(struct rlx__shm_seg *s);

#endif
