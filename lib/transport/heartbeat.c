/* Liveness: a connection that sent nothing for a while gets a PING; one
 * that brought nothing (no frame, no PING) for longer is dead (a peer whose
 * host or link vanished, or a stopped process); and an accepted connection
 * that does not finish its handshake in time is dropped (slow-loris).
 * A higher rank we wait for with no connection (it dials us, or dials back
 * when we call up) is called up again every second: one that died before
 * it connected refuses, and is lost, instead of being waited for until
 * the deadline. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <rlxcoll/errors.h>
#include "base/internal.h"
#include "p2p_internal.h"

#define HB_EVERY_NS 1000000000ull
#define HB_SILENCE_NS 10000000000ull /* 5 s gave false losses on loaded 2-core hosts */
#define NUDGE_EVERY_NS 1000000000ull

/* How long ago a stamp was: stamps are ticks (rlx__tick_ns), never later
 * than a precise now read after them; 0 if one ever were. */
static uint64_t since(uint64_t now, uint64_t then) { return now > then ? now - then : 0; }

static void send_ping(struct rlx__p2p_conn *c) {
  struct rlx__frame_hdr h;
  uint8_t bytes[RLX__FRAME_HDR_SIZE];
  memset(&h, 0, sizeof(h));
  h.type = RLX__FT_PING;
  h.src = (uint32_t)c->p->rank;
  rlx__frame_encode(&h, bytes);
  rlx__write_ctl(c, bytes); /* stamps last_tx */
}


/* Dial again the peers that closed our dial in its handshake (conn.c's
 * rlx__conn_closed_in_handshake), once their pause is over. */
static void redial_closed_peers(struct rlx__p2p *p, uint64_t now) {
  for (int r = 0; r < p->size; r++) {
    struct rlx__p2p_peer *pe = &p->peers[r];
    if (pe->redial_at == 0 || now < pe->redial_at)
      continue;
    pe->redial_at = 0;
    if (!pe->conn && !pe->pending && !pe->lost)
      rlx__conn_ensure(p, r, 1);
  }
}

static void nudge_silent_peers(struct rlx__p2p *p, uint64_t now) {
  for (int r = p->rank + 1; r < p->size; r++) {
    struct rlx__p2p_peer *pe = &p->peers[r];
    if (pe->conn || pe->pending || pe->lost ||
        (rlx__list_empty(&pe->posted) && rlx__list_empty(&pe->sendq) && pe->msg_waits == 0))
      continue;
    if (pe->nudged == 0 || now - pe->nudged < NUDGE_EVERY_NS) {
      if (pe->nudged == 0)
        pe->nudged = now; /* (not at once: it may be dialing already) */
      continue;
    }
    pe->nudged = now;
    rlx__conn_ensure(p, r, 1);
  }
}

void rlx__heartbeat_sweep(uv_timer_t *t) {
  struct rlx__p2p *p = t->data;
  uint64_t now = rlx__now_ns();
  if (!p->closing) {
    nudge_silent_peers(p, now);
    redial_closed_peers(p, now);
  }
  /* The sweep runs every half second. If it comes round a whole silence
   * period late, this process (not only its peers) was stalled: the whole
   * host paused, or the process was stopped or starved, and it cannot
   * tell a silent peer from one that was paused with it. The clocks
   * restart; a dead peer is still found one silence period after we run
   * again. (Shorter delays, 1-3 s on a loaded 2-core host, are common and
   * must not restart the clocks, or a stopped peer would be found late or
   * never; pings that arrived meanwhile are caught by the transport's unread.) */
  int stalled = p->last_sweep && now - p->last_sweep > HB_SILENCE_NS;
  if (stalled)
    rlx__debug("heartbeat sweep came %.1f s late: silence clocks restart",
               (double)(now - p->last_sweep) / 1e9);
  p->last_sweep = now;
  struct rlx__list *l = p->conns.next;
  while (l != &p->conns) {
    struct rlx__p2p_conn *c = rlx__container_of(l, struct rlx__p2p_conn, link);
    l = l->next;
    if ((c->state == C_HS_HELLO || c->state == C_HS_PROOF) && now > c->hs_deadline)
      rlx__conn_fail(c, RLX_ERR_AUTH, "no complete handshake within 10 s");
    if (c->state != C_READY || c->peer < 0)
      continue;
    if (stalled || (c->last_rx && since(now, c->last_rx) > HB_SILENCE_NS && c->tr->unread(c)))
      c->last_rx = now;
    if (c->last_rx && since(now, c->last_rx) > HB_SILENCE_NS) {
      char why[160];
      snprintf(why, sizeof(why), "nothing from rank %d for %.0f s, not even a heartbeat "
               "(its host or link gone, or the process stopped?)", c->peer,
               (double)since(now, c->last_rx) / 1e9);
      rlx__conn_fail_silent(c, why);
      continue;
    }
    if (since(now, c->last_tx) > HB_EVERY_NS)
      send_ping(c);
  }
}
