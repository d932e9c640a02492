/* The RLX_* environment: every variable parsed and validated in one place.
 * A bad value is an RLX_ERR_ARG from rlx_init naming the variable and what it
 * accepts, never silently ignored. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <stddef.h>
#include <string.h>
#include "base/internal.h"
#include "base/tuning.h"

int rlx__parse_long(const char *s, long lo, long hi, long *out) {
  char *end;
  long v;
  if (s == NULL || *s == '\0')
    return -1;
  errno = 0;
  v = strtol(s, &end, 10);
  if (errno != 0 || *end != '\0' || v < lo || v > hi)
    return -1;
  *out = v;
  return 0;
}

int rlx__parse_double(const char *s, double lo, double hi, double *out) {
  char *end;
  double v;
  if (s == NULL || *s == '\0')
    return -1;
  errno = 0;
  v = strtod(s, &end);
  if (errno != 0 || *end != '\0' || !isfinite(v) || v < lo || v > hi)
    return -1;
  *out = v;
  return 0;
}

/* Look a value up in a list of accepted words; -1 when absent. */
static int pick(const char *s, const char *const *words, int n) {
  for (int i = 0; i < n; i++)
    if (strcmp(s, words[i]) == 0)
      return i;
  return -1;
}

static int bad(const char *var, const char *val, const char *accepts) {
  return rlx__err(RLX_ERR_ARG, "%s=\"%s\" is not valid: %s", var, val, accepts);
}

/* var, when set, must be one of words[n]: its index into *out (left as it
 * is when var is unset), else RLX_ERR_ARG naming var and what it accepts. */
static int choose(const char *var, const char *const *words, int n, const char *accepts,
                  int *out) {
  const char *s = getenv(var);
  if (s == NULL)
    return RLX_OK;
  int i = pick(s, words, n);
  if (i < 0)
    return bad(var, s, accepts);
  *out = i;
  return RLX_OK;
}

static int load_launch(struct rlx__config *cfg) {
  const char *rank = getenv("RLX_RANK"), *size = getenv("RLX_SIZE");
  const char *lrank = getenv("RLX_LOCAL_RANK"), *lsize = getenv("RLX_LOCAL_SIZE");
  const char *rdv = getenv("RLX_RENDEZVOUS"), *key = getenv("RLX_JOB_KEY");
  long v;

  cfg->local_rank = -1;
  cfg->local_size = -1;
  const char *join = getenv("RLX_JOIN"), *max_np = getenv("RLX_MAX_NP");
  /* (set but empty is a bad value too, as for every variable: rlxrun never
   * passes one) */
  if (max_np != NULL && strcmp(max_np, "0") != 0) {
    if (rlx__parse_long(max_np, 1, 1 << 20, &v) != 0)
      return bad("RLX_MAX_NP", max_np, "the most ranks the job may grow to, from 1 to 1048576 "
                 "(0: it does not grow)");
    cfg->max_np = (int)v;
  }
  if (join != NULL && strcmp(join, "0") != 0) {
    if (strcmp(join, "1") != 0)
      return bad("RLX_JOIN", join, "1 (join the running job at RLX_RENDEZVOUS) or 0");
    if (rank != NULL || size != NULL)
      return rlx__err(RLX_ERR_ARG, "RLX_JOIN=1 with RLX_%s set: a joining rank learns its rank "
                      "and the job's size when the job admits it; unset RLX_RANK and RLX_SIZE",
                      rank != NULL ? "RANK" : "SIZE");
    cfg->join = 1;
    cfg->has_launch = 1;
    cfg->rank = 0; /* until admitted */
    cfg->size = 0;
    goto addresses;
  }
  if (rank == NULL && size == NULL) {
    cfg->has_launch = 0;
    cfg->rank = 0;
    cfg->size = 1;
    return RLX_OK;
  }
  if (rank == NULL || size == NULL)
    return rlx__err(RLX_ERR_ARG, "RLX_RANK and RLX_SIZE must be set together (RLX_%s is missing)",
                    rank == NULL ? "RANK" : "SIZE");
  if (rlx__parse_long(size, 1, 1 << 20, &v) != 0)
    return bad("RLX_SIZE", size, "an integer from 1 to 1048576");
  cfg->size = (int)v;
  if (rlx__parse_long(rank, 0, cfg->size - 1, &v) != 0)
    return bad("RLX_RANK", rank, "an integer from 0 to RLX_SIZE-1");
  cfg->rank = (int)v;
  if (lsize != NULL) {
    if (rlx__parse_long(lsize, 1, cfg->size, &v) != 0)
      return bad("RLX_LOCAL_SIZE", lsize, "an integer from 1 to RLX_SIZE");
    cfg->local_size = (int)v;
  }
  if (lrank != NULL) {
    long hi = cfg->local_size > 0 ? cfg->local_size - 1 : cfg->size - 1;
    if (rlx__parse_long(lrank, 0, hi, &v) != 0)
      return bad("RLX_LOCAL_RANK", lrank, "an integer from 0 to RLX_LOCAL_SIZE-1");
    cfg->local_rank = (int)v;
  }
  cfg->has_launch = 1;
  if (cfg->max_np > 0 && cfg->max_np < cfg->size)
    return bad("RLX_MAX_NP", max_np, "at least RLX_SIZE (the job's ranks at the start)");
  if (cfg->size == 1 && rdv == NULL && cfg->max_np == 0)
    return RLX_OK;
addresses:
  if (rdv == NULL || *rdv == '\0')
    return cfg->join ? rlx__err(RLX_ERR_ARG, "RLX_RENDEZVOUS is not set: with RLX_JOIN=1 it must "
                                "be the running job's host:port")
                     : rlx__err(RLX_ERR_ARG, "RLX_RENDEZVOUS is not set: with RLX_SIZE=%d it "
                                "must be host:port", cfg->size);
  const char *colon = strrchr(rdv, ':');
  if (colon == NULL || colon == rdv || rlx__parse_long(colon + 1, 1, 65535, &v) != 0 ||
      strlen(rdv) >= sizeof(cfg->rendezvous))
    return bad("RLX_RENDEZVOUS", rdv, "host:port with a port from 1 to 65535");
  snprintf(cfg->rendezvous, sizeof(cfg->rendezvous), "%s", rdv);
  if (key == NULL || *key == '\0')
    return rlx__err(RLX_ERR_ARG, "RLX_JOB_KEY is not set: every rank of a job needs the same "
                                 "secret key (rlxrun sets it)");
  if (strlen(key) >= sizeof(cfg->job_key))
    return rlx__err(RLX_ERR_ARG, "RLX_JOB_KEY is too long (at most %zu characters)",
                    sizeof(cfg->job_key) - 1);
  snprintf(cfg->job_key, sizeof(cfg->job_key), "%s", key);
  return RLX_OK;
}

