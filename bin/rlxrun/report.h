/* What ranks report to rlxrun on their standard error, in lines that start
 * "rlxcoll[R] " followed by a word and tab-separated fields (lib/observe.h
 * writes them): their pid, flight-recorder dumps and statistics. rlxrun
 * keeps these lines out of the job's output and prints tables instead. */
#ifndef RLXRUN_REPORT_H
#define RLXRUN_REPORT_H

#include <stddef.h>
#include <stdio.h>

void report_init(int nranks);
/* Take a line if it is a report; returns 1 when it was (and is consumed). */
int report_take(const char *line, size_t len);
/* The pid a rank announced (0 if none). */
int report_pid(int rank);
/* Forget which ranks finished a dump, before asking for new ones. */
void report_flight_expect(void);
/* Has rank written a whole dump since report_flight_expect? */
int report_flight_done(int rank);
/* Print the flight-recorder table, if any rank wrote one since the last
 * print: for each rank the last call it entered and the last it completed,
 * and who is behind. Returns the number of ranks in it. */
int report_print_flight(FILE *f, const char *why);
/* Print the --stats table. */
void report_print_stats(FILE *f);
/* Ask a running rlxrun (pid, or the only one of ours when 0) to collect
 * its ranks' flight recorders: rlxrun --dump. Returns the exit code. */
int report_request_dump(int pid);

/* trace_merge.c: join the ranks' RLX_TRACE files (prefix.R) into one
 * Chrome trace file at prefix, removing the parts; says what it did. */
int trace_merge(const char *prefix, int nranks);

#endif
