/* The process's one runtime (rlx__rt: its configuration, engine,
 * connections, communicators), and how its waiting is tuned by the ranks
 * sharing this host's cores: what init, the communicators, the
 * collectives, grow and shrink all read, defined below all of them. */
#include <sched.h>
#include "runtime/runtime.h"

struct rlx__runtime rlx__rt;

/* Spin while the ranks of this host fit its cores; past that, yield (and
 * the algorithms tune for it: the same on every rank of a host). Again
 * when the job grows. Returns the spin budget in us. */
long rlx__tune_waiting(struct rlx__runtime *rt) {
  int oversubscribed = rt->local_size > rt->ncores;
  long spin_us = rt->cfg.spin_us >= 0 ? rt->cfg.spin_us : (oversubscribed ? 1000 : 20000);
  rt->engine.spin_ns = (uint64_t)spin_us * 1000u;
  rt->engine.yield = oversubscribed;
  rt->p2p.oversubscribed = oversubscribed;
  /* RLX_PROGRESS_BIND=spare (not the default: README says why): the
   * progress thread (connections, handshakes, nonblocking calls'
   * transfers while the caller computes) on the cores no local rank
   * takes when there is one for each local rank's progress thread: its
   * work then does not stop the rank's own thread, and it polls while
   * operations are in flight (engine.h). Else with the rank: fewer cores
   * shared by all the host's progress threads made a nonblocking
   * allreduce on 15 ranks of 16 cores 1.5-2x slower (bench/overlap_bench). */
  cpu_set_t spare;
  int nspare = rt->cfg.progress_spare
                   ? rlx__cores_spare(&rt->cores, rt->local_rank, rt->local_size, &spare) : 0;
  /* (moved only when that changes: a growing job retunes at every
   * admission, and moving a thread costs a syscall and its caches) */
  int was = rt->engine.placed && atomic_load(&rt->engine.beside);
  int beside = nspare >= rt->local_size &&
               ((was && CPU_EQUAL(&rt->engine.cpus, &spare)) ||
                rlx__engine_place(&rt->engine, &spare) == 0);
  if (!beside && rt->engine.placed && !CPU_EQUAL(&rt->engine.cpus, &rt->own_cpus))
    (void)rlx__engine_place(&rt->engine, &rt->own_cpus);
  atomic_store(&rt->engine.beside, beside);
  return spin_us;
}