/* RLX_TRACE, RLX_FLIGHT, RLX_FLIGHT_DUMP, RLX_STATS (see observe.h). */
static int load_observe(struct rlx__config *cfg) {
  static const char *const onoff[] = {"off", "on", "0", "1"};
  static const char *const dumps[] = {"signal", "error"};
  const char *s;
  long v;
  int i, rc;
  cfg->flight = 256;
  if ((s = getenv("RLX_TRACE")) != NULL) {
    if (*s == '\0' || strlen(s) >= sizeof(cfg->trace) - 16)
      return bad("RLX_TRACE", s, "a file name prefix (each rank writes PREFIX.RANK)");
    snprintf(cfg->trace, sizeof(cfg->trace), "%s", s);
  }
  if ((s = getenv("RLX_FLIGHT")) != NULL) {
    if (rlx__parse_long(s, 0, 1000000, &v) != 0)
      return bad("RLX_FLIGHT", s, "the number of calls to keep, from 0 to 1000000");
    cfg->flight = (int)v;
  }
  if ((rc = choose("RLX_FLIGHT_DUMP", dumps, 2,
                    "signal (on SIGUSR1 only) or error (also when a call fails)",
                    &cfg->flight_dump)) != RLX_OK)
    return rc;
  if ((s = getenv("RLX_STATS")) != NULL) {
    if ((i = pick(s, onoff, 4)) < 0)
      return bad("RLX_STATS", s, "on or off (1 or 0)");
    cfg->stats = i & 1;
  }
  return RLX_OK;
}

