/* rlx_init and rlx_finalize: read the configuration, bootstrap (rendezvous
 * and card exchange, or a singleton), open the listeners, elect the leader,
 * start the progress engine; and tear all of it down again. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <sodium.h>
#include "observe/observe.h"
#include "coll/shm_group.h"
#include "runtime/runtime.h"

static pthread_mutex_t init_mtx = PTHREAD_MUTEX_INITIALIZER;

static void rdv_log(const char *msg) { rlx__warn("%s", msg); }

static uint64_t deadline_from_now(double seconds) {
  if (seconds <= 0)
    return 0;
  return rlx__now_ns() + (uint64_t)(seconds * 1e9);
}

static int make_world(struct rlx__runtime *rt) {
  struct rlx_comm *w = &rt->world;
  if (rt->joined) /* the grown communicator the job admitted us to (grow.c) */
    return RLX_OK;
  memset(w, 0, sizeof(*w));
  w->id = 0;
  w->rank = rt->cfg.rank;
  w->size = rt->cfg.size;
  w->world = malloc((size_t)w->size * sizeof(int));
  if (w->world == NULL)
    return rlx__err(RLX_ERR_NOMEM, "no memory for the world communicator");
  for (int i = 0; i < w->size; i++)
    w->world[i] = i;
  w->leader = rlx__elect(w->world, w->size);
  rlx__loop_lock_init(&w->mtx);
  return RLX_OK;
}

static void local_placement(struct rlx__runtime *rt) {
  int lr = 0, ls = 0;
  for (int r = 0; r < rt->cfg.size; r++) {
    if (strcmp(rt->cards[r].host, rt->cards[rt->cfg.rank].host) == 0) {
      if (r < rt->cfg.rank)
        lr++;
      ls++;
    }
  }
  rt->local_rank = rt->cfg.local_rank >= 0 ? rt->cfg.local_rank : lr;
  rt->local_size = rt->cfg.local_size > 0 ? rt->cfg.local_size : ls;
}

/* RLX_<COLL>_ALGO names an algorithm lib/coll has for that collective. */
static int check_algorithms(const struct rlx__config *cfg) {
  static const struct {
    const char *var;
    int kind;
    size_t off;
  } vars[] = {
      {"RLX_ALLREDUCE_ALGO", RLX__CK_ALLREDUCE, offsetof(struct rlx__config, allreduce_algo)},
      {"RLX_BCAST_ALGO", RLX__CK_BCAST, offsetof(struct rlx__config, bcast_algo)},
      {"RLX_ALLGATHER_ALGO", RLX__CK_ALLGATHER, offsetof(struct rlx__config, allgather_algo)},
  };
  for (size_t i = 0; i < sizeof(vars) / sizeof(vars[0]); i++) {
    const char *s = (const char *)cfg + vars[i].off;
    char names[160];
    if (s[0] != '\0' && !rlx__algo_known(vars[i].kind, s))
      return rlx__err(RLX_ERR_ARG, "%s=\"%s\" is not valid: one of %s", vars[i].var, s,
                      rlx__algo_names(vars[i].kind, names, sizeof(names)));
  }
  return RLX_OK;
}

/* RLX_IFACE's address into ip: an error when it names no interface. */
static int iface_ip(const struct rlx__runtime *rt, char *ip, size_t len) {
  if (rlx__iface_ip(rt->cfg.iface, ip, len) != 0)
    return rlx__err(RLX_ERR_ARG, "RLX_IFACE=\"%s\" matches no interface with an IPv4 address",
                    rt->cfg.iface);
  return RLX_OK;
}

static int pick_tcp_ip(struct rlx__runtime *rt, const char *rdv_ip, char *ip, size_t len) {
  if (rt->cfg.iface[0] != '\0')
    return iface_ip(rt, ip, len);
  /* The address this host used to reach the rendezvous is one the others
   * can reach too. Without a rendezvous (PMIx), loopback while the job is
   * on one host, else the first interface that is not lo, docker* or
   * virbr*. */
  if (rdv_ip[0] || rt->cfg.local_size <= 0 || rt->cfg.local_size >= rt->cfg.size) {
    snprintf(ip, len, "%s", rdv_ip[0] ? rdv_ip : "127.0.0.1");
    return RLX_OK;
  }
  if (rlx__iface_ip(RLX__IFACE_DEFAULT, ip, len) != 0)
    return rlx__err(RLX_ERR_BOOTSTRAP, "the job spans hosts but this one has no IPv4 interface "
                    "besides lo, docker* and virbr*; set RLX_IFACE");
  return RLX_OK;
}


