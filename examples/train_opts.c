/* train's flags, checked: a bad value is a message and exit code 2. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "train_opts.h"

static const char usage[] =
    "usage: train [--backend auto|cpu|gpu|opencl|opencl:N] [--epochs N] [--batch B]\n"
    "             [--lr F] [--momentum F] [--hidden N[,N...]] [--seed N]\n"
    "             [--wire f32|f16|bf16] [--data DIR] [--synthetic] [--steps N]\n"
    "             [--train-limit N] [--lr-file F] [--dump-params F] [--elastic]\n"
    "             [--log-json F] [--grad-precision f32|f16|bf16] [--bucket-kb K]\n"
    "             [--prefetch 0|1] [--data-on-device auto|0|1]\n"
    "Data-parallel training of an MLP on Fashion-MNIST; see train(1).\n";

static int bad(const char *flag, const char *val, const char *want) {
  fprintf(stderr, "train: %s '%s': %s\n%s", flag, val, want, usage);
  return -1;
}

static int num(const char *flag, const char *s, double lo, double hi, double *out) {
  char *end;
  errno = 0;
  double v = strtod(s, &end);
  if (errno || end == s || *end || !(v >= lo && v <= hi)) {
    char want[96];
    snprintf(want, sizeof want, "want a number from %g to %g", lo, hi);
    return bad(flag, s, want);
  }
  *out = v;
  return 0;
}

static int integer(const char *flag, const char *s, long lo, long hi, long *out) {
  double v;
  if (num(flag, s, (double)lo, (double)hi, &v))
    return -1;
  if (v != (double)(long)v)
    return bad(flag, s, "want a whole number");
  *out = (long)v;
  return 0;
}

static int hidden_list(const char *s, struct train_opts *o) {
  char buf[256];
  snprintf(buf, sizeof buf, "%s", s);
  o->nhidden = 0;
  if (!strcmp(s, "none"))
    return 0;
  for (char *save, *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
    long v;
    if (o->nhidden == TRAIN_MAX_HIDDEN)
      return bad("--hidden", s, "at most 8 hidden layers");
    if (integer("--hidden", t, 1, 65536, &v))
      return -1;
    o->hidden[o->nhidden++] = (int)v;
  }
  return o->nhidden ? 0 : bad("--hidden", s, "want sizes like 256 or 1024,1024, or none");
}

int train_parse(int argc, char **argv, struct train_opts *o) {
  static const struct option longs[] = {
      {"backend", required_argument, 0, 'b'},  {"epochs", required_argument, 0, 'e'},
      {"batch", required_argument, 0, 'B'},    {"lr", required_argument, 0, 'l'},
      {"momentum", required_argument, 0, 'm'}, {"hidden", required_argument, 0, 'H'},
      {"seed", required_argument, 0, 's'},     {"wire", required_argument, 0, 'w'},
      {"data", required_argument, 0, 'd'},     {"synthetic", no_argument, 0, 'S'},
      {"steps", required_argument, 0, 'n'},    {"train-limit", required_argument, 0, 't'},
      {"lr-file", required_argument, 0, 'f'},  {"dump-params", required_argument, 0, 'p'},
      {"elastic", no_argument, 0, 'E'},        {"help", no_argument, 0, 'h'},
      {"log-json", required_argument, 0, 'j'}, {"grad-precision", required_argument, 0, 'g'},
      {"bucket-kb", required_argument, 0, 'K'}, {"prefetch", required_argument, 0, 'P'},
      {"data-on-device", required_argument, 0, 'D'},
      {0, 0, 0, 0}};
  *o = (struct train_opts){.backend = NULL, .epochs = 3, .batch = 64, .lr = 0.05,
                           .momentum = 0.9, .hidden = {256}, .nhidden = 1, .seed = 42,
                           .data = "/usr/share/datasets/fashion-mnist", .prefetch = 1, .data_on_device = -1};
  long v;
  double d;
  int c;
  opterr = 0;
  while ((c = getopt_long(argc, argv, "", longs, NULL)) != -1) {
    switch (c) {
    case 'b':
      o->backend = optarg;
      break;
    case 'e':
      if (integer("--epochs", optarg, 1, 100000, &v))
        return -1;
      o->epochs = (int)v;
      break;
    case 'B':
      if (integer("--batch", optarg, 1, 65536, &v))
        return -1;
      o->batch = (int)v;
      break;
    case 'l':
      if (num("--lr", optarg, 0, 1000, &o->lr))
        return -1;
      break;
    case 'm':
      if (num("--momentum", optarg, 0, 0.999999, &o->momentum))
        return -1;
      break;
    case 'H':
      if (hidden_list(optarg, o))
        return -1;
      break;
    case 's':
      if (num("--seed", optarg, 0, 9007199254740992.0, &d))
        return -1;
      if (d != (double)(uint64_t)d)
        return bad("--seed", optarg, "want a whole number");
      o->seed = (uint64_t)d;
      break;
    case 'w':
      if (strcmp(optarg, "f32") && strcmp(optarg, "f16") && strcmp(optarg, "bf16"))
        return bad("--wire", optarg, "want f32, f16 or bf16");
      o->wire = optarg;
      break;
    case 'K':
      if (num("--bucket-kb", optarg, 0, 1 << 20, &d) != 0)
        return -1;
      o->bucket_kb = (long)d;
      break;
    case 'P':
      if (strcmp(optarg, "0") && strcmp(optarg, "1"))
        return bad("--prefetch", optarg, "want 0 or 1");
      o->prefetch = optarg[0] == '1';
      break;
    case 'D':
      if (strcmp(optarg, "auto") && strcmp(optarg, "0") && strcmp(optarg, "1"))
        return bad("--data-on-device", optarg, "want auto, 0 or 1");
      o->data_on_device = !strcmp(optarg, "auto") ? -1 : optarg[0] == '1';
      break;
    case 'g':
      if (strcmp(optarg, "f32") && strcmp(optarg, "f16") && strcmp(optarg, "bf16"))
        return bad("--grad-precision", optarg, "want f32, f16 or bf16");
      o->grad_half = !strcmp(optarg, "f16") ? 1 : !strcmp(optarg, "bf16") ? 2 : 0;
      break;
    case 'd':
      o->data = optarg;
      break;
    case 'S':
      o->synthetic = 1;
      break;
    case 'n':
      if (integer("--steps", optarg, 1, 1L << 40, &o->steps))
        return -1;
      break;
    case 't':
      if (integer("--train-limit", optarg, 1, 1L << 24, &o->train_limit))
        return -1;
      break;
    case 'f':
      o->lr_file = optarg;
      break;
    case 'p':
      o->dump_params = optarg;
      break;
    case 'E':
      o->elastic = 1;
      break;
    case 'j':
      if (!*optarg)
        return bad("--log-json", optarg, "want a file name");
      o->log_json = optarg;
      break;
    case 'h':
      fputs(usage, stdout);
      return 0;
    default:
      fprintf(stderr, "train: unknown or incomplete option '%s'\n%s", argv[optind - 1], usage);
      return -1;
    }
  }
  if (optind < argc) {
    fprintf(stderr, "train: unexpected argument '%s'\n%s", argv[optind], usage);
    return -1;
  }
  return 1;
}
