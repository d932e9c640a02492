/* step_shared: how fast models that share one device's context step
 * together in one process, against one model alone: the in-process part
 * of two ranks on one GPU (no sockets, no serving process, no train
 * loop). Each of --members threads makes a model (one process: one
 * context), attaches a synthetic training set on the device and runs
 * --steps steps on gathered batches, loss and accuracy kept on the device:
 *   members 1:            rlx_model_step
 *   members N, --own 0:   rlx_model_step_shared (averaged on the device)
 *   members N, --own 1:   rlx_model_step each (no average: the members
 *                         only contend for the driver and the device)
 *   members N, --serial 1: as --own 1 but from one thread, each member's
 *                         step in turn (no thread contends with another)
 * Prints one line: members, samples/s of them all, us per step.
 * usage: step_shared [--backend B] [--hidden 256[,..]] [--batch N]
 *                    [--members N] [--own 0|1] [--serial 0|1] [--steps N] [--warmup N] */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <rlxcoll/compute.h>
#include "mlp_sizes.h"

static const char *backend = "auto", *hidden = "256";
static int batch = 64, members = 1, own = 0, serial = 0, steps = 2000, warmup = 200;
static pthread_barrier_t start, stop;
static double t_start, t_stop;

static double now_us(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}

static int fail(const char *what) {
  fprintf(stderr, "step_shared: %s: %s\n", what, rlx_errmsg());
  exit(1);
}

static int step(rlx_model_t *m, rlx_dataset_t *ds, int index, int s) {
  size_t first = ((size_t)s * (size_t)members + (size_t)index) * (size_t)batch % ds->count;
  if (first + (size_t)batch > ds->count)
    first = 0;
  if (rlx_model_data_batch(m, first, 1, batch) != RLX_OK)
    return fail("rlx_model_data_batch");
  int rc = members > 1 && !own
               ? rlx_model_step_shared(m, NULL, NULL, batch, index, members, 0.01f, NULL, NULL)
               : rlx_model_step(m, NULL, NULL, batch, 0.01f, NULL, NULL);
  return rc != RLX_OK ? fail("step") : 0;
}

struct member {
  int index;
  rlx_model_t *m;
  rlx_dataset_t *ds;
  uint32_t *order;
};

static void make(struct member *me) {
  int sizes[18], ns = mlp_sizes(hidden, sizes);
  rlx_model_desc_t d = {.nsizes = ns, .sizes = sizes, .max_batch = batch, .seed = 1,
                        .momentum = 0.9f, .device = backend, .local_rank = -1};
  if (rlx_model_create(&d, &me->m) != RLX_OK)
    fail("rlx_model_create");
  if (rlx_model_fallback(me->m))
    fprintf(stderr, "step_shared: %s\n", rlx_model_fallback(me->m));
  size_t count = (size_t)batch * (size_t)members * 16;
  if (rlx_dataset_synthetic(count, 784, 10, 3, "train", &me->ds) != RLX_OK)
    fail("rlx_dataset_synthetic");
  me->order = malloc(sizeof(uint32_t) * count);
  for (size_t i = 0; me->order && i < count; i++)
    me->order[i] = (uint32_t)i;
  if (!me->order || rlx_model_data_attach(me->m, me->ds, count) != RLX_OK ||
      rlx_model_data_order(me->m, me->order, count) != RLX_OK)
    fail("the training set on the device");
}

static void totals(struct member *me) {
  double loss;
  long correct;
  if (rlx_model_totals(me->m, &loss, &correct) != RLX_OK) /* (waits for every step queued) */
    fail("rlx_model_totals");
}

static void report(struct member *me) {
  printf("backend=\"%s\" model=784-%s-10 batch=%d members=%d mode=%s step_us=%.1f "
         "samples_per_s=%.0f\n", rlx_model_backend(me->m), hidden, batch, members,
         members == 1 ? "alone" : serial ? "serial" : own ? "own" : "shared",
         (t_stop - t_start) / steps, (double)batch * members * steps / ((t_stop - t_start) * 1e-6));
}

static void unmake(struct member *me) {
  rlx_model_free(&me->m);
  rlx_dataset_free(&me->ds);
  free(me->order);
}

static void *member(void *arg) {
  struct member *me = arg;
  make(me);
  for (int s = 0; s < warmup; s++)
    step(me->m, me->ds, me->index, s);
  totals(me);
  pthread_barrier_wait(&start);
  if (me->index == 0)
    t_start = now_us();
  for (int s = 0; s < steps; s++)
    step(me->m, me->ds, me->index, warmup + s);
  totals(me);
  pthread_barrier_wait(&stop);
  if (me->index == 0) {
    t_stop = now_us();
    report(me);
  }
  pthread_barrier_wait(&start); /* (the others free theirs after the time is taken) */
  unmake(me);
  return NULL;
}

/* --serial 1: every member's step in turn, from this thread. */
static void serially(struct member *all) {
  for (int i = 0; i < members; i++)
    make(&all[i]);
  for (int s = 0; s < warmup; s++)
    for (int i = 0; i < members; i++)
      step(all[i].m, all[i].ds, i, s);
  for (int i = 0; i < members; i++)
    totals(&all[i]);
  t_start = now_us();
  for (int s = 0; s < steps; s++)
    for (int i = 0; i < members; i++)
      step(all[i].m, all[i].ds, i, warmup + s);
  for (int i = 0; i < members; i++)
    totals(&all[i]);
  t_stop = now_us();
  report(&all[0]);
  for (int i = 0; i < members; i++)
    unmake(&all[i]);
}

int main(int argc, char **argv) {
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!strcmp(argv[i], "--backend")) backend = argv[i + 1];
    else if (!strcmp(argv[i], "--hidden")) hidden = argv[i + 1];
    else if (!strcmp(argv[i], "--batch")) batch = atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "--members")) members = atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "--own")) own = atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "--serial")) serial = own = atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "--steps")) steps = atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "--warmup")) warmup = atoi(argv[i + 1]);
    else { fprintf(stderr, "step_shared: unknown flag %s\n", argv[i]); return 2; }
  }
  if (batch < 1 || members < 1 || members > 64 || steps < 1 || warmup < 0) {
    fprintf(stderr, "step_shared: bad numbers\n");
    return 2;
  }
  pthread_t th[64];
  struct member all[64];
  for (int i = 0; i < members; i++)
    all[i] = (struct member){.index = i};
  if (serial) {
    serially(all);
    return 0;
  }
  pthread_barrier_init(&start, NULL, (unsigned)members);
  pthread_barrier_init(&stop, NULL, (unsigned)members);
  for (int i = 0; i < members; i++)
    if (pthread_create(&th[i], NULL, member, &all[i]) != 0)
      return 1;
  for (int i = 0; i < members; i++)
    pthread_join(th[i], NULL);
  return 0;
}
