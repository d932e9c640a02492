/* The progress engine's waiting caller: one that finds the loop held by
 * someone who does not drive it (the progress thread between two polls,
 * or another thread posting work) sleeps only until that holder lets
 * go, never its whole timeout; and a holder that lets go just before the
 * caller counts itself in loses no wake-up. A caller leaving wakes the
 * progress thread from its nap only while asked to (a wake-up after
 * every call doubled small allreduces over TCP). */
#include <check.h>
#include "suite.h"
#include <pthread.h>
#include <stdatomic.h>
#include <time.h>
#include "engine/engine.h"
#include "base/internal.h"

struct holder {
  struct rlx__engine *e;
  atomic_int done;
  atomic_uint progress;
  atomic_int held, go, rounds;
  long hold_us; /* how long it keeps the loop once the caller waits */
};

static void nap_us(long us) {
  struct timespec ts = {0, us * 1000};
  nanosleep(&ts, NULL);
}

/* Takes the loop, lets the caller find it taken, then marks the caller's
 * operation done without any completion signal and lets go, as a thread
 * posting work or the progress thread clearing its sleep does. */
static void *hold_loop(void *arg) {
  struct holder *h = arg;
  for (int r = 0; r < atomic_load(&h->rounds); r++) {
    while (atomic_load(&h->go) <= r)
      sched_yield();
    rlx__engine_lock(h->e);
    atomic_store(&h->held, r + 1);
    nap_us(h->hold_us);
    atomic_store(&h->done, 1);
    rlx__engine_unlock(h->e);
  }
  return NULL;
}

static void run_rounds(long hold_us, int rounds) {
  struct rlx__engine e;
  ck_assert_int_eq(rlx__engine_init(&e, 0, 0), RLX_OK); /* no spin: sleeps at once */
  /* A wake-up lost shows as a sleep of its whole length: 2 s, not the
   * library's 1 ms, so that a holder merely slow to let go on a busy
   * machine is never taken for one. */
  e.nap_ns = 2000000000ull;
  struct holder h = {.e = &e, .hold_us = hold_us};
  atomic_store(&h.rounds, rounds);
  pthread_t t;
  ck_assert_int_eq(pthread_create(&t, NULL, hold_loop, &h), 0);
  for (int r = 0; r < rounds; r++) {
    atomic_store(&h.done, 0);
    atomic_store(&h.go, r + 1);
    while (atomic_load(&h.held) <= r)
      sched_yield();
    ck_assert_int_eq(rlx__engine_wait(&e, &h.done, &h.progress, 0), 0);
    ck_assert_uint_eq(atomic_load(&e.overslept), 0); /* (fails at once, not after every round) */
  }
  pthread_join(t, NULL);
  /* every round ended by the holder letting go, none by the nap's end */
  ck_assert_uint_eq(atomic_load(&e.overslept), 0);
  rlx__engine_close(&e);
}

START_TEST(woken_when_the_holder_lets_go) { run_rounds(300, 50); }
END_TEST

/* Holds shorter than the caller's way to its sleep: the holder often lets
 * go before the caller counted itself in. */
START_TEST(no_wake_up_lost_in_a_short_hold) { run_rounds(0, 2000); }
END_TEST

/* Rounds of one call each that ends while the progress thread naps (it
 * naps while a caller drives): how many times a leaving caller woke it. */
struct napper {
  struct rlx__engine *e;
  atomic_int *done;
  int saw; /* the progress thread napping when the call was made done */
};

static void *done_once_napping(void *arg) {
  struct napper *n = arg;
  for (int i = 0; i < 10000 && !atomic_load(&n->e->napping); i++) /* (10 s at most) */
    nap_us(1000);
  n->saw = atomic_load(&n->e->napping);
  atomic_store(n->done, 1);
  return NULL;
}

/* until: as engine.h's wake_until, from now (0: never; < 0: passed) */
static unsigned leave_while_napping(int64_t until, int rounds) {
  struct rlx__engine e;
  ck_assert_int_eq(rlx__engine_init(&e, 60ull * 1000000000ull, 0), RLX_OK); /* (spins) */
  atomic_store(&e.wake_until, until == 0 ? 0 : (uint64_t)((int64_t)rlx__now_ns() + until));
  ck_assert_int_eq(rlx__engine_start(&e), RLX_OK);
  atomic_int done;
  atomic_uint progress = 0;
  unsigned napped = 0;
  for (int r = 0; r < rounds; r++) {
    atomic_store(&done, 0);
    struct napper n = {.e = &e, .done = &done};
    pthread_t t;
    ck_assert_int_eq(pthread_create(&t, NULL, done_once_napping, &n), 0);
    ck_assert_int_eq(rlx__engine_wait(&e, &done, &progress, 0), 0);
    pthread_join(t, NULL);
    napped += n.saw != 0;
  }
  rlx__engine_stop(&e);
  rlx__engine_close(&e);
  ck_assert_uint_gt(napped, 0); /* (else the test saw nothing) */
  return atomic_load(&e.nap_wakes);
}

START_TEST(a_caller_leaving_wakes_the_progress_thread_only_when_asked) {
  ck_assert_uint_eq(leave_while_napping(0, 20), 0);
  /* (a round can miss: a caller held up past the 5 ms nap) */
  ck_assert_uint_gt(leave_while_napping(60ll * 1000000000ll, 20), 0);
  /* asked until a time now past: an admission the program never ended */
  ck_assert_uint_eq(leave_while_napping(-1000000, 20), 0);
}
END_TEST

/* The loop lock (loop_lock.h) excludes: threads that spin for it and
 * threads that yield and sleep on it add to a plain counter under it, and
 * none of their additions is lost; a sleeper the release missed would
 * hang the test (the case's timeout). */
struct lock_run {
  struct rlx__loop_lock *l;
  long *count;
  int yield;
  int times;
};

static void *add_under_lock(void *arg) {
  struct lock_run *r = arg;
  for (int i = 0; i < r->times; i++) {
    rlx__loop_lock(r->l, r->yield);
    long v = *r->count;
    if (i % 64 == 0)
      sched_yield(); /* (held across a yield now and then: the others must wait, some asleep) */
    *r->count = v + 1;
    rlx__loop_unlock(r->l);
  }
  return NULL;
}

START_TEST(the_loop_lock_excludes) {
  struct rlx__loop_lock l;
  rlx__loop_lock_init(&l);
  long count = 0;
  enum { THREADS = 4, TIMES = 20000 };
  pthread_t t[THREADS];
  struct lock_run r[THREADS];
  for (int i = 0; i < THREADS; i++) {
    r[i] = (struct lock_run){&l, &count, i % 2, TIMES};
    ck_assert_int_eq(pthread_create(&t[i], NULL, add_under_lock, &r[i]), 0);
  }
  for (int i = 0; i < THREADS; i++)
    pthread_join(t[i], NULL);
  ck_assert_int_eq(count, (long)THREADS * TIMES);
  ck_assert_int_eq(atomic_load(&l.held), 0);
  ck_assert_int_eq(atomic_load(&l.sleepers), 0);
}
END_TEST

int main(void) {
  Suite *s = suite_create("engine");
  TCase *tc = tcase_create("wait");
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, woken_when_the_holder_lets_go);
  tcase_add_test(tc, no_wake_up_lost_in_a_short_hold);
  tcase_add_test(tc, a_caller_leaving_wakes_the_progress_thread_only_when_asked);
  tcase_add_test(tc, the_loop_lock_excludes);
  suite_add_tcase(s, tc);
  return rlx_run_suite(s);
}