/* A lost peer fails the shared segments of the communicators it is in. */
static void on_lost(void *ctx, int peer, const char *why) {
  (void)ctx;
  rlx__shmg_on_lost(peer, why);
}

/* The flight recorder's way of reading a call (lib/coll's). */
static void describe_call(char *buf, size_t len, const char *call, int kind, int dt, int op,
                          int root, unsigned long long count) {
  struct rlx__call c = {kind, dt, op, root, (size_t)count};
  rlx__call_describe(buf, len, call, &c);
}

static int bootstrap(struct rlx__runtime *rt) {
  struct rlx__config *cfg = &rt->cfg;
  uint64_t deadline = deadline_from_now(cfg->init_timeout_s);
  char why[512], rdv_ip[64] = "", tcp_ip[64], bound[128];
  struct rlx__card mine;
  int fd = -1, rc;

  /* Started by hand (no launcher): rank 0 hosts the rendezvous. */
  const char *launcher = getenv("RLX_LAUNCHER");
  if (rt->pmix)
    goto rendezvous_done;
  if (cfg->rank == 0 && !cfg->join && (launcher == NULL || *launcher == '\0')) {
    rc = rlx__rdv_server_start(cfg->rendezvous, cfg->job_key, cfg->size, cfg->max_np, rdv_log,
                               &rt->rdv, bound, sizeof(bound));
    if (rc != 0)
      return rlx__err(RLX_ERR_BOOTSTRAP, "rank 0 cannot host the rendezvous on %s: %s",
                      cfg->rendezvous, strerror(-rc));
  }
  rc = rlx__rdv_connect(cfg->rendezvous, cfg->job_key,
                        cfg->join ? RLX__RANK_JOIN : (uint32_t)cfg->rank, deadline, &fd, rdv_ip,
                        sizeof(rdv_ip), why, sizeof(why));
  if (rc != 0)
    return cfg->join ? rlx__err(rc == -EACCES ? RLX_ERR_AUTH : RLX_ERR_BOOTSTRAP,
                                "joining rank: %s", why)
                     : rlx__err(rc == -EACCES ? RLX_ERR_AUTH : RLX_ERR_BOOTSTRAP, "rank %d: %s",
                                cfg->rank, why);
rendezvous_done:
  if ((rc = pick_tcp_ip(rt, rdv_ip, tcp_ip, sizeof(tcp_ip))) != RLX_OK)
    goto fail;

  /* A private run directory for our Unix socket: in the job directory
   * rlxrun gives its local ranks (RLX_RUNDIR, removed when it exits, so a
   * rank killed with SIGKILL leaves nothing), else under TMPDIR or /tmp. */
  const char *tmp = getenv("RLX_RUNDIR");
  if (tmp == NULL || *tmp == '\0')
    tmp = getenv("TMPDIR");
  int e = rlx__rundir_make(rt->rundir, sizeof(rt->rundir),
                           tmp && *tmp && strlen(tmp) < 64 ? tmp : "/tmp", cfg->rank);
  if (e != 0) {
    rc = rlx__err(RLX_ERR_SYS, "cannot create a run directory %s: %s", rt->rundir, strerror(-e));
    rt->rundir[0] = '\0';
    goto fail;
  }
  snprintf(rt->unix_path, sizeof(rt->unix_path), "%s/s", rt->rundir);

  memset(&mine, 0, sizeof(mine));
  mine.rank = cfg->join ? RLX__RANK_JOIN : (uint32_t)cfg->rank;
  mine.size = (uint32_t)cfg->size;
  mine.election_id = randombytes_random();
  rlx__host_identity(mine.host, sizeof(mine.host));
  /* Where to listen; p2p_init writes the addresses to connect to. */
  snprintf(mine.tcp, sizeof(mine.tcp), "%s", tcp_ip);
  if (strlen(rt->unix_path) >= 108) { /* TMPDIR is capped above: never */
    rc = rlx__err(RLX_ERR_SYS, "socket path %s is too long", rt->unix_path);
    goto fail;
  }
  memcpy(mine.unix_path, rt->unix_path, strlen(rt->unix_path) + 1);
  rt->p2p_up = 1;
  if ((rc = rlx__p2p_init(&rt->p2p, &rt->engine.loop, cfg->rank, cfg->size, cfg->job_key,
                          cfg->transport[0] ? cfg->transport : NULL, rt->cfg.cma != 0,
                          &mine)) != RLX_OK)
    goto fail;

  rt->p2p.cma_hold_ms = (uint64_t)cfg->cma_hold_ms;
  rt->p2p.on_abort = rlx__exec_on_abort;
  rt->p2p.on_lost = on_lost;
  rt->p2p.on_early = rlx__exec_on_early;
  rt->p2p.abort_ctx = rt;
  rlx__info("listening on tcp %s and unix %s", mine.tcp, mine.unix_path);
  if (cfg->join) { /* wait until a member's rlx_comm_grow admits us */
    uint32_t index = 0;
    uint8_t *blk = NULL;
    size_t len = 0;
    rc = rlx__rdv_join(fd, &mine, deadline, &index, &blk, &len, why, sizeof(why));
    if (rc != 0) {
      fd = -1;
      rc = rlx__err(RLX_ERR_BOOTSTRAP, "joining rank: %s", why);
      goto fail;
    }
    rc = rlx__join_admitted(rt, index, blk, len, fd);
    fd = -1;
    free(blk);
    return rc;
  }
  if (rt->pmix) {
    if ((rc = rlx__pmix_exchange(&mine, rt->cards, cfg->size, cfg->init_timeout_s)) != RLX_OK)
      goto fail;
  } else {
    rc = rlx__rdv_exchange(fd, &mine, rt->cards, cfg->size, deadline,
                           cfg->trace[0] ? &rt->clock_offset_ns : NULL, cfg->max_np > 0, why,
                           sizeof(why));
    if (rc != 0) {
      fd = -1;
      rc = rlx__err(RLX_ERR_BOOTSTRAP, "rank %d: %s", cfg->rank, why);
      goto fail;
    }
    /* a job that may grow: stay connected to hear of joiners */
    if (cfg->max_np > 0 && rlx__rdv_member_start(&rt->member, fd) != 0) {
      close(fd);
      rlx__warn("cannot stay connected to the rendezvous: this rank cannot admit joiners");
    } else if (cfg->max_np > 0) {
      rt->member.fd = fd;
    }
    fd = -1;
  }
  rlx__p2p_start(&rt->p2p, rt->cards);
  return RLX_OK;
fail:
  if (fd >= 0)
    close(fd);
  return rc;
}

