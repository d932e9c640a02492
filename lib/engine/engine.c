/* Progress engine. The waiting caller drives the loop: it polls with
 * uv_run(NOWAIT) for a bounded spin budget (yielding the CPU between polls
 * when ranks outnumber cores), then blocks in poll() on libuv's backend fd,
 * still on its own thread. The progress thread only runs the loop while no
 * caller waits, for work nobody waits on (accepts, handshakes). */
#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <sched.h>
#include <string.h>
#include <time.h>
#include "engine/engine.h"
#include "base/internal.h"

static void on_wake(uv_async_t *a) { (void)a; }

int rlx__engine_init(struct rlx__engine *e, uint64_t spin_ns, int yield) {
  int rc;
  memset(e, 0, sizeof(*e));
  if ((rc = uv_loop_init(&e->loop)) != 0)
    return rlx__err(RLX_ERR_SYS, "uv_loop_init: %s", uv_strerror(rc));
  rlx__loop_lock_init(&e->loop_lk);
  pthread_mutex_init(&e->wait_mtx, NULL);
  pthread_cond_init(&e->wait_cv, NULL);
  pthread_mutex_init(&e->nap_mtx, NULL);
  pthread_cond_init(&e->nap_cv, NULL);
  uv_async_init(&e->loop, &e->wake, on_wake);
  uv_unref((uv_handle_t *)&e->wake);
  e->spin_ns = spin_ns;
  e->nap_ns = 1000 * 1000;
  e->yield = yield;
  return RLX_OK;
}

static int backend_poll(struct rlx__engine *e, int timeout_ms) {
  struct pollfd pfd = {uv_backend_fd(&e->loop), POLLIN, 0};
  return poll(&pfd, 1, timeout_ms);
}

/* Under the loop lock: block until the loop has work or timeout_ms pass,
 * unless the work outside libuv has some already. */
static void sleep_locked(struct rlx__engine *e, int timeout_ms) {
  if (e->sleep && e->sleep(e->ctx, 1))
    return;
  backend_poll(e, timeout_ms);
  if (e->sleep)
    e->sleep(e->ctx, 0);
}

/* A holder of the loop that does not drive it let go: callers asleep in
 * rlx__engine_wait because it held the loop look again now, not at
 * their timeout. A Dekker pair on the loop lock's terms (loop_lock.h): a
 * waiter counts itself in, fences heavily and tries the lock once more;
 * the release's store, then this load, ordered by the release's light
 * side. Either this look sees the waiter, or its try sees the lock free. */
static void broadcast(struct rlx__engine *e);
static void wake_waiters(struct rlx__engine *e) {
  if (atomic_load_explicit(&e->waiters, memory_order_relaxed) > 0)
    broadcast(e);
}

/* One turn of everything: libuv's handles and the work outside it. */
static size_t run_once(struct rlx__engine *e) {
  uv_run(&e->loop, UV_RUN_NOWAIT);
  return e->poll ? e->poll(e->ctx) : 0;
}

size_t rlx__engine_turn(struct rlx__engine *e) { return run_once(e); }

/* How a thread that finds the loop lock taken waits for it: spinning
 * only where the progress thread has a core of its own (its rank's
 * thread and it run apart); else the holder may be waiting for this very
 * core, so the waiter yields it, then sleeps. */
static int lock_yields(const struct rlx__engine *e) {
  return e->yield || !atomic_load_explicit(&e->beside, memory_order_relaxed);
}

/* The progress thread takes the loop for a turn. A caller that finds the
 * loop taken tells the progress thread's short holds (it polls again at
 * once) from another caller driving (it sleeps until woken) by the flag,
 * so the flag covers every hold, from before the lock is taken: a caller
 * that took it for another's once slept its full millisecond while the
 * progress thread, woken by a doorbell, only cleared its sleep (1-2 such
 * sleeps in every joiner's admission on 16 cores). */
static void hold(struct rlx__engine *e) {
  atomic_store(&e->progress_holds, 1);
  rlx__loop_lock(&e->loop_lk, lock_yields(e));
}

static void let_go(struct rlx__engine *e) {
  rlx__loop_unlock(&e->loop_lk);
  atomic_store(&e->progress_holds, 0);
  wake_waiters(e);
}

