/* train: data-parallel training of an MLP classifier on Fashion-MNIST.
 * Every rank holds a replica; the leader's initial parameters are
 * broadcast, each step's gradients averaged with rlx_allreduce, so the
 * replicas stay bitwise identical. The per-epoch order is a permutation
 * every rank computes from the seed, and rank r of n takes examples
 * r, r+n, r+2n... of it (PyTorch's DistributedSampler), computing only
 * those positions (rlx_dataset_order): n ranks at batch B
 * see exactly what one rank at batch n*B would. Where a run is in an epoch
 * is the number of its examples used so far, so when the ranks change
 * (--elastic: a rank lost, or joiners admitted) the rest of the epoch is
 * re-cut over the new ranks and every example is still seen once. */
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <rlxcoll/compute.h>
#include <rlxcoll/rlxcoll.h>
#include "train_opts.h"

static volatile sig_atomic_t stop_asked, hup_asked;
static void on_int(int sig) { (void)sig; stop_asked = 1; }
static void on_hup(int sig) { (void)sig; hup_asked = 1; }

struct run {
  struct train_opts o;
  rlx_comm_t *w;
  int rank, size, leader;
  rlx_model_t *m;
  rlx_model_desc_t desc; /* how the model was made (a change of backend remakes it) */
  int sizes[TRAIN_MAX_HIDDEN + 2];
  float *x, *grad;       /* the model's own buffers */
  float *x2;             /* --prefetch: the model's second input buffer, for the next batch */
  struct {               /* the batch rlx_model_prefetch moved ahead: for which step */
    rlx_model_t *m;      /* (a remade model has none) */
    long epoch, off;
    int size, rank, buf, valid;
  } pre;
  uint16_t *grad16;      /* --grad-precision f16|bf16: the model's 16-bit one */
  rlx_dataset_t *train, *test;
  size_t ntrain;
  size_t np;
  float lr;
  int tty;
  /* where the run is: epoch, examples of it used, steps in all; after a
   * lost rank every survivor takes the leader's (some may have finished a
   * call the others did not), and so does a joiner */
  long epoch, off, step;
  FILE *log; /* --log-json, open on the leader */
  double t_start; /* the log's times count from here */
  /* the leader's parameters and momentum, on their way to other ranks
   * (--elastic), where the backend keeps them on a device (the C
   * backend's go in place: rlx_model_params_buffer): made and touched
   * with the model, so that sharing them takes no page faults (~400,
   * 0.5-0.8 ms on 2 cores, in a joiner's admission that every rank waits
   * for) */
  float *state;
  /* --data-on-device: the training set kept on the model's device, its
   * batches gathered there (1), the epoch whose order it has, and room for
   * that order; totals a remade model's device held (use_cpu) */
  int dev_data;
  long order_epoch;
  uint32_t *perm;
  double held_loss;
  long held_ok;
  /* every rank computes in one context (RLX_DEVICE_SHARE=1 on one
   * device): the step averages the gradients there */
  int shared_step;
};

/* --log-json: the leader's file, opened when first needed (a leader
 * elected after a loss appends to it). NULL on other ranks. */
static FILE *log_file(struct run *r) {
  if (!r->o.log_json || r->rank != r->leader)
    return NULL;
  if (r->log == NULL && (r->log = fopen(r->o.log_json, r->step > 0 ? "a" : "w")) == NULL) {
    fprintf(stderr, "train: cannot write %s; no JSON log\n", r->o.log_json);
    r->o.log_json = NULL;
  }
  return r->log;
}

static void start_identical(struct run *r);
static void fail(struct run *r, const char *what, int rc);
static int share_state(struct run *r);

/* --elastic: after a lost rank (RLX_ERR_PEER_LOST, or a communicator
 * revoked by it) shrink to the survivors, take the new leader's
 * parameters (the failed step may have been applied by some ranks only),
 * and go on with the data sharded over fewer ranks. 1 when recovered. */
static int recover(struct run *r, int rc) {
  if (!r->o.elastic || (rc != RLX_ERR_PEER_LOST && rc != RLX_ERR_REVOKED))
    return 0;
  char why[640];
  snprintf(why, sizeof why, "%s", rlx_errmsg());
  rlx_comm_t *s = NULL;
  int src = rlx_comm_shrink(r->w, &s);
  if (src != RLX_OK) {
    fprintf(stderr, "train: rank %d: rlx_comm_shrink: %s: %s\n", r->rank, rlx_strerror(src),
            rlx_errmsg());
    exit(1);
  }
  if (r->w != rlx_comm_world())
    rlx_comm_free(&r->w);
  int old = r->size;
  r->w = s;
  r->rank = rlx_comm_rank(s);
  r->size = rlx_comm_size(s);
  r->leader = rlx_comm_leader(s);
  if (r->rank == r->leader) {
    printf("train: step %ld: %d rank(s) lost (%s); going on with %d, leader: rank %d of the survivors (pid %d), "
           "data re-sharded\n", r->step, old - r->size, why, r->size, r->leader, (int)getpid());
    fflush(stdout);
  }
  if ((src = share_state(r)) != RLX_OK)
    fail(r, "sharing the leader's state after a loss", src);
  return 1;
}

static int agree_backend(struct run *r);

/* The leader's parameters, and its momentum (without: every rank's is
 * cleared), to every rank. In place where the backend computes from host
 * memory: the leader broadcasts from its model and the others receive
 * into theirs, with no copy out (0.23 ms at 203,530 parameters on 16
 * cores) or in (0.3 ms) on the path a joiner's first step waits for;
 * through r->state where a device holds them. */
