/* lib/engine, above base only. The progress engine: one libuv loop per process, run by a progress thread
 * when nobody waits, and by the waiting caller itself while it waits, so a
 * small collective pays no thread hand-off (rlxcoll(7), RLX_SPIN_US and
 * RLX_PROGRESS_BIND, say how long it spins and where the thread runs). */
#ifndef RLX_ENGINE_H
#define RLX_ENGINE_H

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <uv.h>
#include "engine/loop_lock.h"

struct rlx__engine {
  uv_loop_t loop;
  struct rlx__loop_lock loop_lk; /* whoever holds it may run the loop */
  pthread_mutex_t wait_mtx;
  pthread_cond_t wait_cv;   /* completions, for callers not driving */
  pthread_t thread;
  int thread_started;
  cpu_set_t cpus; /* where the progress thread runs (rlx__engine_place) */
  int placed;
  /* The progress thread has cores beside the rank's (rlx__tune_waiting):
   * while operations are in flight and no caller drives, it polls like a
   * waiting caller for the spin budget instead of sleeping until the next
   * doorbell, so a nonblocking call moves while the caller computes. */
  atomic_int beside;
  atomic_int wanted;   /* threads blocked in rlx__engine_lock while beside: a
                        * polling progress thread lets them in before it turns
                        * again (a mutex taken back at once would starve them) */
  uv_async_t wake;
  atomic_int drivers; /* callers inside rlx__engine_wait */
  /* The progress thread naps while callers drive (they run the loop),
   * 5 ms at most. Until wake_until (rlx__now_ns; 0: never) the last
   * caller to leave wakes it (a growing job's members while their joiners
   * connect: grow.c), so that a connection or handshake that comes while
   * the caller computes is served at once rather than after the nap
   * (under nap_mtx). Not always: the wake-up, and the thread taking the
   * loop that the next call must take back, doubled a 2-rank 8-byte
   * allreduce over TCP on 2 cores (8.6 -> 19 us), where the progress
   * thread shares the rank's core. A time, not a flag: an admission the
   * program never ends (it stops calling rlx_comm_grow) stops costing
   * its calls that once the time has passed. */
  pthread_mutex_t nap_mtx;
  pthread_cond_t nap_cv;
  atomic_int napping;
  _Atomic uint64_t wake_until;
  atomic_uint nap_wakes; /* such wake-ups so far */
  atomic_int waiters; /* callers sleeping on wait_cv */
  atomic_uint wakes;  /* wait_cv's broadcasts so far (under wait_mtx) */
  atomic_uint overslept; /* sleeps on wait_cv that ran out nap_ns */
  atomic_int stop;
  atomic_int progress_holds; /* the progress thread holds loop_lk (briefly), or
                              * is about to */
  /* (atomic: retuned by the caller's thread when the job grows, read by
   * the progress thread too; plain reads are relaxed enough and cost a mov) */
  _Atomic uint64_t spin_ns; /* how long a waiter polls before it blocks */
  uint64_t nap_ns;    /* the longest a waiter sleeps while another drives (1 ms) */
  atomic_int yield;   /* ranks outnumber cores: yield between polls */
  /* Work outside libuv (shared-memory rings), under the loop lock: poll
   * moves what it can and says how much; sleep(ctx, 1) before the loop
   * blocks returns 1 when there is work already (do not block), sleep(ctx,
   * 0) after it. NULL: none. */
  size_t (*poll)(void *ctx);
  int (*sleep)(void *ctx, int sleeping);
  int (*in_flight)(void); /* operations started and not over? NULL: none kept */
  void *ctx;
  /* A waiting caller runs libuv every this many turns (1: every turn);
   * more while all the work is outside it (set by whoever sets poll). */
  atomic_uint uv_every;
};

int rlx__engine_init(struct rlx__engine *e, uint64_t spin_ns, int yield);
int rlx__engine_start(struct rlx__engine *e); /* start the progress thread */
/* Run the progress thread on cpus from now on (once it is started; a
 * later start takes them too). 0, or -errno. */
int rlx__engine_place(struct rlx__engine *e, const cpu_set_t *cpus);
void rlx__engine_stop(struct rlx__engine *e); /* join it; the loop stays */
void rlx__engine_close(struct rlx__engine *e);
/* One turn of the loop and the work outside libuv, without waiting;
 * under the loop lock. Returns what the outside work moved. */
size_t rlx__engine_turn(struct rlx__engine *e);
void rlx__engine_lock(struct rlx__engine *e);
void rlx__engine_unlock(struct rlx__engine *e);
/* The lock if it is free now (1), else 0: for looks that may be put off
 * (the progress thread, preempted while it holds the lock on an
 * oversubscribed host, can keep it a millisecond). */
int rlx__engine_trylock(struct rlx__engine *e);
/* Wait, driving the loop, until *done is set or the deadline (rlx__now_ns,
 * 0 = none) passes. *progress is a counter the operation bumps on each
 * step: while it moves, the spin budget starts over. Returns 0 when done,
 * -1 on the deadline, -2 when rlx_set_interrupt's function asked to stop.
 * Called without the loop lock. */
int rlx__engine_wait(struct rlx__engine *e, const atomic_int *done, const atomic_uint *progress,
                     uint64_t deadline);
/* rlx_set_interrupt's function: 1 when the program asks a waiting call
 * to give up (checked at most every 10 ms: INTERRUPT_EVERY_NS), else 0.
 * *last: the caller's time of its last check; now: the caller's clock
 * (no clock read of its own on a waiting loop's every turn). */
int rlx__interrupted(uint64_t *last, uint64_t now);
#define RLX__INTERRUPT_EVERY_NS (10ull * 1000 * 1000)
/* Work was posted to the loop (a dial) by a thread that does not run it:
 * the progress thread, asleep in poll() until an event of the handles it
 * knew, runs it now (libuv registers the new one only when it runs). */
void rlx__engine_kick(struct rlx__engine *e);
/* An operation completed (called under the loop lock). */
void rlx__engine_notify(struct rlx__engine *e);

#endif