static void *progress_main(void *arg) {
  struct rlx__engine *e = arg;
  pthread_setname_np(pthread_self(), "rlx-progress"); /* (for top -H, perf, /proc) */
  uint64_t last_moved = rlx__now_ns();
  int spinning = 0;
  while (!atomic_load(&e->stop)) {
    if (atomic_load(&e->drivers) > 0) {
      /* A caller drives the loop: nap until the last one leaves (it
       * wakes us: napping is set before drivers is looked at again under
       * nap_mtx, which the leaver takes to signal), at most 5 ms. */
      struct timespec ts;
      clock_gettime(CLOCK_REALTIME, &ts);
      ts.tv_nsec += 5 * 1000 * 1000;
      if (ts.tv_nsec >= 1000000000) {
        ts.tv_sec++;
        ts.tv_nsec -= 1000000000;
      }
      pthread_mutex_lock(&e->nap_mtx);
      atomic_store(&e->napping, 1);
      while (atomic_load(&e->drivers) > 0 && !atomic_load(&e->stop) &&
             pthread_cond_timedwait(&e->nap_cv, &e->nap_mtx, &ts) == 0)
        ;
      atomic_store(&e->napping, 0);
      pthread_mutex_unlock(&e->nap_mtx);
      continue;
    }
    hold(e);
    /* Some moved: more may follow at once. On cores of its own with
     * operations in flight, look again for the spin budget. Else announce
     * the sleep (writers ring the socket then) unless work came meanwhile. */
    uint64_t now = rlx__now_ns();
    int busy = run_once(e) != 0;
    if (busy)
      last_moved = now;
    else if (atomic_load_explicit(&e->beside, memory_order_relaxed) && e->in_flight &&
             e->in_flight() && now - last_moved < e->spin_ns)
      busy = spinning = 1;
    else
      busy = e->sleep && e->sleep(e->ctx, 1);
    int t = uv_backend_timeout(&e->loop);
    let_go(e);
    if (busy && atomic_load_explicit(&e->beside, memory_order_relaxed)) {
      /* On a core of its own: a caller blocked on the lock (starting a
       * call, say) goes first. (Never where it shares the caller's core:
       * this would spin where the caller is to run.) */
      while (atomic_load(&e->wanted) > 0 && !atomic_load(&e->stop))
        rlx__cpu_relax();
      if (spinning)
        rlx__cpu_relax();
    }
    spinning = 0;
    if (busy)
      continue;
    /* The lock is free while we sleep, for callers that post work. */
    if (!atomic_load(&e->stop))
      backend_poll(e, (t < 0 || t > 100) ? 100 : t);
    last_moved = rlx__now_ns(); /* (a wake-up starts a new budget) */
    if (e->sleep) {
      hold(e);
      e->sleep(e->ctx, 0);
      let_go(e);
    }
  }
  return NULL;
}

int rlx__engine_start(struct rlx__engine *e) {
  int rc = pthread_create(&e->thread, NULL, progress_main, e);
  if (rc != 0)
    return rlx__err(RLX_ERR_SYS, "cannot start the progress thread: %s", strerror(rc));
  e->thread_started = 1;
  if (e->placed)
    (void)rlx__engine_place(e, &e->cpus); /* (a refusal leaves it where it was) */
  return RLX_OK;
}

int rlx__engine_place(struct rlx__engine *e, const cpu_set_t *cpus) {
  if (cpus != &e->cpus)
    e->cpus = *cpus;
  e->placed = 1;
  if (!e->thread_started)
    return 0;
  return -pthread_setaffinity_np(e->thread, sizeof(*cpus), cpus);
}

void rlx__engine_stop(struct rlx__engine *e) {
  if (!e->thread_started)
    return;
  atomic_store(&e->stop, 1);
  uv_async_send(&e->wake);
  pthread_join(e->thread, NULL);
  e->thread_started = 0;
}

void rlx__engine_close(struct rlx__engine *e) {
  uv_close((uv_handle_t *)&e->wake, NULL);
  for (int i = 0; i < 1000 && uv_run(&e->loop, UV_RUN_NOWAIT) != 0; i++)
    ;
  uv_loop_close(&e->loop);
  pthread_mutex_destroy(&e->wait_mtx);
  pthread_cond_destroy(&e->wait_cv);
  pthread_mutex_destroy(&e->nap_mtx);
  pthread_cond_destroy(&e->nap_cv);
}

