/* Matching: a frame is for the receive posted with the same (communicator,
 * sequence, segment); it agrees with it when the signatures (what each side
 * called, opaque here) are equal byte for byte and the lengths too. A frame
 * that comes first waits in a buffer from a pool, so the steady state
 * allocates nothing per message. */
#include <stdlib.h>
#include <string.h>
#include <rlxcoll/errors.h>
#include "p2p_internal.h"
#include "base/copy.h"

#define POOL_MAX 16
#define POOL_BIG (1u << 20) /* bigger buffers are not kept */
/* Frames of up to CLASS_MAX bytes wait in buffers of their size rounded
 * up to a power of two (CLASS_MIN at least), kept for reuse per size, up
 * to CLASS_KEEP bytes a size. A sender of small calls runs ahead of its
 * receiver as an eager sender does, and with one 4 KiB buffer or more per
 * frame the receiver's heap grew by a page or more per early frame, each
 * a fault the receiver paid (2 ranks, point to point: an 8-byte gather 11
 * us a call, a 1 KiB scatterv 14-23 us, most of it page faults). */
#define CLASS_MIN 256u
#define CLASS_MAX (CLASS_MIN << (RLX__UMSG_CLASSES - 1)) /* 64 KiB */
#define CLASS_KEEP (512u << 10)

/* The class of a frame of len bytes (<= CLASS_MAX) and its buffer's size. */
static int class_of(size_t len, size_t *cap) {
  int k = 0;
  for (*cap = CLASS_MIN; *cap < len; *cap <<= 1)
    k++;
  return k;
}
#define EARLY_BUCKETS 4096

static struct rlx__list *early_bucket(struct rlx__p2p *p, uint32_t comm_id, uint64_t seq) {
  uint64_t h = (seq ^ ((uint64_t)comm_id << 40)) * 0x9E3779B97F4A7C15ull;
  return &p->early_by_call[(h >> 52) & (EARLY_BUCKETS - 1)];
}

/* An early frame onto its peer's unexpected list, and into its bucket. */
static void keep_early(struct rlx__p2p *p, int peer, struct rlx__umsg *m) {
  rlx__list_push(&p->peers[peer].unexpected, &m->link);
  m->from = peer;
  if (p->early_by_call == NULL &&
      (p->early_by_call = malloc(sizeof(struct rlx__list) * EARLY_BUCKETS)) != NULL)
    for (int b = 0; b < EARLY_BUCKETS; b++)
      rlx__list_init(&p->early_by_call[b]);
  if (p->early_by_call != NULL)
    rlx__list_push(early_bucket(p, m->hdr.comm_id, m->hdr.seq), &m->klink);
}

static struct rlx__umsg *umsg_get(struct rlx__p2p *p, size_t len) {
  if (len <= CLASS_MAX) {
    struct rlx__umsg *m;
    size_t cap;
    int k = class_of(len, &cap);
    if (p->npool_class[k] > 0) {
      m = rlx__container_of(p->pool_class[k].next, struct rlx__umsg, link);
      rlx__list_remove(&m->link);
      p->npool_class[k]--;
    } else if ((m = malloc(sizeof(*m) + cap)) != NULL) {
      m->cap = cap;
    }
    if (m != NULL)
      m->held = 0;
    return m;
  }
  for (struct rlx__list *l = p->pool.next; l != &p->pool; l = l->next) {
    struct rlx__umsg *m = rlx__container_of(l, struct rlx__umsg, link);
    if (m->cap >= len) {
      rlx__list_remove(&m->link);
      p->npool--;
      m->held = 0;
      return m;
    }
  }
  struct rlx__umsg *m = malloc(sizeof(*m) + len);
  if (m != NULL) {
    m->cap = len;
    m->held = 0;
  }
  return m;
}

void rlx__umsg_put(struct rlx__p2p *p, struct rlx__umsg *m) {
  if (m == NULL)
    return;
  if (m->cap <= CLASS_MAX) { /* (a class's size: umsg_get) */
    size_t cap;
    int k = class_of(m->cap, &cap);
    if ((size_t)p->npool_class[k] < CLASS_KEEP / cap) {
      rlx__list_push(&p->pool_class[k], &m->link);
      p->npool_class[k]++;
    } else {
      free(m);
    }
  } else if (p->npool < POOL_MAX && m->cap <= POOL_BIG) {
    rlx__list_push(&p->pool, &m->link);
    p->npool++;
  } else {
    free(m);
  }
}

static void free_all(struct rlx__list *pool) {
  while (pool->next != NULL && !rlx__list_empty(pool)) {
    struct rlx__list *l = pool->next;
    rlx__list_remove(l);
    free(rlx__container_of(l, struct rlx__umsg, link));
  }
}

void rlx__pool_free(struct rlx__p2p *p) {
  free_all(&p->pool);
  p->npool = 0;
  for (int k = 0; k < RLX__UMSG_CLASSES; k++) {
    free_all(&p->pool_class[k]);
    p->npool_class[k] = 0;
  }
}

struct rlx__umsg *rlx__umsg_alloc(struct rlx__p2p *p, size_t len) { return umsg_get(p, len); }

struct rlx__umsg *rlx__umsg_new(struct rlx__p2p_conn *c, const struct rlx__frame_hdr *h,
                                size_t len) {
  struct rlx__umsg *m = umsg_get(c->p, len);
  if (m == NULL) {
    rlx__peer_fail(c->p, c->peer, RLX_ERR_NOMEM, "no memory for an incoming frame");
    return NULL;
  }
  m->hdr = *h;
  m->crc_ok = 0;
  rlx__list_init(&m->klink);
  m->discard = 0;
  rlx__list_init(&m->link);
  return m;
}

