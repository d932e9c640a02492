/* Transport by reach, in one place: the table of transports in order of
 * preference, and the choice for each peer (the first that reaches it,
 * unless RLX_TRANSPORT forces one). A new transport is one file and one
 * line here. */
#include <string.h>
#include "transport.h"

const struct rlx__transport_ops *const rlx__transports[] = {
    &rlx__shm_transport,  /* same host: rings in shared memory, no syscall */
    &rlx__unix_transport, /* same host: no network stack */
    &rlx__tcp_transport,  /* reaches everyone */
    NULL,
};

const struct rlx__transport_ops *rlx__transport_find(const char *name) {
  for (int i = 0; name != NULL && rlx__transports[i] != NULL; i++)
    if (strcmp(rlx__transports[i]->name, name) == 0)
      return rlx__transports[i];
  return NULL;
}

const struct rlx__transport_ops *rlx__transport_choose(const struct rlx__transport_ops *forced,
                                                       const struct rlx__card *me,
                                                       const struct rlx__card *them) {
  if (forced != NULL)
    return forced;
  for (int i = 0; rlx__transports[i] != NULL; i++)
    if (rlx__transport_control(rlx__transports[i])->reaches(me, them))
      return rlx__transports[i];
  return &rlx__tcp_transport; /* every card has a TCP address */
}

const struct rlx__transport_ops *rlx__transport_control(const struct rlx__transport_ops *tr) {
  return tr->control != NULL ? tr->control : tr;
}