void rlx__engine_lock(struct rlx__engine *e) {
  /* (counted only where the progress thread polls: elsewhere nobody looks) */
  int count = atomic_load_explicit(&e->beside, memory_order_relaxed);
  if (count)
    atomic_fetch_add(&e->wanted, 1);
  rlx__loop_lock(&e->loop_lk, lock_yields(e));
  if (count)
    atomic_fetch_sub(&e->wanted, 1);
}
void rlx__engine_unlock(struct rlx__engine *e) {
  rlx__loop_unlock(&e->loop_lk);
  wake_waiters(e);
}
int rlx__engine_trylock(struct rlx__engine *e) { return rlx__loop_trylock(&e->loop_lk); }

void rlx__engine_kick(struct rlx__engine *e) { uv_async_send(&e->wake); }

/* Wake the callers asleep on wait_cv (a wake they have not slept for yet
 * shows in wakes). */
static void broadcast(struct rlx__engine *e) {
  pthread_mutex_lock(&e->wait_mtx);
  atomic_fetch_add(&e->wakes, 1);
  pthread_cond_broadcast(&e->wait_cv);
  pthread_mutex_unlock(&e->wait_mtx);
}

void rlx__engine_notify(struct rlx__engine *e) {
  if (atomic_load(&e->waiters) > 0)
    broadcast(e);
}

static _Atomic(rlx_interrupt_fn) interrupt_fn;
static _Atomic(void *) interrupt_arg;

int rlx_set_interrupt(rlx_interrupt_fn fn, void *arg) {
  atomic_store(&interrupt_arg, arg);
  atomic_store(&interrupt_fn, fn);
  return RLX_OK;
}

int rlx__interrupted(uint64_t *last, uint64_t now) {
  rlx_interrupt_fn fn = atomic_load_explicit(&interrupt_fn, memory_order_relaxed);
  if (fn == NULL || now - *last < RLX__INTERRUPT_EVERY_NS)
    return 0;
  *last = now;
  return fn(atomic_load(&interrupt_arg)) != 0;
}

/* A waiter between two looks: the core to the others when ranks outnumber
 * cores, else a spin hint. */
static void between_polls(const struct rlx__engine *e) {
  if (e->yield)
    sched_yield();
  else
    rlx__cpu_relax();
}

/* Turns of a spinning wait between two reads of the clock. */
#define CLOCK_EVERY 8

static int ms_until(uint64_t deadline, int cap) {
  if (deadline == 0)
    return cap;
  uint64_t now = rlx__now_ns();
  if (now >= deadline)
    return 0;
  uint64_t ms = (deadline - now + 999999) / 1000000;
  return ms > (uint64_t)cap ? cap : (int)ms;
}

