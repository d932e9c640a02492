/* Point-to-point messages (rlx_send, rlx_recv): MSG frames, matched by
 * communicator, source and tag against receives in the order they were
 * posted, at the frame's header, so that a posted receive's payload goes
 * straight into its buffer. A message no receive wants yet is kept whole,
 * in the order messages arrived (a big one sent by reference is held in
 * its sender's memory a while, cma.c). One connection carries a sender's frames
 * in the order sent, so MPI's rule holds: two messages from one sender
 * that one receive could both match are received in the order sent.
 * Everything here runs under the engine's loop lock. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <rlxcoll/errors.h>
#include "p2p_internal.h"
#include "base/copy.h"

static int wants(const struct rlx__xfer *x, int src, const struct rlx__frame_hdr *h) {
  return x->hdr.comm_id == h->comm_id && (x->peer == RLX__MSG_ANY || x->peer == src) &&
         (x->hdr.segment == RLX__MSG_ANY_TAG || x->hdr.segment == h->segment);
}

struct rlx__xfer *rlx__msg_find_posted(struct rlx__p2p *p, int src,
                                       const struct rlx__frame_hdr *h) {
  for (struct rlx__list *l = p->msg_posted.next; l != &p->msg_posted; l = l->next) {
    struct rlx__xfer *x = rlx__container_of(l, struct rlx__xfer, link);
    if (wants(x, src, h))
      return x;
  }
  return NULL;
}

void rlx__msg_unpost(struct rlx__p2p *p, struct rlx__xfer *x) {
  if (x->queued != 1) /* (2: on a sender's split_wait, cma.c) */
    return;
  rlx__list_remove(&x->link);
  x->queued = 0;
  if (x->peer >= 0)
    p->peers[x->peer].msg_waits--;
}

/* A kept message into x: its status, or RLX__HELD_RESEND (x waits for
 * the payload on the stream). */
static int deliver(struct rlx__p2p *p, struct rlx__umsg *m, struct rlx__xfer *x) {
  if (m->held)
    return rlx__cma_take_held(p, m, x);
  x->got = m->hdr;
  if (!m->crc_ok)
    return RLX_ERR_CORRUPT;
  if (m->hdr.payload_len > x->len)
    return RLX_ERR_TRUNCATE;
  if (m->hdr.payload_len)
    rlx__copy(x->buf, m->data, m->hdr.payload_len);
  return RLX_OK;
}

/* The held message whose copy was refused, for m (its payload, sent
 * again on the stream): m takes its place in the arrival order. */
static int into_place(struct rlx__p2p *p, struct rlx__umsg *m) {
  for (struct rlx__list *l = p->msg_unexpected.next; l != &p->msg_unexpected; l = l->next) {
    struct rlx__umsg *h = rlx__container_of(l, struct rlx__umsg, link);
    if (h->held == 2 && h->hdr.src == m->hdr.src && rlx__same_key(&h->hdr, &m->hdr)) {
      rlx__list_push(&h->link, &m->link);
      rlx__list_remove(&h->link);
      rlx__umsg_put(p, h);
      p->held_resends--;
      return 1;
    }
  }
  return 0;
}

void rlx__msg_arrived(struct rlx__p2p *p, struct rlx__umsg *m) {
  if (m->discard) { /* its receive already failed (truncated) */
    rlx__umsg_put(p, m);
    return;
  }
  struct rlx__xfer *x = rlx__msg_find_posted(p, (int)m->hdr.src, &m->hdr);
  if (x == NULL) {
    if (p->held_resends == 0 || m->held || !into_place(p, m))
      rlx__list_push(&p->msg_unexpected, &m->link);
    return;
  }
  int st = deliver(p, m, x);
  rlx__umsg_put(p, m);
  if (st == RLX__HELD_RESEND || st == RLX__HELD_SPLIT)
    return; /* x stays posted for the payload, or waits for its sender's part */
  rlx__msg_unpost(p, x);
  rlx__xfer_finish(x, st);
}

/* To this rank itself: straight into a posted receive, or kept. */
static int to_self(struct rlx__p2p *p, struct rlx__xfer *x) {
  struct rlx__frame_hdr h = x->hdr;
  h.type = RLX__FT_MSG;
  h.flags = 0;
  h.src = (uint32_t)p->rank;
  h.payload_len = x->len;
  h.payload_crc = 0;
  x->got = h;
  struct rlx__xfer *r = rlx__msg_find_posted(p, p->rank, &h);
  if (r != NULL) {
    rlx__msg_unpost(p, r);
    r->got = h;
    int st = x->len > r->len ? RLX_ERR_TRUNCATE : RLX_OK;
    if (st == RLX_OK && x->len)
      rlx__copy(r->buf, x->buf, x->len);
    rlx__xfer_finish(r, st);
  } else {
    struct rlx__umsg *m = rlx__umsg_alloc(p, x->len);
    if (m == NULL) {
      x->status = RLX_ERR_NOMEM;
      return 1;
    }
    m->hdr = h;
    m->crc_ok = 1;
    m->discard = 0;
    if (x->len)
      rlx__copy(m->data, x->buf, x->len);
    rlx__list_push(&p->msg_unexpected, &m->link);
  }
  x->status = RLX_OK;
  return 1;
}

int rlx__msg_send(struct rlx__p2p *p, struct rlx__xfer *x) {
  x->hdr.seq = RLX__SEQ_MSG | ++p->peers[x->peer].msg_sent;
  if (x->peer == p->rank)
    return to_self(p, x);
  return rlx__write_frame(p, x, RLX__FT_MSG);
}

