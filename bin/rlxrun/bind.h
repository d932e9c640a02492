/* Binding ranks to cores or NUMA nodes with hwloc (--bind-to). */
#ifndef RLXRUN_BIND_H
#define RLXRUN_BIND_H

enum bind_to { BIND_DEFAULT = -1, BIND_NONE = 0, BIND_CORE, BIND_NUMA };

struct binder;
/* Load the topology and decide: BIND_DEFAULT is core while nranks fit the
 * cores, none when they do not. NULL with a message on stderr on failure. */
struct binder *binder_open(int how, int nranks);
/* Bind the calling thread as rank r should be (children inherit it);
 * report prints Open MPI style "rank r bound to core 3: [../../BB/..]". */
int binder_apply(struct binder *b, int r, int report);
/* Give the calling thread its first binding back. */
void binder_restore(struct binder *b);
void binder_close(struct binder *b);

#endif
