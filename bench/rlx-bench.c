/* rlx-bench: an nccl-tests style sweep of one collective over sizes.
 *   rlxrun -n 4 bench/rlx-bench -C allreduce -b 8 -e 64M -f 2 [-n iters]
 *     [-w warmup] [-c 0|1] [-d float32] [-o sum] [-r root] [--json]
 * Sizes are bytes per rank buffer as in nccl-tests (allgather: the whole
 * output; reduce_scatter: the whole input). busbw applies nccl-tests'
 * factors: 2(n-1)/n for allreduce, (n-1)/n for allgather and
 * reduce_scatter, 1 for bcast and reduce. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <rlxcoll/rlxcoll.h>

enum coll { C_ALLREDUCE, C_REDUCE, C_BCAST, C_ALLGATHER, C_REDUCE_SCATTER, C_IALLREDUCE };
static const char *const coll_names[] = {"allreduce", "reduce", "bcast", "allgather",
                                         "reduce_scatter", "iallreduce"};

static double now_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static size_t parse_size(const char *s) {
  char *end;
  double v = strtod(s, &end);
  switch (*end) {
  case 'K': case 'k': v *= 1024; break;
  case 'M': case 'm': v *= 1024 * 1024; break;
  case 'G': case 'g': v *= 1024.0 * 1024 * 1024; break;
  default: break;
  }
  return (size_t)v;
}

static void usage(void) {
  fprintf(stderr, "usage: rlx-bench [-C allreduce|reduce|bcast|allgather|reduce_scatter|iallreduce]\n"
                  "  [-b min] [-e max] [-f factor] [-n iters] [-w warmup] [-c 0|1]\n"
                  "  [-d dtype] [-o op] [-r root] [--json]\n");
}

static int find(const char *s, const char *const *names, int n) {
  for (int i = 0; i < n; i++)
    if (strcmp(s, names[i]) == 0)
      return i;
  return -1;
}

/* Small integers, so every reduction is exact in every type. */
static void fill(void *buf, size_t count, rlx_dtype_t dt, int rank, size_t base) {
  for (size_t i = 0; i < count; i++) {
    int v = (int)((rank + base + i) % 5) + 1;
    switch (dt) {
    case RLX_INT8: ((int8_t *)buf)[i] = (int8_t)v; break;
    case RLX_UINT8: ((uint8_t *)buf)[i] = (uint8_t)v; break;
    case RLX_INT32: ((int32_t *)buf)[i] = v; break;
    case RLX_UINT32: ((uint32_t *)buf)[i] = (uint32_t)v; break;
    case RLX_INT64: ((int64_t *)buf)[i] = v; break;
    case RLX_UINT64: ((uint64_t *)buf)[i] = (uint64_t)v; break;
    case RLX_FLOAT32: ((float *)buf)[i] = (float)v; break;
    case RLX_FLOAT64: ((double *)buf)[i] = v; break;
    default: ((uint16_t *)buf)[i] = 0; break; /* half types: zeros stay exact */
    }
  }
}

static double get(const void *buf, size_t i, rlx_dtype_t dt) {
  switch (dt) {
  case RLX_INT8: return ((const int8_t *)buf)[i];
  case RLX_UINT8: return ((const uint8_t *)buf)[i];
  case RLX_INT32: return ((const int32_t *)buf)[i];
  case RLX_UINT32: return ((const uint32_t *)buf)[i];
  case RLX_INT64: return (double)((const int64_t *)buf)[i];
  case RLX_UINT64: return (double)((const uint64_t *)buf)[i];
  case RLX_FLOAT32: return ((const float *)buf)[i];
  case RLX_FLOAT64: return ((const double *)buf)[i];
  default: return ((const uint16_t *)buf)[i];
  }
}