int rlx__msg_send_packed(struct rlx__p2p *p, int peer, uint32_t comm_id, uint32_t tag,
                         uint8_t dtype, const void *buf, size_t len) {
  struct rlx__p2p_peer *pe = &p->peers[peer];
  struct rlx__p2p_conn *c = pe->conn;
  if (peer == p->rank || pe->lost || c == NULL || c->state != C_READY || c->write_dead ||
      c->tr->send_packed == NULL || !rlx__list_empty(&pe->sendq))
    return 0;
#ifdef RLX_FAULT_INJECTION
  if (rlx__fault_frames_on())
    return 0; /* (each frame counted and maybe spoiled by rlx__write_frame) */
#endif
  uint8_t hdr[RLX__FRAME_PACKED_SIZE];
  rlx__frame_pack_msg(dtype, comm_id, tag, RLX__SEQ_MSG | (pe->msg_sent + 1), hdr);
  if (!c->tr->send_packed(c, hdr, buf, len))
    return 0;
  pe->msg_sent++;
  return 1;
}

/* A lost member a receive from any source cannot wait past: -1 if none. */
static int lost_member(const struct rlx__p2p *p, const struct rlx__xfer *x) {
  for (int i = 0; i < x->nany; i++)
    if (x->any_of[i] != p->rank && p->peers[x->any_of[i]].lost)
      return x->any_of[i];
  return -1;
}

int rlx__msg_recv(struct rlx__p2p *p, struct rlx__xfer *x) {
  x->is_send = 0;
  x->queued = 0;
  rlx__list_init(&x->link);
  for (struct rlx__list *l = p->msg_unexpected.next; l != &p->msg_unexpected; l = l->next) {
    struct rlx__umsg *m = rlx__container_of(l, struct rlx__umsg, link);
    if (wants(x, (int)m->hdr.src, &m->hdr)) {
      rlx__list_remove(&m->link);
      int st = deliver(p, m, x);
      rlx__umsg_put(p, m);
      if (st == RLX__HELD_RESEND)
        break; /* posted below, for the payload on its way */
      if (st == RLX__HELD_SPLIT)
        return 0; /* its sender writes its part: completes then */
      x->status = st;
      return 1;
    }
  }
  /* Nothing here, and who could send it is gone: from any source, any
   * member lost (MPI's fault-tolerance proposal does the same) */
  int gone = x->peer == RLX__MSG_ANY ? lost_member(p, x)
             : x->peer != p->rank && p->peers[x->peer].lost ? x->peer : -1;
  if (gone >= 0) {
    memset(&x->got, 0, sizeof(x->got));
    x->got.src = (uint32_t)gone;
    x->status = p->peers[gone].lost;
    return 1;
  }
  x->hdr.seq = ++p->msg_posts;
  x->queued = 1;
  rlx__list_push(&p->msg_posted, &x->link);
  if (x->peer >= 0 && x->peer != p->rank) {
    p->peers[x->peer].msg_waits++;
    rlx__conn_ensure(p, x->peer, 0);
    rlx__sock_watch(p, x->peer);
  }
  return 0;
}

void rlx__msg_cancel(struct rlx__p2p *p, struct rlx__xfer *x) {
  x->cb = NULL;
  if (x->queued == 2) {
    rlx__cma_split_cancel(p, x);
    return;
  }
  if (x->queued) {
    rlx__msg_unpost(p, x);
    return;
  }
  /* matched at its header: the payload may be on its way into x->buf */
  int from = (int)x->got.src;
  if (x->got.type == RLX__FT_MSG && from >= 0 && from < p->size && from != p->rank) {
    struct rlx__p2p_conn *c = p->peers[from].conn;
    if (c != NULL && c->target == x) {
      c->target = NULL;
      rlx__peer_fail(p, from, RLX_ERR_PEER_LOST, "a receive was abandoned mid-message");
    }
  }
}

void rlx__msg_peer_lost(struct rlx__p2p *p, int peer, int err) {
  /* Its held messages are not here to take: their payloads were in its
   * memory, and its sends did not complete. */
  for (struct rlx__list *l = p->msg_unexpected.next; l != &p->msg_unexpected;) {
    struct rlx__umsg *m = rlx__container_of(l, struct rlx__umsg, link);
    l = l->next;
    if (m->held && m->from == peer) {
      p->held_resends -= m->held == 2;
      rlx__list_remove(&m->link);
      rlx__umsg_put(p, m);
    }
  }
  struct rlx__list *l = p->msg_posted.next;
  while (l != &p->msg_posted) {
    struct rlx__xfer *x = rlx__container_of(l, struct rlx__xfer, link);
    l = l->next;
    int hit = x->peer == peer;
    for (int i = 0; !hit && x->peer == RLX__MSG_ANY && i < x->nany; i++)
      hit = x->any_of[i] == peer;
    if (!hit)
      continue;
    rlx__msg_unpost(p, x);
    memset(&x->got, 0, sizeof(x->got));
    x->got.src = (uint32_t)peer;
    rlx__xfer_finish(x, err);
  }
}

int rlx__msg_big_posted(const struct rlx__p2p *p, int peer, size_t big) {
  if (rlx__list_empty(&p->msg_posted))
    return 0;
  const struct rlx__xfer *x = rlx__container_of(p->msg_posted.next, struct rlx__xfer, link);
  return (x->peer == peer || x->peer == RLX__MSG_ANY) && x->len >= big;
}

void rlx__msg_free(struct rlx__p2p *p) {
  while (p->msg_unexpected.next != NULL && !rlx__list_empty(&p->msg_unexpected)) {
    struct rlx__list *l = p->msg_unexpected.next;
    rlx__list_remove(l);
    free(rlx__container_of(l, struct rlx__umsg, link));
  }
}
