/* The kernel's copy between our memory and another process's
 * (process_vm_readv, process_vm_writev), for copies by reference (cma.c).
 *
 * The kernel copies with `rep movsb` too, and on processors where that
 * instruction is slow when the destination is 1-63 bytes past the source
 * modulo 4 KiB (base/copy.h: AMD Zen 3 here) a copy by reference at such
 * a distance is just as slow: a 2-rank ping-pong of 64 KiB between two
 * malloc'ed buffers 16 bytes apart modulo a page took 35-44 us, against
 * 10-12 us at distance 0 and vader's 10-12. There, the copy goes through
 * a buffer of this thread's placed at distance 0 from the other process's
 * bytes, 256 KiB at a time: the kernel copies at full speed, and our own
 * copy between the buffer and ours steps around `rep movsb`
 * (rlx__copy). Elsewhere, and at other distances, straight. */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/uio.h>
#include "base/copy.h"
#include "p2p_internal.h"

#define BOUNCE_BYTES ((size_t)256 << 10)

static pthread_key_t bounce_key;
static pthread_once_t bounce_once = PTHREAD_ONCE_INIT;
static _Thread_local unsigned char *bounce __attribute__((tls_model("initial-exec")));

static void bounce_key_make(void) { (void)pthread_key_create(&bounce_key, free); }

/* This thread's buffer (BOUNCE_BYTES past any offset in a page), or NULL. */
static unsigned char *bounce_buffer(void) {
  if (bounce != NULL)
    return bounce;
  pthread_once(&bounce_once, bounce_key_make);
  void *p = NULL;
  if (posix_memalign(&p, 4096, BOUNCE_BYTES + 4096) != 0)
    return NULL;
  if (pthread_setspecific(bounce_key, p) != 0) {
    free(p);
    return NULL;
  }
  return bounce = p;
}

/* len bytes between buf and addr in process pid, as one call would move
 * them, looping over short counts: 0, or -errno. */
static int straight(int pid, uint64_t addr, void *buf, size_t len, int write) {
  size_t done = 0;
  while (done < len) {
    struct iovec local = {(char *)buf + done, len - done};
    struct iovec remote = {(void *)(uintptr_t)(addr + done), len - done};
    ssize_t n = write ? process_vm_writev(pid, &local, 1, &remote, 1, 0)
                      : process_vm_readv(pid, &local, 1, &remote, 1, 0);
    if (n < 0) {
      if (errno == EINTR)
        continue;
      return -errno;
    }
    if (n == 0)
      return -EFAULT;
    done += (size_t)n;
  }
  return 0;
}

int rlx__cma_move(int pid, uint64_t addr, void *buf, size_t len, int write) {
  const void *remote = (const void *)(uintptr_t)addr;
  /* (the kernel's destination minus its source: ours minus theirs for a read) */
  int slow = write ? rlx__copy_short_distance(remote, buf, len)
                   : rlx__copy_short_distance(buf, remote, len);
  unsigned char *b;
  if (!slow || !rlx__copy_movsb_slow() || (b = bounce_buffer()) == NULL)
    return straight(pid, addr, buf, len, write);
  for (size_t done = 0; done < len;) {
    size_t k = len - done < BOUNCE_BYTES ? len - done : BOUNCE_BYTES;
    unsigned char *at = b + ((addr + done) & 4095); /* (distance 0 from theirs) */
    char *mine = (char *)buf + done;
    int rc;
    if (write) {
      rlx__copy(at, mine, k);
      rc = straight(pid, addr + done, at, k, 1);
    } else if ((rc = straight(pid, addr + done, at, k, 0)) == 0) {
      rlx__copy(mine, at, k);
    }
    if (rc != 0)
      return rc;
    done += k;
  }
  return 0;
}
