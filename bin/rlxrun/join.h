/* Where a job that may grow is, for rlxrun --join (join.c). */
#ifndef RLXRUN_JOIN_H
#define RLXRUN_JOIN_H

#include <stddef.h>

/* Write dir/join (0600): the rendezvous address, the job key and the
 * cpus its ranks on this host are bound to (a list; "" none); its path
 * into path. 0 or a negative errno. */
int join_file_write(const char *dir, const char *rdv, const char *key, const char *cpus,
                    char *path, size_t len);
/* --join spec: a file join_file_write wrote (cpus: its list, "" in a file
 * without one), or HOST:PORT with the key in RLX_JOB_KEY (cpus ""). 0, or
 * -1 with a message printed. */
int join_target(const char *spec, char *rdv, size_t rlen, char *key, size_t klen, char *cpus,
                size_t clen);

#endif
