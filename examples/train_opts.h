/* train's command line. */
#ifndef TRAIN_OPTS_H
#define TRAIN_OPTS_H

#include <stdint.h>

#define TRAIN_MAX_HIDDEN 8

struct train_opts {
  const char *backend;     /* --backend: auto, cpu, opencl, opencl:N */
  int epochs;              /* --epochs */
  int batch;               /* --batch, per rank */
  double lr;               /* --lr */
  double momentum;         /* --momentum */
  int hidden[TRAIN_MAX_HIDDEN], nhidden; /* --hidden 256[,128...] */
  uint64_t seed;           /* --seed */
  const char *wire;        /* --wire f32|f16|bf16 (sets RLX_WIRE) */
  int grad_half;           /* --grad-precision: 0 f32, 1 f16, 2 bf16 (rounded on the device) */
  long bucket_kb;          /* --bucket-kb: gradient buckets allreduced while backward runs (0: one) */
  int prefetch;            /* --prefetch: the next batch moves to the device during this step (1) */
  int data_on_device;      /* --data-on-device: -1 auto, 0 never, 1 always (or fail) */
  const char *data;        /* --data DIR */
  int synthetic;           /* --synthetic */
  long steps;              /* --steps: stop after this many (0 = all epochs) */
  long train_limit;        /* --train-limit: use the first N training examples */
  const char *lr_file;     /* --lr-file F, re-read by the leader on SIGHUP */
  const char *dump_params; /* --dump-params F: the leader writes the final parameters */
  int elastic;             /* --elastic: survive a lost rank (rlxrun --enable-recovery) */
  const char *log_json;    /* --log-json F: the leader writes a JSON line per step and epoch */
};

/* Fill o from argv; on a bad flag print why and the usage to stderr and
 * return -1 (0 when --help printed the usage). */
int train_parse(int argc, char **argv, struct train_opts *o);

#endif
