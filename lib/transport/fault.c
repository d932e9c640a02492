/* Fault hooks for test builds (--enable-fault-injection), compiled out of
 * every other build:
 *   RLX_FAULT_FRAME=flip|truncate|drop|flipref:N[:RANK] spoils the N-th
 *     DATA or MSG frame world rank RANK (default 0) sends: one payload bit flipped
 *     after its CRC was taken, the connection closed half-way through the
 *     payload, or closed before the frame; flipref flips a bit of the
 *     address in a by-reference frame's descriptor (a frame on the stream:
 *     as flip).
 *   RLX_FAULT_CMA=deny fails every copy by reference, as ptrace rules or a
 *     sandbox would, so that the fallback to the stream is exercised;
 *     =denypush fails only a sender's write of its part of a copy both
 *     sides make (the receiver reads it instead); =diepush: a sender asked
 *     for its part exits at once (the receiver must fail, naming it);
 *     =wrongpid: a receiver names pid 1 as its own when it asks for the
 *     sender's part (the sender must refuse and fail the connection);
 *     =descpid: a sender names pid 1 as the memory's in its frames by
 *     reference, and in its stream's header in the shared segment's
 *     exchange (the receiver must refuse them as corrupt). */
#ifdef RLX_FAULT_INJECTION
#include <stdio.h>
#include <stdlib.h>
#include <errno.h>
#include <string.h>
#include <unistd.h>
#include <rlxcoll/errors.h>
#include "base/internal.h"
#include "p2p_internal.h"

enum { FAULT_NONE, FAULT_FLIP, FAULT_TRUNCATE, FAULT_DROP, FAULT_FLIPREF };

/* RLX_FAULT_FRAME, read once: the fault, its frame's number, its rank */
static int parsed, wanted, rank;
static long n, seen;

static void parse(void) {
  if (parsed)
    return;
  parsed = 1;
  const char *f = getenv("RLX_FAULT_FRAME");
  char what[16] = "";
  if (f && sscanf(f, "%15[a-z]:%ld:%d", what, &n, &rank) >= 2 && n > 0)
    wanted = !strcmp(what, "flip") ? FAULT_FLIP
             : !strcmp(what, "truncate") ? FAULT_TRUNCATE
             : !strcmp(what, "drop") ? FAULT_DROP
             : !strcmp(what, "flipref") ? FAULT_FLIPREF : FAULT_NONE;
}

static int fault_action(struct rlx__p2p *p) {
  parse();
  if (wanted == FAULT_NONE || p->rank != rank || ++seen != n)
    return FAULT_NONE;
  static const char *const names[] = {"", "flip", "truncate", "drop", "flipref"};
  rlx__warn("fault injection: %s on DATA or MSG frame %ld", names[wanted], n);
  return wanted;
}

static uint8_t *fault_copy; /* the flipped payload (one frame per process) */

void rlx__fault_free(void) {
  free(fault_copy);
  fault_copy = NULL;
}

/* Returns 1 when the frame was consumed by the fault (x finished). */
static int inject(struct rlx__p2p *p, struct rlx__xfer *x, int action) {
  struct rlx__p2p_conn *c = p->peers[x->peer].conn;
  if (action == FAULT_FLIP && x->len > 0 && (fault_copy = malloc(x->len)) != NULL) {
    memcpy(fault_copy, x->buf, x->len);
    fault_copy[x->len / 2] ^= 0x10;
    x->buf = fault_copy; /* the header keeps the CRC of the true payload */
    return 0;
  }
  if (c == NULL || c->state != C_READY)
    return 0;
  if (action == FAULT_TRUNCATE) /* half a frame, then the end */
    c->tr->cut_short(c, x->hbytes, x->buf, x->len / 2);
  rlx__peer_fail(p, x->peer, RLX_ERR_PEER_LOST, action == FAULT_DROP
                 ? "connection dropped by fault injection"
                 : "connection closed half-way through a frame by fault injection");
  x->status = RLX_ERR_PEER_LOST;
  return 1;
}

int rlx__fault_frames_on(void) {
  parse();
  return wanted != FAULT_NONE;
}

int rlx__fault_frame(struct rlx__p2p *p, struct rlx__xfer *x) {
  int fault = fault_action(p);
  if (fault == FAULT_FLIPREF && x->ref != RLX__REF_NONE) {
    x->cma_desc[2] ^= 0x10; /* after the descriptor's CRC was taken */
    return 0;
  }
  if (fault == FAULT_FLIPREF)
    fault = FAULT_FLIP;
  if (fault == FAULT_NONE)
    return 0;
  x->ref = RLX__REF_NONE; /* spoil what goes on the stream */
  x->hdr.flags = 0;
  x->hdr.payload_crc = rlx__crc32c(x->buf, x->len);
  rlx__frame_encode(&x->hdr, x->hbytes);
  return inject(p, x, fault);
}

static const char *cma_fault(void) {
  const char *f = getenv("RLX_FAULT_CMA");
  return f != NULL ? f : "";
}

/* (read by the caller's thread and the progress thread alike: the cached
 * answers are atomic, relaxed; both threads work out the same value) */
int rlx__fault_cma_denied(void) {
  static int deny = -1;
  int d = __atomic_load_n(&deny, __ATOMIC_RELAXED);
  if (d < 0) {
    d = strcmp(cma_fault(), "deny") == 0;
    __atomic_store_n(&deny, d, __ATOMIC_RELAXED);
  }
  return d;
}

int rlx__fault_cma_wrong_pid(void) { return strcmp(cma_fault(), "wrongpid") == 0; }

int rlx__fault_cma_desc_pid(void) { return strcmp(cma_fault(), "descpid") == 0; }

int rlx__fault_cma_push(void) {
  static int cached = -3; /* (none of the answers below) */
  int push = __atomic_load_n(&cached, __ATOMIC_RELAXED);
  if (push == -3) {
    push = !strcmp(cma_fault(), "deny") || !strcmp(cma_fault(), "denypush") ? -EPERM
           : !strcmp(cma_fault(), "diepush")                               ? 1
           : !strcmp(cma_fault(), "slowpush")                              ? 2
                                                                           : 0;
    __atomic_store_n(&cached, push, __ATOMIC_RELAXED);
  }
  if (push == 1) {
    rlx__warn("fault injection: exiting instead of writing our part of a message");
    _exit(9);
  }
  if (push == 2) {
    rlx__warn("fault injection: 1.5 s before writing our part of a message");
    usleep(1500000);
    return 0;
  }
  return push;
}
#else
/* ISO C wants something in a translation unit. */
typedef int rlx__no_fault_hooks;
#endif