/* The engine's work outside libuv: the transports' (frames through shared
 * memory, sockets read directly). While every open connection is polled
 * so, a waiting caller looks at libuv's sockets only every 32 turns. */
static size_t p2p_poll(void *ctx) {
  struct rlx__p2p *p = ctx;
  int quiet = rlx__shm_quiet(p); /* (then every connection is polled: 32 below) */
  size_t moved = quiet ? 0 : rlx__p2p_progress(p);
  unsigned every = p->nready > 0 && p->nready == p->npolled ? 32
                   : p->nwatch > 0 && p->nwriting == 0 ? 16 /* sockets read directly */
                                                       : 1;
  if (atomic_load_explicit(&rlx__rt.engine.uv_every, memory_order_relaxed) != every)
    atomic_store_explicit(&rlx__rt.engine.uv_every, every, memory_order_relaxed);
  return moved;
}

static int p2p_sleep(void *ctx, int sleeping) { return rlx__p2p_prepare_sleep(ctx, sleeping); }

static void print_stats(struct rlx__runtime *rt) {
  int conns[RLX__TRANSPORTS_MAX] = {0}, ntr = 0;
  unsigned long retrans = 0, strangers = 0, corrupt = 0;
  while (rlx__transports[ntr] != NULL)
    ntr++;
  if (rt->p2p_up) {
    rlx__engine_lock(&rt->engine);
    for (int i = 0; i < ntr; i++)
      conns[i] = rlx__p2p_opened(&rt->p2p, rlx__transports[i]->name);
    retrans = rlx__p2p_retransmissions(&rt->p2p);
    strangers = rt->p2p.strangers;
    corrupt = rt->p2p.corrupt;
    rlx__engine_unlock(&rt->engine);
  }
  rlx__stats_print(rt->cfg.rank, conns, ntr, retrans, strangers, corrupt);
}

