/* Starting a rank on another host through RLX_RSH (default ssh). */
#ifndef RLXRUN_REMOTE_H
#define RLXRUN_REMOTE_H

/* argv: the words of rsh, the host, and one shell command that changes to
 * cwd (if it exists there), reads RLX_JOB_KEY from standard input, and
 * execs the program with the VAR=VALUE pairs in kv (NULL-terminated).
 * Everything is malloc'd; free with remote_argv_free. NULL on no memory. */
char **remote_argv(const char *rsh, const char *host, const char *cwd, char *const *kv,
                   char *const *prog);
void remote_argv_free(char **argv);

#endif
