/* A minimal intrusive doubly-linked list (libuv keeps its queue private). */
#ifndef RLX_LIST_H
#define RLX_LIST_H

#include <stddef.h>

struct rlx__list {
  struct rlx__list *prev, *next;
};

#define rlx__container_of(ptr, type, member) ((type *)((char *)(ptr)-offsetof(type, member)))

static inline void rlx__list_init(struct rlx__list *l) { l->prev = l->next = l; }
static inline int rlx__list_empty(const struct rlx__list *l) { return l->next == l; }
static inline void rlx__list_push(struct rlx__list *l, struct rlx__list *n) {
  n->prev = l->prev;
  n->next = l;
  l->prev->next = n;
  l->prev = n;
}
static inline void rlx__list_remove(struct rlx__list *n) {
  n->prev->next = n->next;
  n->next->prev = n->prev;
  n->prev = n->next = n;
}

/* The head of a list was copied from old (now stale) to l: make its
 * neighbours point at the copy. */
static inline void rlx__list_moved(struct rlx__list *l, const struct rlx__list *old) {
  if (l->next == old) {
    rlx__list_init(l);
    return;
  }
  l->next->prev = l;
  l->prev->next = l;
}

#endif
