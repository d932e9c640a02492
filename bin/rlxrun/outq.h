/* rlxrun's standard output and error through queues that a thread each
 * writes out, so that the control loop (timeouts, signals, ranks that
 * end) never blocks on a slow reader. */
#ifndef RLXRUN_OUTQ_H
#define RLXRUN_OUTQ_H

#include <uv.h>

/* Past this many bytes queued, stop reading the ranks' pipes (they then
 * wait on their own writes, as on a slow terminal); read again below the
 * low mark, when on_room is called on the loop. */
#define OUTQ_HIGH (16u << 20)
#define OUTQ_LOW (4u << 20)

/* From here on, stdout and stderr are streams into the queues (everything
 * rlxrun prints keeps its order). Returns 0, or -1 (then they stay the
 * process's own, written directly). */
int outq_start(uv_loop_t *loop, void (*on_room)(void));
/* More queued than OUTQ_HIGH. */
int outq_full(void);
/* The loop stopped reading because of it: call on_room once below OUTQ_LOW. */
void outq_paused(void);
/* Write out everything queued (as long as the readers take it) and stop
 * the writers. */
void outq_finish(void);

#endif