static double expect(rlx_dtype_t dt, rlx_op_t op, int nranks, size_t idx) {
  if (dt == RLX_FLOAT16 || dt == RLX_BFLOAT16)
    return 0;
  double acc = op == RLX_PROD ? 1 : op == RLX_MIN ? 1e9 : op == RLX_MAX ? -1e9 : 0;
  for (int r = 0; r < nranks; r++) {
    double v = (double)((r + idx) % 5) + 1;
    acc = op == RLX_PROD ? acc * v : op == RLX_MIN ? (v < acc ? v : acc)
          : op == RLX_MAX ? (v > acc ? v : acc) : acc + v;
  }
  if (dt == RLX_INT8 && op == RLX_PROD)
    acc = (double)(int8_t)(int64_t)acc;
  if (dt == RLX_UINT8 && op == RLX_PROD)
    acc = (double)(uint8_t)(int64_t)acc;
  return op == RLX_AVG ? acc / nranks : acc;
}

int main(int argc, char **argv) {
  static const char *const dtypes[] = {"int8",    "uint8",    "int32",   "uint32",  "int64",
                                       "uint64",  "float16",  "bfloat16", "float32", "float64"};
  static const char *const ops[] = {"sum", "prod", "min", "max", "avg"};
  size_t minb = 8, maxb = 64u << 20;
  double factor = 2;
  int iters = 0, warm = -1, check = 1, json = 0, root = 0, c = C_ALLREDUCE;
  rlx_dtype_t dt = RLX_FLOAT32;
  rlx_op_t op = RLX_SUM;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (strcmp(a, "--json") == 0) { json = 1; continue; }
    if (v == NULL) { usage(); return 2; }
    i++;
    if (strcmp(a, "-b") == 0) minb = parse_size(v);
    else if (strcmp(a, "-e") == 0) maxb = parse_size(v);
    else if (strcmp(a, "-f") == 0) factor = atof(v);
    else if (strcmp(a, "-n") == 0) iters = atoi(v);
    else if (strcmp(a, "-w") == 0) warm = atoi(v);
    else if (strcmp(a, "-c") == 0) check = atoi(v);
    else if (strcmp(a, "-r") == 0) root = atoi(v);
    else if (strcmp(a, "-C") == 0) c = find(v, coll_names, 6);
    else if (strcmp(a, "-d") == 0) dt = (rlx_dtype_t)find(v, dtypes, 10);
    else if (strcmp(a, "-o") == 0) op = (rlx_op_t)find(v, ops, 5);
    else { usage(); return 2; }
  }
  if (c < 0 || (int)dt < 0 || (int)op < 0 || factor <= 1 || minb == 0 || maxb < minb) {
    usage();
    return 2;
  }
  int rc = rlx_init(&argc, &argv);
  if (rc != RLX_OK) {
    fprintf(stderr, "rlx-bench: rlx_init: %s\n", rlx_errmsg());
    return 1;
  }
  rlx_comm_t *w = rlx_comm_world();
  int rank = rlx_comm_rank(w), n = rlx_comm_size(w);
  size_t es = rlx_dtype_size(dt);
  char *in = malloc(maxb + 64), *out = malloc(maxb + 64);
  double factor_bus = c == C_ALLREDUCE || c == C_IALLREDUCE ? 2.0 * (n - 1) / n
                      : c == C_ALLGATHER || c == C_REDUCE_SCATTER ? (double)(n - 1) / n
                                                                   : 1.0;
  if (rank == 0) {
    if (json)
      printf("[\n");
    else
      printf("# rlx-bench %s, %d ranks, %s %s\n#%11s %12s %8s %6s %5s %11s %8s %8s %7s\n",
             coll_names[c], n, dtypes[dt], ops[op], "size", "count", "type", "redop", "root",
             "time(us)", "algbw", "busbw", "#wrong");
  }
  int first = 1;
  long total_wrong = 0;
  for (double sz = (double)minb; sz <= (double)maxb; sz *= factor) {
    size_t bytes = (size_t)sz / es * es, count = bytes / es, per = count;
    if (c == C_ALLGATHER || c == C_REDUCE_SCATTER)
      per = count / (size_t)n; /* elements per rank block */
    if (per == 0 && (c == C_ALLGATHER || c == C_REDUCE_SCATTER))
      continue;
    long it = iters > 0 ? iters : (long)((256u << 20) / (bytes + 1));
    if (iters <= 0)
      it = it > 1000 ? 1000 : it < 5 ? 5 : it;
    long wu = warm >= 0 ? warm : it / 10 + 2;
    fill(in, c == C_REDUCE_SCATTER ? per * (size_t)n : c == C_ALLGATHER ? per : count, dt, rank, 0);
    for (long k = -wu; k < it; k++) {
      if (k == 0) {
        rlx_barrier(w);
        /* time from here */
      }
      static double t0;
      if (k == 0)
        t0 = now_us();
      rlx_request_t *req;
      switch (c) {
      case C_ALLREDUCE: rc = rlx_allreduce(in, out, count, dt, op, w); break;
      case C_IALLREDUCE:
        rc = rlx_iallreduce(in, out, count, dt, op, w, &req);
        if (rc == RLX_OK)
          rc = rlx_wait(&req);
        break;
      case C_REDUCE: rc = rlx_reduce(in, out, count, dt, op, root, w); break;
      case C_BCAST: rc = rlx_bcast(rank == root ? in : out, count, dt, root, w); break;
      case C_ALLGATHER: rc = rlx_allgather(in, out, per, dt, w); break;
      default: rc = rlx_reduce_scatter(in, out, per, dt, op, w); break;
      }
      if (rc != RLX_OK) {
        fprintf(stderr, "rlx-bench: rank %d: %s\n", rank, rlx_errmsg());
        return 1;
      }
      if (k == it - 1) {
        double us = (now_us() - t0) / (double)it, worst = us;
        rlx_allreduce(&us, &worst, 1, RLX_FLOAT64, RLX_MAX, w);
        us = worst;
        long wrong = 0;
        if (check) {
          /* The last call's output, against what it must be. */
          if (c == C_BCAST) {
            if (rank != root)
              for (size_t i = 0; i < count; i++)
                wrong += get(out, i, dt) != expect(dt, RLX_MAX, 1, i + (size_t)root) ? 1 : 0;
          } else if (c == C_ALLGATHER) {
            for (int r = 0; r < n; r++)
              for (size_t i = 0; i < per; i++)
                wrong += get(out, (size_t)r * per + i, dt) != expect(dt, RLX_MAX, 1, i + (size_t)r);
          } else if (c == C_REDUCE_SCATTER) {
            for (size_t i = 0; i < per; i++)
              wrong += get(out, i, dt) != expect(dt, op, n, (size_t)rank * per + i);
          } else if (c != C_REDUCE || rank == root) {
            for (size_t i = 0; i < count; i++)
              wrong += get(out, i, dt) != expect(dt, op, n, i);
          }
          long all = wrong;
          rlx_allreduce(&wrong, &all, 1, RLX_INT64, RLX_SUM, w);
          wrong = all;
        }
        total_wrong += wrong;
        double algbw = (double)bytes / us / 1e3, busbw = algbw * factor_bus;
        if (rank == 0) {
          if (json)
            printf("%s  {\"collective\": \"%s\", \"nranks\": %d, \"size\": %zu, \"count\": %zu, "
                   "\"type\": \"%s\", \"redop\": \"%s\", \"root\": %d, \"time_us\": %.3f, "
                   "\"algbw\": %.4f, \"busbw\": %.4f, \"wrong\": %ld}",
                   first ? "" : ",\n", coll_names[c], n, bytes, count, dtypes[dt], ops[op],
                   root, us, algbw, busbw, check ? wrong : -1);
          else
            printf(" %11zu %12zu %8s %6s %5d %11.2f %8.3f %8.3f %7ld\n", bytes, count, dtypes[dt],
                   ops[op], root, us, algbw, busbw, check ? wrong : -1L);
          fflush(stdout);
        }
        first = 0;
      }
    }
  }
  if (rank == 0 && json)
    printf("\n]\n");
  free(in);
  free(out);
  rlx_finalize();
  return total_wrong ? 1 : 0;
}