int rlx__config_load(struct rlx__config *cfg) {
  static const char *const transports[] = {"auto", "tcp", "unix", "shm"};
  /* (kept as given: rlx_init checks the names against lib/coll's
   * tables, the one list of them) */
  static const struct {
    const char *var;
    size_t off;
  } algos[] = {
      {"RLX_ALLREDUCE_ALGO", offsetof(struct rlx__config, allreduce_algo)},
      {"RLX_BCAST_ALGO", offsetof(struct rlx__config, bcast_algo)},
      {"RLX_ALLGATHER_ALGO", offsetof(struct rlx__config, allgather_algo)},
  };
  static const char *const wires[] = {"f32", "f16", "bf16"};
  static const char *const levels[] = {"off", "error", "warn", "info", "debug", "trace"};
  const char *s;
  int i, rc;

  memset(cfg, 0, sizeof(*cfg));
  cfg->timeout_s = 300.0;
  cfg->spin_us = -1;

  if ((rc = choose("RLX_LOG", levels, 6, "one of off, error, warn, info, debug, trace",
                    &cfg->log_level)) != RLX_OK)
    return rc;
  if ((s = getenv("RLX_TIMEOUT")) != NULL &&
      rlx__parse_double(s, 0.0, 1e9, &cfg->timeout_s) != 0)
    return bad("RLX_TIMEOUT", s, "seconds, a number >= 0 (0 means no deadline)");
  /* The bootstrap waits for ranks a launcher started seconds apart (over
   * ssh, on a loaded host), which is not the skew a short RLX_TIMEOUT is
   * meant to catch inside a collective: at least 60 s unless asked. */
  cfg->init_timeout_s = cfg->timeout_s == 0 || cfg->timeout_s >= 60 ? cfg->timeout_s : 60;
  if ((s = getenv("RLX_INIT_TIMEOUT")) != NULL &&
      rlx__parse_double(s, 0.0, 1e9, &cfg->init_timeout_s) != 0)
    return bad("RLX_INIT_TIMEOUT", s, "seconds, a number >= 0 (0 means no deadline)");
  if ((s = getenv("RLX_TRANSPORT")) != NULL) {
    if ((i = pick(s, transports, 4)) < 0)
      return bad("RLX_TRANSPORT", s, "one of auto, tcp, unix, shm");
    if (i > 0)
      snprintf(cfg->transport, sizeof(cfg->transport), "%s", transports[i]);
  }
  for (size_t a = 0; a < sizeof(algos) / sizeof(algos[0]); a++) {
    if ((s = getenv(algos[a].var)) == NULL)
      continue;
    if (*s == '\0' || strlen(s) >= 24)
      return bad(algos[a].var, s, "an algorithm's name (rlxcoll(7) lists them)");
    snprintf((char *)cfg + algos[a].off, 24, "%s", s);
  }
  static const char *const offauto[] = {"off", "auto"}, *const quorum[] = {"majority", "any"};
  cfg->shm_coll = 1;
  if ((rc = choose("RLX_SHM_COLL", offauto, 2, "auto or off", &cfg->shm_coll)) != RLX_OK ||
      (rc = choose("RLX_SHRINK_QUORUM", quorum, 2, "majority or any", &cfg->shrink_any)) != RLX_OK)
    return rc;
  if ((s = getenv("RLX_SPIN_US")) != NULL && strcmp(s, "auto") != 0) {
    long v;
    if (rlx__parse_long(s, 0, 60L * 1000 * 1000, &v) != 0)
      return bad("RLX_SPIN_US", s, "auto, or microseconds from 0 to 60000000");
    cfg->spin_us = v;
  }
  if ((rc = choose("RLX_WIRE", wires, 3, "one of f32, f16, bf16", &cfg->wire)) != RLX_OK)
    return rc;
  cfg->progress_spare = 0; /* (README, "The progress thread beside the rank": why not spare) */
  static const char *const where[] = {"rank", "spare"};
  if ((rc = choose("RLX_PROGRESS_BIND", where, 2, "spare or rank", &cfg->progress_spare)) != RLX_OK)
    return rc;
  cfg->cma = -1; /* auto */
  if ((s = getenv("RLX_CMA")) != NULL && strcmp(s, "auto") != 0) {
    static const char *const onoff[] = {"off", "on"};
    if ((i = pick(s, onoff, 2)) < 0)
      return bad("RLX_CMA", s, "auto, on or off");
    cfg->cma = i;
  }
  cfg->cma_hold_ms = RLX__CMA_HOLD_MS;
  if ((s = getenv("RLX_CMA_HOLD_MS")) != NULL &&
      rlx__parse_long(s, 0, 3600L * 1000, &cfg->cma_hold_ms) != 0)
    return bad("RLX_CMA_HOLD_MS", s, "milliseconds from 0 to 3600000");
  if ((s = getenv("RLX_IFACE")) != NULL) {
    if (*s == '\0' || strlen(s) >= sizeof(cfg->iface))
      return bad("RLX_IFACE", s, "an interface name or prefix, 1 to 63 characters");
    snprintf(cfg->iface, sizeof(cfg->iface), "%s", s);
  }
  return load_observe(cfg) != RLX_OK ? RLX_ERR_ARG : load_launch(cfg);
}