/* SIGUSR1 (rlxrun --dump, or kill -USR1): write the flight recorder. This
 * runs in the loop, under its lock, so unfinished calls can say whom they
 * wait on. */
static void on_usr1(uv_signal_t *h, int sig) {
  (void)h;
  (void)sig;
  rlx__flight_dump("SIGUSR1", rlx__exec_waiting_for);
}

static int usr1_ignored_by_us; /* teardown set SIGUSR1 to SIG_IGN */

/* Take SIGUSR1 unless the program has a use for it already. */
static void catch_usr1(struct rlx__runtime *rt) {
  struct sigaction sa;
  /* (ignored by our own last rlx_finalize: ours to take again) */
  if (sigaction(SIGUSR1, NULL, &sa) != 0 || (sa.sa_flags & SA_SIGINFO) ||
      !(sa.sa_handler == SIG_DFL || (sa.sa_handler == SIG_IGN && usr1_ignored_by_us)))
    return;
  if (uv_signal_init(&rt->engine.loop, &rt->usr1) != 0)
    return;
  if (uv_signal_start(&rt->usr1, on_usr1, SIGUSR1) != 0) {
    uv_close((uv_handle_t *)&rt->usr1, NULL);
    return;
  }
  /* Left referenced: a loop with nothing else active (a singleton) would
   * otherwise not poll at all, and never see the signal. */
  rt->usr1_on = 1;
  /* rlxrun reads this to send SIGUSR1 (--dump) to us, not to a wrapper,
   * and only when it is ours to take. */
  const char *launcher = getenv("RLX_LAUNCHER");
  if (launcher && strcmp(launcher, "rlxrun") == 0)
    fprintf(stderr, "rlxcoll[%d] pid\t%d\n", rt->cfg.rank, (int)getpid());
}

/* Before closing: let frames still queued go out, above all the ABORTs
 * of a call that just failed here (the program may finalize and exit at
 * once; a peer not yet connected to us would otherwise see only the
 * closed connection, "peer lost", instead of the cause). Bounded: a peer
 * that never takes them does not hold us. */
#define FLUSH_NS (1000ull * 1000ull * 1000ull)
static void flush_frames(struct rlx__runtime *rt) {
  uint64_t deadline = rlx__now_ns() + FLUSH_NS;
  for (;;) {
    rlx__engine_lock(&rt->engine);
    int left = rlx__p2p_unsent(&rt->p2p);
    if (left)
      rlx__engine_turn(&rt->engine);
    rlx__engine_unlock(&rt->engine);
    if (!left || rlx__now_ns() >= deadline)
      return;
    struct timespec ts = {0, 200 * 1000};
    nanosleep(&ts, NULL);
  }
}