static int share_floats(struct run *r, int momentum) {
  float *params = rlx_model_params_buffer(r->m), *v = rlx_model_momentum_buffer(r->m);
  int rc = RLX_OK;
  if (params && v) {
    rc = rlx_bcast(params, r->np, RLX_FLOAT32, r->leader, r->w);
    if (rc == RLX_OK && momentum)
      rc = rlx_bcast(v, r->np, RLX_FLOAT32, r->leader, r->w);
    else if (rc == RLX_OK)
      memset(v, 0, sizeof(float) * r->np);
    return rc;
  }
  size_t n = r->np * (momentum ? 2 : 1);
  float *p = r->state;
  if (r->rank == r->leader && (rc = rlx_model_get_params(r->m, p)) == RLX_OK && momentum)
    rc = rlx_model_get_momentum(r->m, p + r->np);
  if (rc == RLX_OK && (rc = rlx_bcast(p, n, RLX_FLOAT32, r->leader, r->w)) == RLX_OK &&
      (rc = rlx_model_set_params(r->m, p)) == RLX_OK && momentum)
    rc = rlx_model_set_momentum(r->m, p + r->np);
  return rc;
}

/* The leader's position and learning rate, as four int64 (the rate's
 * bits: a rate >= 0 reads as a number >= 0, so the largest of every
 * rank's, the others giving -1, is the leader's). */
static void position_mine(const struct run *r, int64_t pos[4]) {
  double lr = r->lr;
  pos[0] = pos[1] = pos[2] = pos[3] = -1;
  if (r->rank != r->leader)
    return;
  pos[0] = r->epoch;
  pos[1] = r->off;
  pos[2] = r->step;
  memcpy(&pos[3], &lr, sizeof lr);
}

static void take_position(struct run *r, const int64_t pos[4]) {
  double lr;
  r->epoch = pos[0];
  r->off = pos[1];
  r->step = pos[2];
  memcpy(&lr, &pos[3], sizeof lr);
  r->lr = (float)lr;
}

/* Every rank takes the leader's position, learning rate and parameters
 * (after a loss: the failed step may have been applied by some only). */
static int share_state(struct run *r) {
  int64_t pos[4];
  position_mine(r, pos);
  int rc = rlx_bcast(pos, 4, RLX_INT64, r->leader, r->w);
  if (rc == RLX_OK && (rc = share_floats(r, 0)) == RLX_OK)
    take_position(r, pos);
  return rc;
}

/* --elastic: the first call on a grown communicator, one small allreduce
 * (a joiner's first, right after its rlx_init; the members' right after
 * rlx_comm_grow), says all a joiner's first step needs but the floats:
 * whether the communicator brought new ranks in (each says whether it is
 * one: the first half of an admission, rlx_comm_grow(3), brings nobody in
 * yet), whether some rank computes on the C backend (they all switch to
 * it), and the leader's position. */
enum { HELLO_NEW, HELLO_CPU, HELLO_POS, HELLO_N = HELLO_POS + 4 };

static int64_t auto_on_cpu(const struct run *r);
static int use_cpu(struct run *r);

static int hello(struct run *r, int joiner, int64_t v[HELLO_N]) {
  v[HELLO_NEW] = joiner;
  v[HELLO_CPU] = auto_on_cpu(r);
  position_mine(r, v + HELLO_POS);
  int rc = rlx_allreduce(RLX_IN_PLACE, v, HELLO_N, RLX_INT64, RLX_MAX, r->w);
  if (rc != RLX_OK && !recover(r, rc))
    fail(r, "rlx_allreduce (newcomers)", rc);
  return rc == RLX_OK && v[HELLO_NEW] > 0;
}

/* On every rank of a communicator that brought joiners in (members in
 * rlx_comm_grow's wake, a joiner after rlx_init): one backend, then the
 * leader's state. The members hold the leader's parameters and momentum
 * already (replicas stay bitwise identical) and receive them in place only
 * because a broadcast takes every rank. A rank lost meanwhile (a joiner
 * killed as it came): the survivors shrink and go on. */
static void welcome(struct run *r, const int64_t v[HELLO_N]) {
  int rc = v[HELLO_CPU] ? use_cpu(r) : RLX_OK;
  if (rc == RLX_OK)
    rc = share_floats(r, 1);
  if (rc == RLX_OK)
    take_position(r, v + HELLO_POS);
  else if (!recover(r, rc))
    fail(r, "giving the joiners the leader's state", rc);
}

/* --elastic: ranks wait to join (rlxrun --join): admit them now (or, in
 * the first half of their admission, let them connect meanwhile). */
