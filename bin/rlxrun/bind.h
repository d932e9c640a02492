/* Binding ranks to cores or NUMA nodes with hwloc (--bind-to). */
#ifndef RLXRUN_BIND_H
#define RLXRUN_BIND_H

#include <stddef.h>

/* BIND_AWAY: joiners (rlxrun --join, by default) on the cores of this
 * host the job's own ranks do not take (binder_set_taken), all of them
 * at once: the kernel places each joiner among them. */
enum bind_to { BIND_DEFAULT = -1, BIND_NONE = 0, BIND_CORE, BIND_NUMA, BIND_AWAY };

struct binder;
/* Load the topology and decide: BIND_DEFAULT is core while nranks fit the
 * cores, none when they do not. NULL with a message on stderr on failure. */
struct binder *binder_open(int how, int nranks);
/* Bind the calling thread as rank r should be (children inherit it);
 * report prints Open MPI style "rank r bound to core 3: [../../BB/..]". */
int binder_apply(struct binder *b, int r, int report);
/* The cpus binder_apply gives ranks 0..n-1 of this host, as a list
 * ("0-3"; "" when it binds none): what a job that may grow tells joiners. */
void binder_cpus(struct binder *b, int n, char *list, size_t len);
/* BIND_AWAY: the cpus the job's ranks take (a list binder_cpus wrote). */
void binder_set_taken(struct binder *b, const char *list);
/* Give the calling thread its first binding back. */
void binder_restore(struct binder *b);
void binder_close(struct binder *b);

#endif