static void teardown(struct rlx__runtime *rt) {
  if (rt->p2p_up)
    rlx__info("payloads copied by reference: %lu (by both sides: %lu), sent on the socket after "
              "a failed copy: %lu", rt->p2p.cma_copies, rt->p2p.cma_splits, rt->p2p.cma_fallbacks);
  if (RLX__STATS_ON() && rt->engine_up)
    print_stats(rt);
  atomic_store(&rlx__stats_on, 0);
  rlx__trace_close();
  if (rt->engine_up && rt->p2p_up)
    flush_frames(rt);
  if (rt->engine_up) {
    rlx__comm_shm_free(&rt->world); /* its lock goes with the engine */
    if (rt->last != NULL)
      rlx__comm_shm_free(rt->last);
    rlx__engine_stop(&rt->engine);
    rlx__engine_lock(&rt->engine);
    rlx__shmg_unmap_all(); /* communicators the program did not free */
    rlx__unwatch_launcher();
    if (rt->usr1_on) {
      /* rlxrun may still ask for a flight record (another rank failed
       * while this one finalized): that must not kill us now. libuv puts
       * the default action (terminate) back when its handle goes, so the
       * signal stays blocked on this thread until it is ignored (the
       * progress thread, the other one of ours, has been joined). */
      sigset_t usr1, old;
      sigemptyset(&usr1);
      sigaddset(&usr1, SIGUSR1);
      pthread_sigmask(SIG_BLOCK, &usr1, &old);
      uv_close((uv_handle_t *)&rt->usr1, NULL);
      signal(SIGUSR1, SIG_IGN);
      pthread_sigmask(SIG_SETMASK, &old, NULL);
      usr1_ignored_by_us = 1;
    }
    rt->usr1_on = 0;
    if (rt->p2p_up)
      rlx__p2p_close(&rt->p2p);
    rlx__engine_unlock(&rt->engine);
    rlx__engine_close(&rt->engine);
    if (rt->p2p_up || rt->p2p_alone)
      rlx__p2p_free(&rt->p2p);
  }
  rt->engine_up = rt->p2p_up = rt->p2p_alone = 0;
  if (rt->unix_path[0])
    unlink(rt->unix_path);
  if (rt->rundir[0])
    rmdir(rt->rundir);
  rt->unix_path[0] = rt->rundir[0] = '\0';
  rlx__grow_fini();
  rlx__rdv_member_close(&rt->member);
  rlx__rdv_server_stop(rt->rdv);
  rt->rdv = NULL;
  if (rt->last != NULL) {
    rlx__comm_release(rt->last);
    free(rt->last);
    rt->last = NULL;
  }
  if (rt->pmix)
    rlx__pmix_finalize();
  rt->pmix = 0;
  free(rt->cards);
  rt->cards = NULL;
  rlx__cores_free(&rt->cores);
  rlx__flight_fini();
  if (rt->world.world != NULL)
    rlx__comm_release(&rt->world);
  free(rt->reserve);
  rt->reserve = NULL;
}

/* A write to a peer that has died raises SIGPIPE, whose default action
 * kills the process: a lost peer must be an error (RLX_ERR_PEER_LOST), not
 * the end of the survivors. libuv writes with write(2), which has no
 * MSG_NOSIGNAL, so ignore SIGPIPE unless the program chose a handler. */
static void ignore_sigpipe(void) {
  struct sigaction sa;
  if (sigaction(SIGPIPE, NULL, &sa) == 0 && sa.sa_handler == SIG_DFL) {
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = SIG_IGN;
    sigaction(SIGPIPE, &sa, NULL);
  }
}

/* The flight recorder, RLX_TRACE and RLX_STATS. */
static int start_observing(struct rlx__runtime *rt, uint64_t t_init) {
  int rc;
  if ((rc = rlx__flight_init(rt->cfg.flight, rt->cfg.flight_dump, rt->cfg.rank,
                             describe_call)) != RLX_OK)
    return rc;
  if (rt->cfg.trace[0] &&
      (rc = rlx__trace_open(rt->cfg.trace, rt->cfg.rank, rt->cfg.size, rt->clock_offset_ns)) !=
          RLX_OK)
    return rc;
  if (rt->cfg.trace[0]) {
    rlx__trace_span(RLX__TRACK_CONNECT, "setup", "rlx_init", t_init, rlx__now_ns(), NULL);
    rlx__info("trace: clock offset from the rendezvous host %lld us",
              (long long)(rt->clock_offset_ns / 1000));
  }
  rlx__stats_reset();
  atomic_store(&rlx__stats_on, rt->cfg.stats);
  return RLX_OK;
}

