/* lib/base, the bottom floor: errors, logging, configuration, dtypes,
 * half floats (half.h), byte order (byteorder.h), measured constants
 * (tuning.h), the run directory. It uses nothing else of lib/; every
 * floor above uses it. The floors, bottom up (each uses only those below
 * it; README "Layout"): base; engine; observe; bootstrap, then transport;
 * coll; runtime. */
#ifndef RLX_INTERNAL_H
#define RLX_INTERNAL_H

#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <rlxcoll/rlxcoll.h>

#define RLX__ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

/* memset(p, 0, n), out of line (clear.c says why): for clears of a few
 * hundred bytes on a call's path. */
void rlx__clear(void *p, size_t n);

/* ---- errors (error.c) ---------------------------------------------------- */

/* Set this thread's error detail and return err, so call sites can write
 * `return rlx__err(RLX_ERR_ARG, "count %zu too large", n);`. */
int rlx__err(int err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void rlx__err_setmsg(const char *msg);
const char *rlx__err_name(int err);

/* ---- logging (log.c) ----------------------------------------------------- */

enum rlx__log_level {
  RLX__LOG_OFF = 0,
  RLX__LOG_ERROR,
  RLX__LOG_WARN,
  RLX__LOG_INFO,
  RLX__LOG_DEBUG,
  RLX__LOG_TRACE
};

extern int rlx__log_level;
extern int rlx__log_rank;
void rlx__log(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* RLX_LOG for parts usable before rlx_init (the compute layer); a bad
 * value is left for rlx_init to refuse. */
void rlx__log_level_from_env(void);
#define RLX_LOG_AT(lvl, ...)                                                   \
  do {                                                                         \
    if (rlx__log_level >= (lvl))                                               \
      rlx__log((lvl), __VA_ARGS__);                                            \
  } while (0)
#define rlx__error(...) RLX_LOG_AT(RLX__LOG_ERROR, __VA_ARGS__)
#define rlx__warn(...) RLX_LOG_AT(RLX__LOG_WARN, __VA_ARGS__)
#define rlx__info(...) RLX_LOG_AT(RLX__LOG_INFO, __VA_ARGS__)
#define rlx__debug(...) RLX_LOG_AT(RLX__LOG_DEBUG, __VA_ARGS__)

/* ---- configuration (config.c) -------------------------------------------- */

enum rlx__wire { RLX__WIRE_F32 = 0, RLX__WIRE_F16, RLX__WIRE_BF16 };

struct rlx__config {
  double timeout_s;     /* RLX_TIMEOUT, 0 = none */
  double init_timeout_s; /* RLX_INIT_TIMEOUT: rlx_init's bootstrap, 0 = none */
  char transport[8];    /* RLX_TRANSPORT: a transport's name, "" = by reach */
  char allreduce_algo[24]; /* RLX_ALLREDUCE_ALGO, "" = auto */
  char bcast_algo[24];     /* RLX_BCAST_ALGO */
  char allgather_algo[24]; /* RLX_ALLGATHER_ALGO */
  int wire;                /* RLX_WIRE */
  int cma;                 /* RLX_CMA: 1 on, 0 off, -1 auto */
  long cma_hold_ms;        /* RLX_CMA_HOLD_MS (default RLX__CMA_HOLD_MS) */
  int shm_coll;            /* RLX_SHM_COLL: 1 auto (collectives in shared memory), 0 off */
  int shrink_any;          /* RLX_SHRINK_QUORUM: 0 majority, 1 any (every side goes on) */
  int log_level;        /* RLX_LOG */
  long spin_us;         /* RLX_SPIN_US, -1 = automatic */
  char iface[64];       /* RLX_IFACE, empty = automatic */
  char trace[4000];     /* RLX_TRACE: file prefix, empty = no timeline */
  int flight;           /* RLX_FLIGHT: calls the flight recorder keeps */
  int flight_dump;      /* RLX_FLIGHT_DUMP: 1 = also when a call fails */
  int stats;            /* RLX_STATS: 1 = print statistics at rlx_finalize */
  int progress_spare;   /* RLX_PROGRESS_BIND: 1 spare, 0 rank (the default) */
  /* Launch information (RLX_RANK ...), has_launch when RLX_RANK is set. */
  int has_launch;
  int rank, size, local_rank, local_size;
  /* RLX_JOIN=1: this process asks a running job to take it (rank and
   * size come with its admission); RLX_MAX_NP: the job may grow to this
   * many ranks (0: it does not grow) */
  int join, max_np;
  char rendezvous[256];
  char job_key[256];
};

/* Parse and validate the RLX_* environment. On a bad value returns
 * RLX_ERR_ARG with a message naming the variable and what it accepts. */
int rlx__config_load(struct rlx__config *cfg);

/* Small validated parsers, shared with rlxrun. */
int rlx__parse_long(const char *s, long lo, long hi, long *out);
int rlx__parse_double(const char *s, double lo, double hi, double *out);

/* ---- dtypes (dtype.c) ------------------------------------------------------ */
/* rlx_dtype_size for a dtype already checked, inline (every call's). */
extern const size_t rlx__dtype_sizes[RLX_DTYPE_COUNT];
static inline size_t rlx__dtype_size(rlx_dtype_t dt) { return rlx__dtype_sizes[dt]; }

/* ---- time ---------------------------------------------------------------- */
uint64_t rlx__now_ns(void);
uint64_t rlx__tick_ns(void); /* coarse: liveness stamps (log.c) */
uint64_t rlx__tick_ceil_ns(void); /* coarse, rounded up: never before rlx__now_ns() */

/* ---- run directories (rundir.c) -------------------------------------------- */
/* Make this rank's private directory under base (rlx-RANK-PID-XXXXXX,
 * mode 0700) into out, after removing those of this user's ranks whose
 * process is gone. 0 or -errno. */
int rlx__rundir_make(char *out, size_t len, const char *base, int rank);
void rlx__rundir_sweep(const char *base);

#endif