static double now_s(void);
static void grow(struct run *r) {
  rlx_comm_t *g = NULL;
  double t0 = now_s();
  int rc = rlx_comm_grow(r->w, &g);
  if (rc != RLX_OK) {
    if (recover(r, rc))
      return;
    fail(r, "rlx_comm_grow", rc);
  }
  int old = r->size;
  if (r->w != rlx_comm_world())
    rlx_comm_free(&r->w);
  r->w = g;
  r->rank = rlx_comm_rank(g);
  r->size = rlx_comm_size(g);
  r->leader = rlx_comm_leader(g);
  double t1 = now_s();
  int64_t v[HELLO_N];
  int came = hello(r, 0, v);
  FILE *lf = log_file(r);
  if (lf) /* (joined 0: the first half, the joiners connect meanwhile) */
    fprintf(lf, "{\"type\":\"grow\",\"step\":%ld,\"joined\":%d,\"ranks\":%d,\"time_s\":%.6f}\n",
            r->step, came ? r->size - old : 0, r->size, now_s() - r->t_start);
  if (!came)
    return;
  welcome(r, v);
  /* (not flushed here: under rlxrun stdout is a pipe, and a write wakes
   * rlxrun to relay it, which on a host short of cores ran in the leader's
   * or the joiner's place in the very step every rank waits on: 100-400
   * us at 1 -> 2 on 2 cores. The line goes out with the next flush, the
   * epoch's end at the latest; on a terminal, at once.) */
  if (r->rank == r->leader)
    printf("train: step %ld: %d rank(s) joined; going on with %d, data re-sharded (admission "
           "%.1f ms, the leader's state to them %.1f ms)\n", r->step, r->size - old, r->size,
           (t1 - t0) * 1e3, (now_s() - t1) * 1e3);
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void fail(struct run *r, const char *what, int rc) {
  fprintf(stderr, "train: rank %d: %s: %s: %s\n", r->rank, what, rlx_strerror(rc), rlx_errmsg());
  exit(1);
}

/* The dataset's files, or the announced synthetic stand-in when they are
 * absent. A file that is there but bad is an error, never a silent swap. */
static rlx_dataset_t *load(struct run *r, const char *split, size_t synth_count) {
  rlx_dataset_t *d = NULL;
  char a[1200], b[1200];
  snprintf(a, sizeof a, "%s/%s-images-idx3-ubyte.gz", r->o.data, split);
  snprintf(b, sizeof b, "%s/%s-images-idx3-ubyte", r->o.data, split);
  int present = access(a, F_OK) == 0 || access(b, F_OK) == 0;
  if (!r->o.synthetic && present) {
    int rc = rlx_dataset_load(r->o.data, split, &d);
    if (rc != RLX_OK)
      fail(r, "loading the data", rc);
    return d;
  }
  int rc = rlx_dataset_synthetic(synth_count, 784, 10, r->o.seed, split, &d);
  if (rc != RLX_OK)
    fail(r, "making synthetic data", rc);
  if (r->rank == r->leader && !r->o.synthetic)
    printf("train: no %s in %s; using a synthetic set (seed %llu) instead\n",
           a + strlen(r->o.data) + 1, r->o.data, (unsigned long long)r->o.seed);
  return d;
}

/* Once per step, one small allreduce carries the stop request (any rank's
 * SIGINT), the leader's "the learning rate changed" and, with --elastic,
 * whether ranks wait to join; every rank acts on it after the same step. */
/* 0: go on, 1: stop, -1: a rank was lost and the run resynchronised. */
static void control_mine(struct run *r, int64_t ctl[3]) {
  int joiners = r->o.elastic ? rlx_comm_joiners(r->w) : 0;
  ctl[0] = stop_asked ? 1 : 0;
  ctl[1] = r->rank == r->leader && hup_asked ? 1 : 0;
  ctl[2] = joiners > 0 ? joiners : 0;
}

/* What every rank does, alike, with the step's combined control. */
static int control_act(struct run *r, const int64_t ctl[3], long step) {
  int rc;
  if (ctl[1]) {
    double lr = r->lr;
    if (r->rank == r->leader) {
      hup_asked = 0;
      FILE *f = r->o.lr_file ? fopen(r->o.lr_file, "r") : NULL;
      double v;
      if (f && fscanf(f, "%lf", &v) == 1 && v >= 0 && v <= 1000) {
        printf("train: step %ld: learning rate %g -> %g (from %s); every rank switches now\n",
               step, (double)r->lr, v, r->o.lr_file);
        lr = v;
      } else {
        printf("train: step %ld: SIGHUP, but %s holds no learning rate from 0 to 1000; "
               "keeping %g\n", step, r->o.lr_file ? r->o.lr_file : "(no --lr-file)",
               (double)r->lr);
      }
      if (f)
        fclose(f);
      fflush(stdout);
    }
    if ((rc = rlx_bcast(&lr, 1, RLX_FLOAT64, r->leader, r->w)) != RLX_OK)
      fail(r, "rlx_bcast (learning rate)", rc);
    if ((float)lr != r->lr) {
      printf("train: rank %d uses learning rate %g from step %ld on\n", r->rank, lr, step + 1);
      fflush(stdout);
    }
    r->lr = (float)lr;
  }
  if (ctl[2] > 0 && !ctl[0])
    grow(r);
  return ctl[0] != 0;
}

/* The step's control goes as a nonblocking allreduce, started before the
 * step computes and completed after it, so that it costs the step nothing
 * it would wait for: what was asked before the step is acted on after it,
 * by every rank alike. */
static int control_start(struct run *r, int64_t ctl[3], rlx_request_t **req) {
  control_mine(r, ctl);
  return rlx_iallreduce(RLX_IN_PLACE, ctl, 3, RLX_INT64, RLX_MAX, r->w, req);
}

static int control_finish(struct run *r, rlx_request_t **req, int64_t ctl[3], long step) {
  int rc = rlx_wait(req);
  if (rc != RLX_OK && recover(r, rc))
    return -1;
  if (rc != RLX_OK)
    fail(r, "rlx_allreduce (control)", rc);
  return control_act(r, ctl, step);
}

/* The loss and right answers the model kept since the last call (on a
 * device: a wait for the steps queued there) into held, where a model
 * about to be remade leaves them (use_cpu) ... */
static void totals_hold(struct run *r) {
  double l = 0;
  long c = 0;
  int rc = rlx_model_totals(r->m, &l, &c);
  if (rc != RLX_OK)
    fail(r, "reading the loss", rc);
  r->held_loss += l;
  r->held_ok += c;
}

/* ... and from there added to st. */
static void totals_drain(struct run *r, double st[3]) {
  totals_hold(r);
  st[0] += r->held_loss;
  st[1] += (double)r->held_ok;
  r->held_loss = 0;
  r->held_ok = 0;
}

/* The epoch's numbers start again (a new epoch, or after a recovery). */
static void totals_reset(struct run *r, double st[3]) {
  totals_drain(r, st);
  st[0] = st[1] = st[2] = 0;
}

/* A step that failed: its control exchange ended (its communicator may be
 * shrunk or freed only then), then a recovery (--elastic) or the end. */
static void step_failed(struct run *r, rlx_request_t **creq, int rc, const char *what,
                        double st[3]) {
  if (*creq)
    (void)rlx_wait(creq);
  if (!recover(r, rc))
    fail(r, what, rc);
  totals_reset(r, st);
}

/* --bucket-kb: DDP's overlap. Each bucket of the gradient (whole layers,
 * the last first) starts its allreduce as soon as backward handed it to
 * the host; then, in that order, each averaged bucket is applied while
 * the later ones are still in flight. The step's control rides in the
 * first bucket, in the gradient buffer's spare room right after it: as
 * averages, a value above 0 means some rank said so. */
#define MAX_BUCKETS 16
struct pipe {
  rlx_comm_t *w;
  float *g;
  size_t np;
  rlx_request_t *req[MAX_BUCKETS];
  size_t off[MAX_BUCKETS], n[MAX_BUCKETS];
  int nb;
};

static int start_bucket(size_t off, size_t n, void *arg) {
  struct pipe *p = arg;
  if (p->nb == MAX_BUCKETS)
    return RLX_ERR_ARG; /* (a bucket is at least a layer: never) */
  size_t count = off + n == p->np ? n + 3 : n;
  int rc = rlx_iallreduce(RLX_IN_PLACE, p->g + off, count, RLX_FLOAT32, RLX_AVG, p->w,
                          &p->req[p->nb]);
  if (rc != RLX_OK)
    return rc;
  p->off[p->nb] = off;
  p->n[p->nb++] = n;
  return 0;
}

static int bucketed_step(struct run *r, const float *x, const int32_t *y, float *loss, int *ok,
                         int64_t ctl[3]) {
  struct pipe p = {.w = r->w, .g = r->grad, .np = r->np};
  control_mine(r, ctl);
  for (int k = 0; k < 3; k++)
    r->grad[r->np + k] = (float)ctl[k];
  int rc = rlx_model_grad_buckets(r->m, x, y, r->o.batch, r->grad,
                                  (size_t)r->o.bucket_kb * 1024 / sizeof(float), start_bucket, &p,
                                  loss, ok);
  for (int b = 0; b < p.nb; b++) { /* every request ends, even after a failure */
    int w = rlx_wait(&p.req[b]);
    if (rc == RLX_OK && w != RLX_OK)
      rc = w;
    if (rc == RLX_OK)
      rc = rlx_model_apply_range(r->m, r->grad, p.off[b], p.n[b], r->lr);
  }
  for (int k = 0; k < 3; k++)
    ctl[k] = r->grad[r->np + k] > 0.0f;
  return rc;
}

static void progress(struct run *r, int epoch, long s, long steps, double st[3]) {
  static double last;
  double t = now_s();
  if (!r->tty || r->rank != r->leader || (t - last < 0.1 && s + 1 < steps))
    return;
  last = t;
  totals_drain(r, st);
  double loss = st[2] > 0 ? st[0] / st[2] : 0;
  int width = 30, done = (int)((s + 1) * width / steps);
  printf("\repoch %d/%d [%.*s%*s] %3ld%% loss %.4f", epoch + 1, r->o.epochs, done,
         "==============================", width - done, "", (s + 1) * 100 / steps, loss);
  fflush(stdout);
}

/* Test loss and accuracy: rank r evaluates examples r, r+n, ... */
static int evaluate(struct run *r, double *loss, double *acc, float *x, int32_t *y,
                    uint32_t *idx, int chunk) {
  double st[3] = {0, 0, 0};
  long ok = 0;
  for (size_t i = (size_t)r->rank; i < r->test->count;) {
    int n = 0;
    for (; n < chunk && i < r->test->count; i += (size_t)r->size)
      idx[n++] = (uint32_t)i;
    int rc = rlx_dataset_batch(r->test, idx, n, x, y);
    if (rc == RLX_OK)
      rc = rlx_model_eval(r->m, x, y, n, &st[0], &ok);
    if (rc != RLX_OK)
      fail(r, "evaluating", rc);
    st[2] += n;
  }
  st[1] = (double)ok;
  int rc = rlx_allreduce(RLX_IN_PLACE, st, 3, RLX_FLOAT64, RLX_SUM, r->w);
  if (rc != RLX_OK)
    return rc;
  *loss = st[0] / st[2];
  *acc = 100.0 * st[1] / st[2];
  return RLX_OK;
}

static void start_identical(struct run *r) {
  float *p = malloc(sizeof(float) * r->np);
  if (!p)
    fail(r, "parameters", RLX_ERR_NOMEM);
  int rc = rlx_model_get_params(r->m, p);
  if (rc == RLX_OK)
    rc = rlx_bcast(p, r->np, RLX_FLOAT32, r->leader, r->w);
  if (rc == RLX_OK)
    rc = rlx_model_set_params(r->m, p);
  if (rc != RLX_OK)
    fail(r, "broadcasting the leader's parameters", rc);
  free(p);
}

static void dump(struct run *r) {
  float *p = malloc(sizeof(float) * r->np);
  int rc = p ? rlx_model_get_params(r->m, p) : RLX_ERR_NOMEM;
  if (rc != RLX_OK)
    fail(r, "reading parameters", rc);
  FILE *f = fopen(r->o.dump_params, "wb");
  if (!f || fwrite(p, sizeof(float), r->np, f) != r->np || fclose(f)) {
    fprintf(stderr, "train: cannot write %s\n", r->o.dump_params);
    exit(1);
  }
  free(p);
}

/* With auto, each rank times its candidates; if any kept the C backend,
 * all use it, so the replicas apply their averaged gradients with the same
 * arithmetic and stay identical (a rank that switches keeps its state). */
static int runs_auto(const struct run *r) {
  const char *asked = r->desc.device ? r->desc.device : getenv("RLX_DEVICE");
  return !asked || !*asked || !strcmp(asked, "auto");
}

static int64_t auto_on_cpu(const struct run *r) {
  return runs_auto(r) && !strcmp(rlx_model_backend(r->m), "cpu");
}

/* --data-on-device (auto: on a device that has room): the training set
 * kept where the model computes, so that each step's batch is gathered
 * there (the same rows as the host's, bit for bit) instead of built and
 * uploaded by the host. Where it does not fit, auto says so and keeps it
 * on the host; 1 stops. */
static void attach_data(struct run *r) {
  r->dev_data = 0;
  r->order_epoch = -1;
  if (r->o.data_on_device == 0 ||
      (r->o.data_on_device < 0 && !strcmp(rlx_model_backend(r->m), "cpu")))
    return;
  int rc = rlx_model_data_attach(r->m, r->train, r->ntrain);
  if (rc == RLX_OK && r->perm == NULL && (r->perm = malloc(sizeof(uint32_t) * r->ntrain)) == NULL)
    fail(r, "room for the epoch's order", RLX_ERR_NOMEM);
  if (rc == RLX_OK) {
    r->dev_data = 1;
    return;
  }
  if (r->o.data_on_device > 0 || rc != RLX_ERR_NOMEM) /* (only "no room" falls back) */
    fail(r, r->o.data_on_device > 0 ? "--data-on-device 1" : "keeping the training set on the device", rc);
  printf("train: pid %d keeps the training set on the host (each batch built and uploaded): "
         "%s\n", (int)getpid(), rlx_errmsg());
  fflush(stdout);
}

/* This rank's batch of the step at position off, gathered on the device
 * from the epoch's order (given to it once an epoch). */
static void device_batch(struct run *r) {
  int rc = RLX_OK;
  if (r->order_epoch != r->epoch &&
      (rc = rlx_dataset_shuffle(r->perm, r->ntrain, r->o.seed, (uint64_t)r->epoch)) == RLX_OK &&
      (rc = rlx_model_data_order(r->m, r->perm, r->ntrain)) == RLX_OK)
    r->order_epoch = r->epoch;
  if (rc == RLX_OK)
    rc = rlx_model_data_batch(r->m, (size_t)r->off + (size_t)r->rank, (size_t)r->size,
                              r->o.batch);
  if (rc != RLX_OK)
    fail(r, "gathering a batch on the device", rc);
}

/* Some rank runs auto on the C backend: this one too, if it runs auto on
 * another, with the parameters and momentum it has. */
static int use_cpu(struct run *r) {
  if (!runs_auto(r) || !strcmp(rlx_model_backend(r->m), "cpu"))
    return RLX_OK;
  r->shared_step = 0; /* (the C model's context is nobody's) */
  size_t np = rlx_model_nparams(r->m);
  float *p = malloc(sizeof(float) * np * 2);
  int rc;
  if (!p || rlx_model_get_params(r->m, p) != RLX_OK || rlx_model_get_momentum(r->m, p + np) != RLX_OK)
    fail(r, "keeping the parameters", RLX_ERR_NOMEM);
  totals_hold(r);
  rlx_model_free(&r->m);
  r->desc.device = "cpu";
  if ((rc = rlx_model_create(&r->desc, &r->m)) != RLX_OK ||
      (rc = rlx_model_set_params(r->m, p)) != RLX_OK ||
      (rc = rlx_model_set_momentum(r->m, p + np)) != RLX_OK)
    fail(r, "creating the model", rc);
  free(p);
  r->x = rlx_model_input_buffer(r->m);
  r->x2 = r->o.prefetch ? rlx_model_next_input_buffer(r->m) : NULL;
  r->grad = rlx_model_grad_buffer(r->m);
  r->grad16 = r->o.grad_half ? rlx_model_grad16_buffer(r->m) : NULL;
  attach_data(r);
  printf("train: rank %d uses cpu too: another rank's step was faster there\n", r->rank);
  return RLX_OK;
}

static int agree_backend(struct run *r) {
  if (!runs_auto(r))
    return RLX_OK;
  int on_cpu = (int)auto_on_cpu(r), any = on_cpu, rc;
  if ((rc = rlx_allreduce(&on_cpu, &any, 1, RLX_INT32, RLX_MAX, r->w)) != RLX_OK)
    return rc;
  return any ? use_cpu(r) : RLX_OK;
}

/* The data and the model: before rlx_init when this process joins a
 * running job (the job waits for it only once it is admitted), after
 * otherwise. */
static void prepare(struct run *r) {
  int ns = 0;
  r->train = load(r, "train", 60000);
  r->test = load(r, "t10k", 10000);
  if (r->train->dim != r->test->dim || r->train->classes > 256) {
    fprintf(stderr, "train: training (%d) and test (%d) images differ in size\n", r->train->dim,
            r->test->dim);
    exit(1);
  }
  r->ntrain = r->train->count;
  if (r->o.train_limit && (size_t)r->o.train_limit < r->ntrain)
    r->ntrain = (size_t)r->o.train_limit;
  r->sizes[ns++] = r->train->dim;
  for (int i = 0; i < r->o.nhidden; i++)
    r->sizes[ns++] = r->o.hidden[i];
  r->sizes[ns++] = r->train->classes > r->test->classes ? r->train->classes : r->test->classes;
  r->desc = (rlx_model_desc_t){.nsizes = ns, .sizes = r->sizes,
                               .max_batch = r->o.batch > 256 ? r->o.batch : 256,
                               .seed = r->o.seed, .momentum = (float)r->o.momentum,
                               .device = r->o.backend, .local_rank = -1};
  int rc = rlx_model_create(&r->desc, &r->m);
  if (rc != RLX_OK)
    fail(r, "creating the model", rc);
  r->x = rlx_model_input_buffer(r->m);
  r->x2 = r->o.prefetch ? rlx_model_next_input_buffer(r->m) : NULL;
  r->grad = rlx_model_grad_buffer(r->m);
  r->grad16 = r->o.grad_half ? rlx_model_grad16_buffer(r->m) : NULL;
  r->np = rlx_model_nparams(r->m);
  attach_data(r);
  if (r->o.elastic && !rlx_model_params_buffer(r->m)) {
    static volatile unsigned char zero = 0; /* (a memset of 0 after malloc becomes calloc) */
    if ((r->state = malloc(sizeof(float) * r->np * 2)) == NULL)
      fail(r, "parameters", RLX_ERR_NOMEM);
    memset(r->state, zero, sizeof(float) * r->np * 2);
  }
}

/* A joiner, before it asks to join: one gradient of a batch, thrown away
 * (the parameters stay as made), so that its first step in the job does
 * not pay for the first touch of the model's buffers and the math
 * library's first call (~0.7 ms on 2 cores), which the running ranks
 * would wait for in that step's allreduce. (--elastic only: joiners run
 * with it.) */
static void warm_up(struct run *r) {
  uint32_t idx[256];
  int32_t y[256];
  int b = r->o.batch < 256 ? r->o.batch : 256;
  float loss;
  int ok;
  for (int j = 0; j < b; j++)
    idx[j] = (uint32_t)((size_t)j % r->ntrain);
  if (rlx_dataset_batch(r->train, idx, b, r->x, y) == RLX_OK)
    (void)rlx_model_grad(r->m, r->x, y, b, r->grad, &loss, &ok);
  /* (--prefetch's second input buffer too: the first step reads the next
   * batch into it, and its untouched pages cost ~0.1 ms there) */
  if (r->x2 != NULL)
    (void)rlx_dataset_batch(r->train, idx, b, r->x2, y);
  /* (and the model's parameters and momentum written once, unchanged:
   * the momentum's pages were never touched, ~0.2 ms of setting it) */
  float *v = rlx_model_momentum_buffer(r->m);
  if (v != NULL) /* (a fresh model's momentum is 0) */
    memset(v, 0, sizeof(float) * r->np);
  if (r->state == NULL)
    return;
  if (rlx_model_get_params(r->m, r->state) == RLX_OK)
    (void)rlx_model_set_params(r->m, r->state);
  if (rlx_model_get_momentum(r->m, r->state + r->np) == RLX_OK)
    (void)rlx_model_set_momentum(r->m, r->state + r->np);
}

/* "rank 3 (pid 42)", or "a joining rank (pid 42)" before rlx_init */
static void say_backend(const struct run *r, int joining) {
  const char *why = rlx_model_fallback(r->m);
  char who[32] = "a joining rank";
  if (!joining)
    snprintf(who, sizeof who, "rank %d", r->rank);
  printf("train: %s (pid %d) computes on %s%s%s\n", who, (int)getpid(), rlx_model_backend(r->m),
         why ? "; fallback: " : "", why ? why : "");
  fflush(stdout);
}

static int one_context(struct run *r);

static void setup(struct run *r) {
  int ns = r->desc.nsizes, rc;
  /* a joiner agrees with the members in hello(), and said what it computes
   * on before it asked to join: the members wait for its first step */
  if (!rlx_joined() && (rc = agree_backend(r)) != RLX_OK)
    fail(r, "agreeing on the backend", rc);
  r->np = rlx_model_nparams(r->m);
  if (!rlx_joined())
    say_backend(r, 0);
  if (r->rank == r->leader) {
    char shape[160];
    int k = 0;
    for (int i = 0; i < ns; i++)
      k += snprintf(shape + k, sizeof shape - (size_t)k, "%s%d", i ? "-" : "", r->sizes[i]);
    printf("train: %d rank(s), leader rank %d (pid %d); MLP %s, %zu parameters; batch %d x %d; "
           "lr %g, momentum %g; %s (%zu examples), test %zu\n",
           r->size, r->leader, (int)getpid(), shape, r->np, r->o.batch, r->size, (double)r->lr,
           r->o.momentum, r->train->origin, r->ntrain, r->test->count);
  }
  fflush(stdout);
  int64_t v[HELLO_N];
  if (rlx_joined() && hello(r, 1, v))
    welcome(r, v);
  else if (!rlx_joined())
    start_identical(r);
  if (!r->o.elastic && r->o.bucket_kb == 0 && !r->o.grad_half && r->size > 1 &&
      (rc = one_context(r)) != RLX_OK)
    fail(r, "comparing the ranks' contexts", rc);
}

/* Whether every rank's model computes in one context (the same key): then
 * each step's gradients are averaged on the device (rlx_model_step_shared)
 * and never cross the host. Not under --elastic (a lost rank would end the
 * group, not shrink it), and not with buckets or 16-bit gradients, which
 * are ways of crossing the host. Every rank asks, the same arguments. */
static int one_context(struct run *r) {
  uint64_t key, *keys = malloc(sizeof *keys * (size_t)r->size);
  int rc = keys ? rlx_model_share_key(r->m, &key) : RLX_ERR_NOMEM;
  if (rc == RLX_OK)
    rc = rlx_allgather(&key, keys, 1, RLX_UINT64, r->w);
  int same = rc == RLX_OK;
  for (int i = 1; same && i < r->size; i++)
    same = keys[i] == keys[0];
  r->shared_step = same && strncmp(rlx_model_backend(r->m), "opencl", 6) == 0;
  if (r->shared_step && r->rank == r->leader)
    printf("train: the %d ranks compute in one context: gradients averaged on the device\n",
           r->size);
  free(keys);
  return rc;
}

/* This rank's batch of the step that starts at position off of the
 * epoch's order (DistributedSampler's cut: every size-th from rank), into
 * x and y; idx is room for its indices. Only these positions of the order
 * are computed: a rank joining mid-epoch has nothing to shuffle first. */
static int read_batch(const struct run *r, uint32_t *idx, size_t off, float *x, int32_t *y) {
  int rc = rlx_dataset_order(idx, (size_t)r->o.batch, r->ntrain, r->o.seed, (uint64_t)r->epoch,
                             off + (size_t)r->rank, (size_t)r->size);
  return rc != RLX_OK ? rc : rlx_dataset_batch(r->train, idx, r->o.batch, x, y);
}

/* --prefetch: is this step's batch the one moved ahead during the last? */
static int prefetched(const struct run *r) {
  return r->pre.valid && r->pre.m == r->m && r->pre.epoch == r->epoch && r->pre.off == r->off &&
         r->pre.size == r->size && r->pre.rank == r->rank;
}

/* A batch moved ahead for a step that will not come (an epoch's end, a
 * recovery, a new size): dropped, its upload waited for, before its host
 * buffer is filled again. */
static void drop_prefetched(struct run *r) {
  if (r->pre.valid && r->pre.m == r->m)
    rlx_model_prefetch(r->m, NULL, NULL, 0);
  r->pre.valid = 0;
}

int main(int argc, char **argv) {
  struct run r = {0};
  int prc = train_parse(argc, argv, &r.o);
  if (prc <= 0)
    return prc < 0 ? 2 : 0;
  if (r.o.wire)
    setenv("RLX_WIRE", r.o.wire, 1);
  /* --elastic: a rank's model computes in its own process unless asked
   * otherwise (RLX_DEVICE_SHARE), so that losing one rank loses no other's
   * model with it */
  if (r.o.elastic)
    setenv("RLX_DEVICE_SHARE", "0", 0);
  signal(SIGINT, on_int);
  signal(SIGHUP, on_hup);
  const char *join = getenv("RLX_JOIN");
  int joining = join && !strcmp(join, "1");
  if (joining) { /* (never the leader: it says nothing about the data) */
    r.leader = -1;
    prepare(&r);
    warm_up(&r);
    say_backend(&r, 1);
  }
  int rc = rlx_init(&argc, &argv);
  if (rc != RLX_OK) {
    fprintf(stderr, "train: rlx_init: %s: %s\n", rlx_strerror(rc), rlx_errmsg());
    return 1;
  }
  r.w = rlx_comm_world();
  r.rank = rlx_comm_rank(r.w);
  r.size = rlx_comm_size(r.w);
  r.leader = rlx_comm_leader(r.w);
  r.lr = (float)r.o.lr;
  r.tty = isatty(STDOUT_FILENO);
  r.epoch = r.off = r.step = 0; /* (a joiner takes the leader's in setup) */
  if (!joining)
    prepare(&r);
  setup(&r);

  size_t G = (size_t)r.o.batch * (size_t)r.size;
  long steps = (long)(r.ntrain / G);
  if (steps == 0) {
    fprintf(stderr, "train: batch %d x %d ranks is more than the %zu training examples\n",
            r.o.batch, r.size, r.ntrain);
    return 2;
  }
  int chunk = r.o.batch > 256 ? r.o.batch : 256;
  uint32_t *idx = malloc(sizeof(uint32_t) * chunk);
  /* The model's own buffers: pinned on a GPU, so batches and gradients
   * move by DMA. */
  int32_t *y = malloc(sizeof(int32_t) * chunk), *y2 = malloc(sizeof(int32_t) * chunk);
  if (!idx || !r.x || !y || !y2 || !r.grad || (r.o.grad_half && !r.grad16) ||
      (r.o.prefetch && !r.x2))
    fail(&r, "buffers", RLX_ERR_NOMEM);

  int stop = 0;
  double t_start = now_s(), t0 = t_start, st[3] = {0, 0, 0};
  r.t_start = t_start;
  /* One step at a time, as a small state machine, so that after a lost
   * rank (--elastic) every survivor can resume at the leader's position. */
  while (r.epoch < r.o.epochs) {
    /* examples per step: recomputed, since --elastic may shrink or grow
     * the ranks */
    G = (size_t)r.o.batch * (size_t)r.size;
    steps = (long)(r.ntrain / G);
    if ((size_t)r.off + G > r.ntrain || stop) { /* the epoch's end */
      drop_prefetched(&r); /* (evaluation fills r.x) */
      totals_drain(&r, st); /* (the one wait for the device's steps) */
      double secs = now_s() - t0, tl, ta;
      if ((rc = rlx_allreduce(RLX_IN_PLACE, st, 3, RLX_FLOAT64, RLX_SUM, r.w)) == RLX_OK)
        rc = evaluate(&r, &tl, &ta, r.x, y, idx, chunk);
      if (rc != RLX_OK) {
        if (!recover(&r, rc))
          fail(&r, "rlx_allreduce (epoch statistics)", rc);
        totals_reset(&r, st); /* the survivors' numbers from here on */
        continue;
      }
      FILE *lf = log_file(&r);
      if (lf) {
        fprintf(lf, "{\"type\":\"epoch\",\"epoch\":%ld,\"step\":%ld,\"loss\":%.6f,"
                    "\"train_acc\":%.4f,\"test_loss\":%.6f,\"test_acc\":%.4f,"
                    "\"samples_per_s\":%.1f,\"ranks\":%d,\"time_s\":%.3f}\n",
                r.epoch + 1, r.step, st[0] / st[2], 100.0 * st[1] / st[2], tl, ta, st[2] / secs,
                r.size, now_s() - t_start);
        fflush(lf);
      }
      if (r.rank == r.leader) {
        printf("%sepoch %ld/%d: loss %.4f, train %.2f%%, test loss %.4f, test %.2f%%, %.0f samples/s"
               " (%.1f s)%s\n", r.tty ? "\r" : "", r.epoch + 1, r.o.epochs, st[0] / st[2],
               100.0 * st[1] / st[2], tl, ta, st[2] / secs, secs,
               (size_t)r.off + G <= r.ntrain ? ", partial epoch" : "");
        fflush(stdout);
      }
      if (stop)
        break;
      r.epoch++;
      r.off = 0;
      totals_reset(&r, st);
      t0 = now_s();
      continue;
    }
    float loss;
    int ok, have_ctl = 0;
    int64_t ctl[3];
    float *x = r.x, *grad = r.grad, *xs[2] = {r.x, r.x2};
    int32_t *yb = y, *ys[2] = {y, y2};
    if (r.dev_data) { /* gathered where the model computes: x and yb NULL say so */
      device_batch(&r);
      x = NULL;
      yb = NULL;
    } else if (prefetched(&r)) { /* this batch is on its way to the device already */
      x = xs[r.pre.buf];
      yb = ys[r.pre.buf];
      r.pre.valid = 0;
    } else {
      drop_prefetched(&r);
      if ((rc = read_batch(&r, idx, (size_t)r.off, x, y)) != RLX_OK)
        fail(&r, "reading a batch", rc);
    }
    /* the next step's batch, if it is in this epoch, goes ahead now */
    if (r.x2 && !r.dev_data && (size_t)r.off + 2 * G <= r.ntrain && !(r.o.steps && r.step + 1 >= r.o.steps)) {
      int nb = x == r.x;
      if ((rc = read_batch(&r, idx, (size_t)r.off + G, xs[nb], ys[nb])) != RLX_OK ||
          (rc = rlx_model_prefetch(r.m, xs[nb], ys[nb], r.o.batch)) != RLX_OK)
        fail(&r, "moving the next batch ahead", rc);
      r.pre.m = r.m;
      r.pre.epoch = r.epoch;
      r.pre.off = r.off + (long)G;
      r.pre.size = r.size;
      r.pre.rank = r.rank;
      r.pre.buf = nb;
      r.pre.valid = 1;
    }
    /* Only the per-step log waits for the step's loss; otherwise the
     * model keeps the sums (on the device) until the epoch's end. */
    FILE *lf = log_file(&r);
    float *lp = lf ? &loss : NULL;
    int *okp = lf ? &ok : NULL;
    /* the step's control, exchanged while it computes (bucketed: in its
     * first bucket) */
    rlx_request_t *creq = NULL;
    int bucketed = r.o.bucket_kb > 0 && !r.o.grad_half;
    if (!bucketed && (rc = control_start(&r, ctl, &creq)) != RLX_OK) {
      step_failed(&r, &creq, rc, "rlx_iallreduce (control)", st);
      continue;
    }
    if (r.size == 1 && r.o.bucket_kb == 0) { /* nothing to average: it stays on the device */
      if ((rc = rlx_model_step(r.m, x, yb, r.o.batch, r.lr, lp, okp)) != RLX_OK)
        fail(&r, "computing the step", rc);
    } else if (r.shared_step) { /* averaged where every rank computes */
      if ((rc = rlx_model_step_shared(r.m, x, yb, r.o.batch, r.rank, r.size, r.lr, lp, okp)) !=
          RLX_OK)
        fail(&r, "computing the step with the ranks sharing the device", rc);
    } else if (bucketed) {
      if ((rc = bucketed_step(&r, x, yb, lp, okp, ctl)) != RLX_OK) {
        step_failed(&r, &creq, rc, "the gradient's buckets", st);
        continue; /* at the leader's position, on the survivors */
      }
      have_ctl = 1;
    } else if (r.o.grad_half) { /* 16 bits over the bus and on the wire */
      int bf = r.o.grad_half == 2;
      uint16_t *grad16 = r.grad16;
      if ((rc = rlx_model_grad_half(r.m, x, yb, r.o.batch, grad16, bf, lp, okp)) != RLX_OK)
        fail(&r, "computing gradients", rc);
      if ((rc = rlx_allreduce(RLX_IN_PLACE, grad16, r.np, bf ? RLX_BFLOAT16 : RLX_FLOAT16, RLX_AVG,
                              r.w)) != RLX_OK) {
        step_failed(&r, &creq, rc, "rlx_allreduce (gradients)", st);
        continue;
      }
      if ((rc = rlx_model_apply_half(r.m, grad16, bf, r.lr)) != RLX_OK)
        fail(&r, "applying the update", rc);
    } else {
      if ((rc = rlx_model_grad(r.m, x, yb, r.o.batch, grad, lp, okp)) != RLX_OK)
        fail(&r, "computing gradients", rc);
      if ((rc = rlx_allreduce(RLX_IN_PLACE, grad, r.np, RLX_FLOAT32, RLX_AVG, r.w)) != RLX_OK) {
        step_failed(&r, &creq, rc, "rlx_allreduce (gradients)", st);
        continue; /* at the leader's position, on the survivors */
      }
      if ((rc = rlx_model_apply(r.m, grad, r.lr)) != RLX_OK)
        fail(&r, "applying the update", rc);
    }
    if (lp) {
      st[0] += (double)loss * r.o.batch;
      st[1] += ok;
    }
    st[2] += r.o.batch;
    r.step++;
    r.off += (long)G;
    if (lf) /* this rank's batch: the whole step's loss would cost an allreduce */
      fprintf(lf, "{\"type\":\"step\",\"epoch\":%ld,\"step\":%ld,\"loss\":%.6f,\"time_s\":%.6f}\n",
              r.epoch + 1, r.step, (double)loss, now_s() - r.t_start);
    int c = have_ctl ? control_act(&r, ctl, r.step) : control_finish(&r, &creq, ctl, r.step);
    if (c < 0) {
      totals_reset(&r, st);
      continue;
    }
    stop = c || (r.o.steps && r.step >= r.o.steps);
    progress(&r, (int)r.epoch, (long)((size_t)r.off / G) - 1, steps, st);
  }
  long step = r.step;
  if (stop_asked) /* every rank says where it stopped: the same step */
    printf("train: rank %d stopped after step %ld\n", r.rank, step);
  if (r.rank == r.leader) {
    if (stop_asked || stop)
      printf("train: stopped after step %ld%s\n", step,
             r.o.steps && step >= r.o.steps ? " (--steps)" : " (interrupted; every rank stopped after this step)");
    printf("train: done in %.1f s\n", now_s() - t_start);
  }
  if (r.o.dump_params && r.rank == r.leader)
    dump(&r);
  if (r.log)
    fclose(r.log);
  rlx_model_free(&r.m);
  rlx_dataset_free(&r.train);
  rlx_dataset_free(&r.test);
  free(r.state);
  free(r.perm);
  free(idx);
  free(y);
  free(y2);
  if (r.w != rlx_comm_world()) /* shrunk by --elastic */
    rlx_comm_free(&r.w);
  rc = rlx_finalize();
  return rc == RLX_OK ? 0 : 1;
}