static int init_locked(struct rlx__runtime *rt) {
  uint64_t t_init = rlx__now_ns();
  int rc;
  memset(rt, 0, sizeof(*rt));
  rt->member.fd = -1;
  pthread_mutex_init(&rt->member_mtx, NULL);
  ignore_sigpipe();
  if (sodium_init() < 0)
    return rlx__err(RLX_ERR_SYS, "libsodium failed to initialise");
  (void)rlx__crc32c(NULL, 0); /* choose the CRC implementation once */
  if ((rc = rlx__config_load(&rt->cfg)) != RLX_OK || (rc = check_algorithms(&rt->cfg)) != RLX_OK)
    return rc;
  rlx__log_level = rt->cfg.log_level;
  /* RLX_RANK (rlxrun, or by hand) wins; else a PMIx server may have
   * started us (srun --mpi=pmix, mpirun). */
  if (!rt->cfg.has_launch && rlx__pmix_present()) {
    rt->pmix = 1;
    if ((rc = rlx__pmix_init(&rt->cfg)) != RLX_OK) {
      rlx__pmix_finalize();
      rt->pmix = 0;
      return rc;
    }
  }
  rlx__log_rank = rt->cfg.rank;
  char binding[128];
  rt->ncores = rlx__host_cores(binding, sizeof binding, &rt->cores);
  if (sched_getaffinity(0, sizeof(rt->own_cpus), &rt->own_cpus) != 0)
    rt->cores.own = -1; /* (nowhere to go back to: it stays) */
  rt->cards = calloc((size_t)rt->cfg.size + 1, sizeof(*rt->cards)); /* (a joiner: 0) */
  rt->ncards = rt->cfg.size;
  if (rt->cards == NULL)
    return rlx__err(RLX_ERR_NOMEM, "no memory for %d cards", rt->cfg.size);

  if ((rc = rlx__engine_init(&rt->engine, 0, 0)) != RLX_OK)
    return rc;
  rt->engine_up = 1;
  if (rt->cfg.join || (rt->cfg.size == 1 && rt->cfg.max_np > 1))
    rlx__comm_make_reserve(rt); /* (before a joiner asks: nobody waits for it yet) */
  if (rt->cfg.size > 1 || rt->cfg.join || rt->cfg.max_np > 1) {
    if ((rc = bootstrap(rt)) != RLX_OK)
      goto fail;
  } else {
    /* A job of one opens no listener, but a bad value is refused all the
     * same: the program must not work as one rank and fail as two. */
    char ip[64];
    if (rt->cfg.iface[0] != '\0' && (rc = iface_ip(rt, ip, sizeof(ip))) != RLX_OK)
      goto fail;
    rlx__host_identity(rt->cards[0].host, sizeof(rt->cards[0].host));
    rt->cards[0].election_id = randombytes_random();
    if ((rc = rlx__p2p_init_alone(&rt->p2p)) != RLX_OK)
      goto fail;
    rt->p2p_alone = 1;
  }
  local_placement(rt);
  long spin_us = rlx__tune_waiting(rt);
  int oversubscribed = rt->engine.yield;
  /* By reference on every host, oversubscribed or not: on 2 cores
   * (bench/ab_allreduce.sh, RLX_CMA=on against off, 2026-11-30) it beat the socket at 256 KiB-
   * 4 MiB on 3, 4 and 8 ranks (4 ranks, 2 MiB: 1218 against 1443 us; 8
   * ranks, 4 MiB: 7985 against 9045), once the copied data was no longer
   * checksummed; before that the socket had won (1 MiB: 686 against 1039). */
  if (rt->p2p_up && rt->cfg.cma < 0)
    rt->p2p.cma = 1;
  if (rt->p2p_up) {
    rt->engine.poll = p2p_poll;
    rt->engine.sleep = p2p_sleep;
    rt->engine.in_flight = rlx__exec_in_flight;
    rt->engine.ctx = &rt->p2p;
  }
  if ((rc = make_world(rt)) != RLX_OK)
    goto fail;
  if ((rc = start_observing(rt, t_init)) != RLX_OK)
    goto fail;
  catch_usr1(rt);
  rlx__watch_launcher(&rt->engine.loop);
  if ((rc = rlx__engine_start(&rt->engine)) != RLX_OK)
    goto fail;
  /* a job of one rank that may grow: its joiner's segment, made now
   * rather than in the step that welcomes it (comm_shm.c) */
  if (rt->world.size == 1 && !rt->joined) {
    (void)rlx__comm_shm_solo(&rt->world);
    rlx__comm_take_reserve(rt, &rt->world); /* (grow hands it on: take_scratch) */
  }
  char progress[120] = "with the rank";
  if (rt->engine.placed && !CPU_EQUAL(&rt->engine.cpus, &rt->own_cpus)) {
    memcpy(progress, "on cpus ", 9);
    rlx__cpu_list(&rt->engine.cpus, progress + 8, sizeof progress - 40);
    if (rt->engine.beside)
      strcat(progress, ", polling while calls are in flight");
  }
  rlx__info("rank %d of %d, local %d of %d on %d cores (%s; %s), leader %d, spin %ld us, "
            "payloads by reference %s, progress thread %s", rt->cfg.rank, rt->cfg.size,
            rt->local_rank, rt->local_size, rt->ncores, binding,
            oversubscribed ? "oversubscribed: yielding" : "spinning",
            rt->world.leader, spin_us, rt->p2p_up && rt->p2p.cma ? "on" : "off", progress);
  return RLX_OK;
fail:
  {
    char saved[1024];
    snprintf(saved, sizeof(saved), "%s", rlx_errmsg());
    teardown(rt);
    rlx__err_setmsg(saved);
  }
  return rc;
}