int rlx__same_key(const struct rlx__frame_hdr *a, const struct rlx__frame_hdr *b) {
  return a->comm_id == b->comm_id && a->seq == b->seq && a->segment == b->segment;
}

int rlx__frame_matches(const struct rlx__xfer *x, const struct rlx__frame_hdr *h) {
  return h->type == RLX__FT_DATA && memcmp(h->sig, x->hdr.sig, RLX__SIG_SIZE) == 0 &&
         h->payload_len == x->len;
}

struct rlx__xfer *rlx__find_posted(struct rlx__p2p_peer *pe, const struct rlx__frame_hdr *h) {
  for (struct rlx__list *l = pe->posted.next; l != &pe->posted; l = l->next) {
    struct rlx__xfer *x = rlx__container_of(l, struct rlx__xfer, link);
    if (rlx__same_key(&x->hdr, h))
      return x;
  }
  return NULL;
}

int rlx__umsg_deliver(struct rlx__umsg *m, struct rlx__xfer *x) {
  if (!rlx__frame_matches(x, &m->hdr)) {
    x->got = m->hdr;
    return RLX_ERR_MISMATCH;
  }
  if (!m->crc_ok)
    return RLX_ERR_CORRUPT;
  if (x->len)
    rlx__copy(x->buf, m->data, x->len);
  return RLX_OK;
}

/* ---- either kind of frame with a payload: a collective's DATA (its
 * receive by key, exact length) or a MSG (msg.c: by source and tag, at
 * most the receive's length) */

struct rlx__xfer *rlx__match_posted(struct rlx__p2p_conn *c, const struct rlx__frame_hdr *h) {
  if (h->type == RLX__FT_MSG)
    return rlx__msg_find_posted(c->p, c->peer, h);
  return rlx__find_posted(&c->p->peers[c->peer], h);
}

int rlx__match_fits(const struct rlx__xfer *x, const struct rlx__frame_hdr *h) {
  return h->type == RLX__FT_MSG ? h->payload_len <= x->len : rlx__frame_matches(x, h);
}

int rlx__match_refusal(const struct rlx__frame_hdr *h) {
  return h->type == RLX__FT_MSG ? RLX_ERR_TRUNCATE : RLX_ERR_MISMATCH;
}

void rlx__match_take(struct rlx__p2p *p, struct rlx__xfer *x, const struct rlx__frame_hdr *h) {
  if (h->type == RLX__FT_MSG)
    rlx__msg_unpost(p, x);
  else
    rlx__list_remove(&x->link);
}

void rlx__match_keep(struct rlx__p2p_conn *c, struct rlx__umsg *m) {
  if (m->hdr.type == RLX__FT_MSG)
    rlx__msg_arrived(c->p, m);
  else
    keep_early(c->p, c->peer, m);
}

void rlx__match_arrived(struct rlx__p2p_conn *c, struct rlx__umsg *m) {
  struct rlx__p2p_peer *pe = &c->p->peers[c->peer];
  if (m->discard) {
    rlx__umsg_put(c->p, m);
    return;
  }
  struct rlx__xfer *x = rlx__find_posted(pe, &m->hdr);
  if (x == NULL) {
    keep_early(c->p, c->peer, m);
    if (m->hdr.type == RLX__FT_DATA && c->p->on_early != NULL)
      c->p->on_early(c->p->abort_ctx, c->peer, &m->hdr);
    return;
  }
  rlx__list_remove(&x->link);
  int st = rlx__umsg_deliver(m, x);
  rlx__umsg_put(c->p, m);
  rlx__xfer_finish(x, st);
}

struct rlx__umsg *rlx__match_take_early(struct rlx__p2p_peer *pe, const struct rlx__xfer *x) {
  for (struct rlx__list *l = pe->unexpected.next; l != &pe->unexpected; l = l->next) {
    struct rlx__umsg *m = rlx__container_of(l, struct rlx__umsg, link);
    if (rlx__same_key(&m->hdr, &x->hdr)) {
      rlx__list_remove(&m->link);
      rlx__list_remove(&m->klink);
      return m;
    }
  }
  return NULL;
}

int rlx__p2p_early_mismatch(struct rlx__p2p *p, uint32_t comm_id, uint64_t seq,
                            const uint8_t sig[RLX__SIG_SIZE], struct rlx__frame_hdr *h) {
  if (p->early_by_call != NULL) {
    struct rlx__list *b = early_bucket(p, comm_id, seq);
    for (struct rlx__list *l = b->next; l != b; l = l->next) {
      const struct rlx__umsg *m = rlx__container_of(l, struct rlx__umsg, klink);
      if (m->hdr.type == RLX__FT_DATA && m->hdr.comm_id == comm_id && m->hdr.seq == seq &&
          memcmp(m->hdr.sig, sig, RLX__SIG_SIZE) != 0) {
        *h = m->hdr;
        return m->from;
      }
    }
    return -1;
  }
  for (int i = 0; i < p->size; i++) {
    struct rlx__list *u = &p->peers[i].unexpected;
    for (struct rlx__list *l = u->next; l != NULL && l != u; l = l->next) {
      const struct rlx__umsg *m = rlx__container_of(l, struct rlx__umsg, link);
      if (m->hdr.type == RLX__FT_DATA && m->hdr.comm_id == comm_id && m->hdr.seq == seq &&
          memcmp(m->hdr.sig, sig, RLX__SIG_SIZE) != 0) {
        *h = m->hdr;
        return i;
      }
    }
  }
  return -1;
}