int rlx__engine_wait(struct rlx__engine *e, const atomic_int *done, const atomic_uint *progress,
                     uint64_t deadline) {
  uint64_t now = rlx__now_ns(), spin_start = now, checked = now;
  unsigned seen = atomic_load(progress), uv_left = UINT_MAX;
  int rc = 0, cap_ms = atomic_load(&interrupt_fn) ? 10 : 50;
  atomic_fetch_add(&e->drivers, 1);
  /* The clock read every CLOCK_EVERY turns while spinning on a core of
   * our own (every turn when yielding: a turn may then be a time slice):
   * a read costs a spinning receiver about a tenth of a small message's
   * time, and the deadline, the spin budget and the interrupt check are
   * not that fine. The first turn's read is above. Counted down, not
   * by a remainder: a division every turn (20-90 cycles, base/fastdiv.h)
   * would delay a spinning receiver's look. */
  unsigned every_clock = e->yield ? 1 : CLOCK_EVERY, clock_left = every_clock;
  for (; !atomic_load_explicit(done, memory_order_acquire);
       now = --clock_left ? now : (clock_left = every_clock, rlx__now_ns())) {
    unsigned p = atomic_load(progress);
    if (p != seen) {
      seen = p;
      spin_start = now;
    }
    if (deadline != 0 && now >= deadline) {
      rc = -1;
      break;
    }
    if (rlx__interrupted(&checked, now)) {
      rc = -2;
      break;
    }
    if (rlx__loop_trylock(&e->loop_lk)) {
      /* Shared-memory rings first, without a syscall; libuv's sockets and
       * timers every turn when some peer is on a socket, else every
       * uv_every turns that brought nothing and every 256 that did. */
      size_t moved = e->poll ? e->poll(e->ctx) : 0;
      unsigned every = atomic_load_explicit(&e->uv_every, memory_order_relaxed);
      if (every > 1 && moved)
        every = 256;
      else if (every == 0)
        every = 1;
      if (uv_left > every) /* (every is 1 from a peer on a socket on) */
        uv_left = every;
      if (--uv_left == 0) {
        uv_left = every;
        uv_run(&e->loop, UV_RUN_NOWAIT); /* the rings were just polled */
      }
      int slept = 0;
      if (!atomic_load_explicit(done, memory_order_acquire) && now - spin_start >= e->spin_ns &&
          atomic_load(progress) == seen) {
        /* Spin budget spent: sleep in the kernel until the loop has work,
         * still on this thread, so the wake-up goes straight to us. */
        int t = uv_backend_timeout(&e->loop);
        int cap = ms_until(deadline, cap_ms);
        sleep_locked(e, (t < 0 || t > cap) ? cap : t);
        run_once(e);
        slept = 1;
      }
      rlx__loop_unlock(&e->loop_lk);
      /* A waiter past its spin budget holds the lock through its sleeps
       * and took it back a pause after each: a thread asleep on it
       * (rlx_comm_revoke, a call starting on another thread) never had
       * it (loop_lock.h). A spinning one holds it for a turn, and its
       * time slice ends: short waits, a small call's, stay as they were. */
      int handed = slept && rlx__loop_lock_hand_over(&e->loop_lk);
      if (!handed && !atomic_load_explicit(done, memory_order_acquire)) /* (no pause once done) */
        between_polls(e);
    } else if (atomic_load(&e->progress_holds)) {
      /* The progress thread has the loop for one turn; it steps aside at
       * its next, seeing a driver. Sleeping here instead would leave the
       * loop to nobody for the sleep's length: the progress thread, woken
       * by our peer's doorbell, does not run it while a caller drives. */
      between_polls(e);
    } else {
      /* Another caller drives the loop; completing an operation signals
       * (rlx__engine_notify), and so does a holder that does not drive
       * letting go (wake_waiters); the timeout covers the rest. */
      struct timespec ts;
      clock_gettime(CLOCK_REALTIME, &ts);
      ts.tv_sec += (time_t)(e->nap_ns / 1000000000);
      ts.tv_nsec += (long)(e->nap_ns % 1000000000);
      if (ts.tv_nsec >= 1000000000) {
        ts.tv_sec++;
        ts.tv_nsec -= 1000000000;
      }
      /* Counted in, then the lock tried once more: a holder that let go
       * before it saw us did not wake us. A wake between that try and the
       * sleep shows in wakes. */
      unsigned gen = atomic_load(&e->wakes);
      atomic_fetch_add(&e->waiters, 1);
      rlx__loop_lock_fence(&e->loop_lk); /* (the slow side of wake_waiters' pair) */
      if (rlx__loop_trylock(&e->loop_lk)) {
        rlx__loop_unlock(&e->loop_lk);
      } else {
        pthread_mutex_lock(&e->wait_mtx);
        if (!atomic_load(done) && atomic_load(&e->wakes) == gen &&
            pthread_cond_timedwait(&e->wait_cv, &e->wait_mtx, &ts) == ETIMEDOUT)
          atomic_fetch_add(&e->overslept, 1);
        pthread_mutex_unlock(&e->wait_mtx);
      }
      atomic_fetch_sub(&e->waiters, 1);
    }
  }
  /* the last driver out wakes a napping progress thread until the time it
   * was asked to (now: a recent turn's reading, stale by CLOCK_EVERY turns at most) */
  if (atomic_fetch_sub(&e->drivers, 1) == 1 && atomic_load(&e->wake_until) > now &&
      atomic_load(&e->napping)) {
    pthread_mutex_lock(&e->nap_mtx);
    pthread_cond_signal(&e->nap_cv);
    pthread_mutex_unlock(&e->nap_mtx);
    atomic_fetch_add(&e->nap_wakes, 1);
  }
  return rc;
}