int rlx_init(int *argc, char ***argv) {
  int rc;
  (void)argc;
  (void)argv;
  pthread_mutex_lock(&init_mtx);
  if (rlx__rt.initialized) {
    pthread_mutex_unlock(&init_mtx);
    return rlx__err(RLX_ERR_STATE, "rlx_init called twice");
  }
  rc = init_locked(&rlx__rt);
  if (rc == RLX_OK)
    rlx__rt.initialized = 1;
  /* A joiner ends with the job's agreement on the grown communicator
   * (the members' rlx_comm_grow ends with the same). */
  if (rc == RLX_OK && rlx__rt.joined && (rc = rlx__join_confirm()) != RLX_OK) {
    char saved[1024];
    snprintf(saved, sizeof(saved), "joining rank: %s", rlx_errmsg());
    teardown(&rlx__rt);
    rlx__rt.initialized = 0;
    rlx__err_setmsg(saved);
  }
  pthread_mutex_unlock(&init_mtx);
  return rc;
}

int rlx_initialized(void) {
  pthread_mutex_lock(&init_mtx);
  int v = rlx__rt.initialized;
  pthread_mutex_unlock(&init_mtx);
  return v;
}

int rlx_finalize(void) {
  pthread_mutex_lock(&init_mtx);
  if (!rlx__rt.initialized) {
    pthread_mutex_unlock(&init_mtx);
    return rlx__err(RLX_ERR_STATE, "rlx_finalize without rlx_init");
  }
  atomic_store(&rlx__rt.finalizing, (uintptr_t)pthread_self());
  int busy = rlx__comm_busy((uintptr_t)pthread_self());
  if (busy > 0) {
    atomic_store(&rlx__rt.finalizing, 0);
    pthread_mutex_unlock(&init_mtx);
    return rlx__err(RLX_ERR_STATE, "rlx_finalize: %d call%s of other threads %s still in "
                    "progress; finalize once %s returned", busy, busy > 1 ? "s" : "",
                    busy > 1 ? "are" : "is", busy > 1 ? "they have" : "it has");
  }
  /* Every rank reaches finalize before any closes its connections, so no
   * peer mistakes a clean exit for a lost rank. */
  /* (once the job grew or shrank: on a private copy of the newest
   * communicator, which every rank of it made alike) */
  rlx_comm_t *all = rlx__rt.last ? rlx__rt.last : &rlx__rt.world;
  if (all->size > 1 && !all->revoked) {
    struct rlx__op op;
    rlx__internal_op(&op, RLX__CK_FINALIZE, "rlx_finalize", RLX_UINT8, 0, NULL, NULL,
                     &rlx__barrier_dissemination);
    if (rlx__run_op(all, &op) != RLX_OK)
      rlx__info("finalize: %s", rlx_errmsg());
  }
  teardown(&rlx__rt);
  rlx__rt.initialized = 0;
  atomic_store(&rlx__rt.finalizing, 0);
  pthread_mutex_unlock(&init_mtx);
  return RLX_OK;
}
