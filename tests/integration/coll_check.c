/* coll_check: run under rlxrun; checks allreduce (every dtype x op, several
 * counts, in place and not), bcast and barrier against references computed
 * here, and that every rank holds bitwise the same result.
 *   coll_check [--counts a,b,c] [--dtypes a,b] [--stress N] [--random] [--big-all] [--exchanges]
 * --dtypes keeps only the named dtypes (the forced-algorithm runs: one of
 * each element size is enough there, the algorithms never look at more);
 * --exchanges only gather, scatter, all-to-all and the uneven gatherv,
 * scatterv, allgatherv and alltoallv, for runs about their paths alone.
 * Inputs are small integers, so every reduction order gives the exact
 * reference; --random adds non-integer floats, where only agreement across
 * ranks (and closeness to the reference) can be asked. */
#include <malloc.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <rlxcoll/rlxcoll.h>
#include "coll/coll.h"

static int rank, size, failures, checks;

#define FAIL(...)                                                                                  \
  do {                                                                                             \
    if (failures++ < 10) {                                                                         \
      fprintf(stderr, "coll_check: rank %d: ", rank);                                              \
      fprintf(stderr, __VA_ARGS__);                                                                \
      fprintf(stderr, "\n");                                                                       \
    }                                                                                              \
  } while (0)

/* The integer each rank contributes at index i for this op. */
static int value(int r, size_t i, rlx_op_t op) {
  unsigned h = (unsigned)(r * 2654435761u) ^ (unsigned)(i * 40503u);
  h ^= h >> 13;
  if (op == RLX_PROD) {
    static const int v[3] = {1, -1, 2};
    return v[h % 3];
  }
  return (int)(h % 7) - 3;
}

static int is_unsigned(rlx_dtype_t dt) { return dt == RLX_UINT8 || dt == RLX_UINT32 || dt == RLX_UINT64; }

static void store(void *buf, size_t i, rlx_dtype_t dt, double v) {
  switch (dt) {
  case RLX_INT8: ((int8_t *)buf)[i] = (int8_t)(int64_t)v; break;
  case RLX_UINT8: ((uint8_t *)buf)[i] = (uint8_t)(int64_t)v; break;
  case RLX_INT32: ((int32_t *)buf)[i] = (int32_t)(int64_t)v; break;
  case RLX_UINT32: ((uint32_t *)buf)[i] = (uint32_t)(int64_t)v; break;
  case RLX_INT64: ((int64_t *)buf)[i] = (int64_t)v; break;
  case RLX_UINT64: ((uint64_t *)buf)[i] = (uint64_t)(int64_t)v; break;
  case RLX_FLOAT16: ((uint16_t *)buf)[i] = rlx__f32_to_f16((float)v); break;
  case RLX_BFLOAT16: ((uint16_t *)buf)[i] = rlx__f32_to_bf16((float)v); break;
  case RLX_FLOAT32: ((float *)buf)[i] = (float)v; break;
  case RLX_FLOAT64: ((double *)buf)[i] = v; break;
  default: break;
  }
}

/* buf[i] = v(i) for i in [0, n), converted as store() does, with the type
 * switch outside the loop (store() per element was this program's hottest
 * function). */
#define FILL_TYPED(buf, n, dt, v)                                                                  \
  do {                                                                                             \
    switch (dt) {                                                                                  \
    case RLX_INT8: for (size_t i = 0; i < (n); i++) ((int8_t *)(buf))[i] = (int8_t)(int64_t)(v); break; \
    case RLX_UINT8: for (size_t i = 0; i < (n); i++) ((uint8_t *)(buf))[i] = (uint8_t)(int64_t)(v); break; \
    case RLX_INT32: for (size_t i = 0; i < (n); i++) ((int32_t *)(buf))[i] = (int32_t)(int64_t)(v); break; \
    case RLX_UINT32: for (size_t i = 0; i < (n); i++) ((uint32_t *)(buf))[i] = (uint32_t)(int64_t)(v); break; \
    case RLX_INT64: for (size_t i = 0; i < (n); i++) ((int64_t *)(buf))[i] = (int64_t)(v); break; \
    case RLX_UINT64: for (size_t i = 0; i < (n); i++) ((uint64_t *)(buf))[i] = (uint64_t)(int64_t)(v); break; \
    case RLX_FLOAT32: for (size_t i = 0; i < (n); i++) ((float *)(buf))[i] = (float)(v); break; \
    case RLX_FLOAT64: for (size_t i = 0; i < (n); i++) ((double *)(buf))[i] = (double)(v); break; \
    default: for (size_t i = 0; i < (n); i++) store((buf), i, (dt), (double)(v)); break;          \
    }                                                                                              \
  } while (0)

/* This rank's inputs for op. */
static void fill_inputs(void *buf, size_t n, rlx_dtype_t dt, rlx_op_t op) {
  FILL_TYPED(buf, n, dt, value(rank, i, op));
}

/* The ranks' values at index i folded with op, exactly: sums and products
 * of these small integers fit in int64 (store() then wraps them to the
 * type's width, as the type's own arithmetic would); min and max compare as
 * signed or as unsigned integers (for every unsigned width -1 is the
 * largest value, so one order serves them all) and keep the value chosen.
 * Cached per (op, order) and grown on demand: each check then costs
 * O(count), not O(ranks x count), which made this program, not the library,
 * the slow part of the collectives tests. */
static int64_t *fold_cache[RLX_OP_COUNT][2];
static size_t fold_len[RLX_OP_COUNT][2];

static int64_t fold_one(size_t i, rlx_op_t op, int uns) {
  int64_t acc = value(0, i, op);
  for (int r = 1; r < size; r++) {
    int64_t v = value(r, i, op);
    switch (op) {
    case RLX_SUM: case RLX_AVG: acc += v; break;
    case RLX_PROD: acc *= v; break;
    case RLX_MIN: acc = uns ? ((uint64_t)v < (uint64_t)acc ? v : acc) : (v < acc ? v : acc); break;
    case RLX_MAX: acc = uns ? ((uint64_t)v > (uint64_t)acc ? v : acc) : (v > acc ? v : acc); break;
    case RLX_BAND: acc &= v; break; /* (two's complement: the type's low bits are right) */
    case RLX_BOR: acc |= v; break;
    case RLX_BXOR: acc ^= v; break;
    default: break;
    }
  }
  return acc;
}

static const int64_t *folded(size_t n, rlx_op_t op, int uns) {
  if (fold_len[op][uns] < n) {
    int64_t *f = realloc(fold_cache[op][uns], n * sizeof(*f));
    if (f == NULL) {
      fprintf(stderr, "coll_check: out of memory\n");
      exit(2);
    }
    for (size_t i = fold_len[op][uns]; i < n; i++)
      f[i] = fold_one(i, op, uns);
    fold_cache[op][uns] = f;
    fold_len[op][uns] = n;
  }
  return fold_cache[op][uns];
}

/* Reference for elements [0, n): integer ops in the type's own (wrapping)
 * width; AVG divides in the float type's own precision. */
static void reference(void *ref, size_t n, rlx_dtype_t dt, rlx_op_t op) {
  int is_float = rlx__dtype_is_float(dt);
  const int64_t *f = folded(n, op, !is_float && is_unsigned(dt));
  if (op != RLX_AVG) {
    FILL_TYPED(ref, n, dt, f[i]);
    return;
  }
  for (size_t i = 0; i < n; i++) {
    double acc = (double)f[i];
    if (dt == RLX_FLOAT64)
      acc = acc / size;
    else if (dt == RLX_FLOAT32)
      acc = (double)((float)acc / (float)size);
    else if (dt == RLX_FLOAT16)
      acc = rlx__f16_to_f32(rlx__f32_to_f16((float)acc / (float)size));
    else
      acc = rlx__bf16_to_f32(rlx__f32_to_bf16((float)acc / (float)size));
    store(ref, i, dt, acc);
  }
}

/* A hash of the bytes, 8 at a time (a byte loop over 8 MiB results was a
 * tenth of this program's time). */
static uint64_t fnv(const void *p, size_t n) {
  const unsigned char *b = p;
  uint64_t h = 1469598103934665603ull, w;
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    memcpy(&w, b + i, 8);
    h = (h ^ w) * 1099511628211ull;
    h ^= h >> 29;
  }
  for (; i < n; i++)
    h = (h ^ b[i]) * 1099511628211ull;
  return h;
}

/* Results that also equal an exact reference are the same on every rank
 * already; their hashes are folded into one digest compared once at the
 * end (an allreduce per check was a third of this program's calls). */
static uint64_t digest = 0x9e3779b97f4a7c15ull;
static void fold_digest(const void *buf, size_t n) {
  digest = (digest ^ fnv(buf, n)) * 0xbf58476d1ce4e5b9ull;
  digest ^= digest >> 31;
}

static void check_same_everywhere(const void *buf, size_t n, const char *what) {
  uint64_t h[2] = {fnv(buf, n), 0}, lo, hi;
  h[1] = ~h[0];
  uint64_t mx[2];
  if (rlx_allreduce(h, mx, 2, RLX_UINT64, RLX_MAX, rlx_comm_world()) != RLX_OK) {
    FAIL("hash allreduce failed: %s", rlx_errmsg());
    return;
  }
  hi = mx[0];
  lo = ~mx[1]; /* max of ~h is ~(min of h) */
  checks++;
  if (hi != lo)
    FAIL("%s: ranks hold different bytes", what);
}

static void check_allreduce(rlx_dtype_t dt, rlx_op_t op, size_t count, int in_place) {
  size_t es = rlx_dtype_size(dt), bytes = count * es;
  char *in = malloc(bytes + 1), *out = malloc(bytes + 1), *ref = malloc(bytes + 1);
  char what[160];
  snprintf(what, sizeof(what), "allreduce(count=%zu, %s, %s%s)", count, rlx_dtype_name(dt),
           rlx_op_name(op), in_place ? ", in place" : "");
  fill_inputs(in, count, dt, op);
  reference(ref, count, dt, op);
  memset(out, 0x5a, bytes);
  int rc;
  if (in_place) {
    memcpy(out, in, bytes);
    rc = rlx_allreduce(RLX_IN_PLACE, out, count, dt, op, rlx_comm_world());
  } else {
    rc = rlx_allreduce(in, out, count, dt, op, rlx_comm_world());
  }
  checks++;
  if (rc != RLX_OK) {
    FAIL("%s returned %s: %s", what, rlx_strerror(rc), rlx_errmsg());
  } else {
    for (size_t i = 0; memcmp(out, ref, bytes) != 0 && i < count; i++) {
      if (memcmp(out + i * es, ref + i * es, es) != 0) {
        FAIL("%s: element %zu differs from the reference", what, i);
        break;
      }
    }
    fold_digest(out, bytes);
  }
  free(in);
  free(out);
  free(ref);
}

static void check_reduce(rlx_dtype_t dt, rlx_op_t op, size_t count, int root) {
  size_t es = rlx_dtype_size(dt), bytes = count * es;
  char *in = malloc(bytes + 1), *out = malloc(bytes + 1), *ref = malloc(bytes + 1);
  fill_inputs(in, count, dt, op);
  reference(ref, count, dt, op);
  memset(out, 0x5a, bytes);
  int in_place = rank == root && count % 2;
  if (in_place)
    memcpy(out, in, bytes);
  int rc = rlx_reduce(in_place ? RLX_IN_PLACE : in, out, count, dt, op, root, rlx_comm_world());
  checks++;
  if (rc != RLX_OK)
    FAIL("reduce(count=%zu, %s, %s, root=%d): %s", count, rlx_dtype_name(dt), rlx_op_name(op),
         root, rlx_errmsg());
  else if (rank == root && memcmp(out, ref, bytes) != 0)
    FAIL("reduce(count=%zu, %s, %s, root=%d): wrong result", count, rlx_dtype_name(dt),
         rlx_op_name(op), root);
  free(in);
  free(out);
  free(ref);
}

static void check_allgather(rlx_dtype_t dt, size_t count, int in_place) {
  size_t es = rlx_dtype_size(dt), block = count * es;
  char *in = malloc(block + 1), *out = malloc(block * (size_t)size + 1);
  for (size_t i = 0; i < count; i++)
    store(in, i, dt, value(rank, i, RLX_SUM));
  memset(out, 0x5a, block * (size_t)size);
  if (in_place)
    memcpy(out + (size_t)rank * block, in, block);
  int rc = rlx_allgather(in_place ? RLX_IN_PLACE : in, out, count, dt, rlx_comm_world());
  checks++;
  if (rc != RLX_OK) {
    FAIL("allgather(count=%zu, %s): %s", count, rlx_dtype_name(dt), rlx_errmsg());
  } else {
    char one[8];
    for (int r = 0; r < size; r++)
      for (size_t i = 0; i < count; i++) {
        store(one, 0, dt, value(r, i, RLX_SUM));
        if (memcmp(out + (size_t)r * block + i * es, one, es) != 0) {
          FAIL("allgather(count=%zu, %s%s): block %d element %zu wrong", count, rlx_dtype_name(dt),
               in_place ? ", in place" : "", r, i);
          r = size;
          break;
        }
      }
  }
  free(in);
  free(out);
}

/* The element rank `from` sends to rank `to` at i (gather: to = -1). */
static int xvalue(int from, int to, size_t i) { return value(from * 64 + to + 1, i, RLX_SUM); }

/* Is block `blk` (count elements) what `from` sent to `to`? */
static int block_ok(const char *blk, size_t count, rlx_dtype_t dt, int from, int to) {
  char one[8];
  size_t es = rlx_dtype_size(dt);
  for (size_t i = 0; i < count; i++) {
    store(one, 0, dt, xvalue(from, to, i));
    if (memcmp(blk + i * es, one, es) != 0)
      return 0;
  }
  return 1;
}

/* rlx_gather, rlx_scatter, rlx_alltoall and their nonblocking forms
 * (nb), to root, in place at the root where the call allows it. */
static void check_exchanges(rlx_dtype_t dt, size_t count, int root, int nb, int in_place) {
  size_t es = rlx_dtype_size(dt), block = count * es, all = block * (size_t)size;
  char *in = malloc(all + 1), *out = malloc(all + 1);
  rlx_comm_t *w = rlx_comm_world();
  rlx_request_t *req = NULL;
  const char *how = nb ? "nonblocking " : "";
  /* gather: rank r's block (xvalue(r, -1)) lands at block r of the root's */
  for (size_t i = 0; i < count; i++)
    store(in, i, dt, xvalue(rank, -1, i));
  memset(out, 0x5a, all);
  int ip = in_place && rank == root;
  if (ip)
    memcpy(out + (size_t)root * block, in, block);
  const void *sb = ip ? RLX_IN_PLACE : in;
  int rc = nb ? rlx_igather(sb, out, count, dt, root, w, &req) : rlx_gather(sb, out, count, dt, root, w);
  if (rc == RLX_OK && nb)
    rc = rlx_wait(&req);
  checks++;
  if (rc != RLX_OK)
    FAIL("%sgather(count=%zu, %s, root=%d): %s", how, count, rlx_dtype_name(dt), root, rlx_errmsg());
  else if (rank == root)
    for (int r = 0; r < size; r++)
      if (!block_ok(out + (size_t)r * block, count, dt, r, -1)) {
        FAIL("%sgather(count=%zu, %s, root=%d%s): block %d wrong", how, count, rlx_dtype_name(dt),
             root, ip ? ", in place" : "", r);
        break;
      }
  /* scatter: the root's block r (xvalue(root, r)) to rank r */
  if (rank == root)
    for (int r = 0; r < size; r++)
      for (size_t i = 0; i < count; i++)
        store(in + (size_t)r * block, i, dt, xvalue(root, r, i));
  memset(out, 0x5a, block);
  void *rb = ip ? (void *)RLX_IN_PLACE : out;
  rc = nb ? rlx_iscatter(in, rb, count, dt, root, w, &req) : rlx_scatter(in, rb, count, dt, root, w);
  if (rc == RLX_OK && nb)
    rc = rlx_wait(&req);
  checks++;
  if (rc != RLX_OK)
    FAIL("%sscatter(count=%zu, %s, root=%d): %s", how, count, rlx_dtype_name(dt), root, rlx_errmsg());
  else if (!block_ok(ip ? in + (size_t)root * block : out, count, dt, root, rank))
    FAIL("%sscatter(count=%zu, %s, root=%d%s): wrong block", how, count, rlx_dtype_name(dt), root,
         ip ? ", in place" : "");
  /* all-to-all: block j of rank r's sendbuf (xvalue(r, j)) to rank j */
  for (int j = 0; j < size; j++)
    for (size_t i = 0; i < count; i++)
      store(in + (size_t)j * block, i, dt, xvalue(rank, j, i));
  memset(out, 0x5a, all);
  rc = nb ? rlx_ialltoall(in, out, count, dt, w, &req) : rlx_alltoall(in, out, count, dt, w);
  if (rc == RLX_OK && nb)
    rc = rlx_wait(&req);
  checks++;
  if (rc != RLX_OK)
    FAIL("%salltoall(count=%zu, %s): %s", how, count, rlx_dtype_name(dt), rlx_errmsg());
  else
    for (int r = 0; r < size; r++)
      if (!block_ok(out + (size_t)r * block, count, dt, r, rank)) {
        FAIL("%salltoall(count=%zu, %s): block from %d wrong", how, count, rlx_dtype_name(dt), r);
        break;
      }
  free(in);
  free(out);
}

/* The elements rank `from` sends `to` in the uneven calls: some 0, some
 * more than base. */
static size_t vcount(int from, int to, size_t base) {
  size_t k = (size_t)((from * 7 + to * 3) % 5);
  return k == 0 ? 0 : base / 2 + k * (base / 3 + 1);
}

/* rlx_gatherv, rlx_scatterv, rlx_allgatherv, rlx_alltoallv (nb: their
 * nonblocking forms), blocks with gaps between them. */
static void check_uneven(rlx_dtype_t dt, size_t base, int root, int nb) {
  size_t es = rlx_dtype_size(dt);
  size_t *rc = calloc((size_t)size, sizeof(size_t)), *rd = calloc((size_t)size, sizeof(size_t));
  size_t *sc = calloc((size_t)size, sizeof(size_t)), *sd = calloc((size_t)size, sizeof(size_t));
  rlx_comm_t *w = rlx_comm_world();
  rlx_request_t *req = NULL;
  const char *how = nb ? "i" : "";
  /* gatherv: rank r sends vcount(r, -1)... to root, at rd[r] with a gap of 3 */
  size_t tot = 0;
  for (int r = 0; r < size; r++) {
    rc[r] = vcount(r, root, base);
    rd[r] = tot + 3;
    tot += rc[r] + 3;
  }
  size_t mine = rc[rank];
  char *in = malloc(mine * es + 1), *out = malloc(tot * es + 1);
  for (size_t i = 0; i < mine; i++)
    store(in, i, dt, xvalue(rank, -1, i));
  memset(out, 0x5a, tot * es);
  int rcode = nb ? rlx_igatherv(in, mine, out, rc, rd, dt, root, w, &req)
                 : rlx_gatherv(in, mine, out, rc, rd, dt, root, w);
  if (rcode == RLX_OK && nb)
    rcode = rlx_wait(&req);
  checks++;
  if (rcode != RLX_OK)
    FAIL("%sgatherv(%s, base %zu, root %d): %s", how, rlx_dtype_name(dt), base, root, rlx_errmsg());
  else if (rank == root)
    for (int r = 0; r < size; r++)
      if (!block_ok(out + rd[r] * es, rc[r], dt, r, -1) || (rc[r] && out[rd[r] * es - 1] != 0x5a)) {
        FAIL("%sgatherv(%s, base %zu, root %d): block %d wrong", how, rlx_dtype_name(dt), base,
             root, r);
        break;
      }
  free(in);
  free(out);
  /* scatterv: the root's block r (vcount(root, r)) to rank r */
  tot = 0;
  for (int r = 0; r < size; r++) {
    sc[r] = vcount(root, r, base);
    sd[r] = tot + 2;
    tot += sc[r] + 2;
  }
  in = malloc(tot * es + 1);
  out = malloc(sc[rank] * es + 1);
  if (rank == root)
    for (int r = 0; r < size; r++)
      for (size_t i = 0; i < sc[r]; i++)
        store(in + (sd[r] + i) * es, 0, dt, xvalue(root, r, i));
  rcode = nb ? rlx_iscatterv(in, sc, sd, out, sc[rank], dt, root, w, &req)
             : rlx_scatterv(in, sc, sd, out, sc[rank], dt, root, w);
  if (rcode == RLX_OK && nb)
    rcode = rlx_wait(&req);
  checks++;
  if (rcode != RLX_OK)
    FAIL("%sscatterv(%s, base %zu, root %d): %s", how, rlx_dtype_name(dt), base, root, rlx_errmsg());
  else if (!block_ok(out, sc[rank], dt, root, rank))
    FAIL("%sscatterv(%s, base %zu, root %d): wrong block", how, rlx_dtype_name(dt), base, root);
  free(in);
  free(out);
  /* allgatherv: rank r's vcount(r, 0) elements to everyone, reversed order */
  tot = 0;
  for (int r = size - 1; r >= 0; r--) {
    rc[r] = vcount(r, 0, base);
    rd[r] = tot + 1;
    tot += rc[r] + 1;
  }
  in = malloc(rc[rank] * es + 1);
  out = malloc(tot * es + 1);
  for (size_t i = 0; i < rc[rank]; i++)
    store(in, i, dt, xvalue(rank, -2, i));
  /* (then in place, blocking: this rank's block already where it goes) */
  for (int inplace = 0; inplace <= !nb; inplace++) {
    memset(out, 0x5a, tot * es);
    if (inplace)
      memcpy(out + rd[rank] * es, in, rc[rank] * es);
    rcode = nb ? rlx_iallgatherv(in, rc[rank], out, rc, rd, dt, w, &req)
               : rlx_allgatherv(inplace ? RLX_IN_PLACE : in, rc[rank], out, rc, rd, dt, w);
    if (rcode == RLX_OK && nb)
      rcode = rlx_wait(&req);
    checks++;
    if (rcode != RLX_OK)
      FAIL("%sallgatherv(%s, base %zu%s): %s", how, rlx_dtype_name(dt), base,
           inplace ? ", in place" : "", rlx_errmsg());
    else
      for (int r = 0; r < size; r++)
        if (!block_ok(out + rd[r] * es, rc[r], dt, r, -2) || out[rd[r] * es - 1] != 0x5a) {
          FAIL("%sallgatherv(%s, base %zu%s): block %d wrong, or the gap before it written",
               how, rlx_dtype_name(dt), base, inplace ? ", in place" : "", r);
          break;
        }
  }
  free(in);
  free(out);
  /* alltoallv: vcount(me, j) to rank j; vcount(i, me) from rank i */
  size_t stot = 0, rtot = 0;
  for (int r = 0; r < size; r++) {
    sc[r] = vcount(rank, r, base);
    sd[r] = stot;
    stot += sc[r] + 1;
    rc[r] = vcount(r, rank, base);
    rd[r] = rtot + 2;
    rtot += rc[r] + 2;
  }
  in = malloc(stot * es + 1);
  out = malloc(rtot * es + 1);
  for (int r = 0; r < size; r++)
    for (size_t i = 0; i < sc[r]; i++)
      store(in + (sd[r] + i) * es, 0, dt, xvalue(rank, r, i));
  rcode = nb ? rlx_ialltoallv(in, sc, sd, out, rc, rd, dt, w, &req)
             : rlx_alltoallv(in, sc, sd, out, rc, rd, dt, w);
  if (rcode == RLX_OK && nb)
    rcode = rlx_wait(&req);
  checks++;
  if (rcode != RLX_OK)
    FAIL("%salltoallv(%s, base %zu): %s", how, rlx_dtype_name(dt), base, rlx_errmsg());
  else
    for (int r = 0; r < size; r++)
      if (!block_ok(out + rd[r] * es, rc[r], dt, r, rank)) {
        FAIL("%salltoallv(%s, base %zu): block from %d wrong", how, rlx_dtype_name(dt), base, r);
        break;
      }
  free(in);
  free(out);
  free(rc), free(rd), free(sc), free(sd);
}

static void check_reduce_scatter(rlx_dtype_t dt, rlx_op_t op, size_t count, int in_place) {
  size_t es = rlx_dtype_size(dt), total = count * (size_t)size;
  char *in = malloc(total * es + 1), *out = malloc(total * es + 1), *ref = malloc(total * es + 1);
  fill_inputs(in, total, dt, op);
  reference(ref, total, dt, op);
  memset(out, 0x5a, total * es);
  if (in_place)
    memcpy(out, in, total * es);
  int rc = rlx_reduce_scatter(in_place ? RLX_IN_PLACE : in, out, count, dt, op, rlx_comm_world());
  checks++;
  if (rc != RLX_OK)
    FAIL("reduce_scatter(count=%zu, %s, %s): %s", count, rlx_dtype_name(dt), rlx_op_name(op),
         rlx_errmsg());
  else if (memcmp(out, ref + (size_t)rank * count * es, count * es) != 0)
    FAIL("reduce_scatter(count=%zu, %s, %s%s): wrong block", count, rlx_dtype_name(dt),
         rlx_op_name(op), in_place ? ", in place" : "");
  free(in);
  free(out);
  free(ref);
}

/* rlx_reduce_scatterv (nb: rlx_ireduce_scatterv): rank r gets block r
 * of vcount(r, 1, base) elements, some empty, of the reduction. */
static void check_reduce_scatterv(rlx_dtype_t dt, rlx_op_t op, size_t base, int nb) {
  size_t es = rlx_dtype_size(dt), total = 0, off = 0;
  size_t *counts = calloc((size_t)size, sizeof(size_t));
  for (int r = 0; r < size; r++) {
    counts[r] = vcount(r, 1, base);
    off = r == rank ? total : off;
    total += counts[r];
  }
  char *in = malloc(total * es + 1), *out = malloc(counts[rank] * es + 1),
       *ref = malloc(total * es + 1);
  fill_inputs(in, total, dt, op);
  reference(ref, total, dt, op);
  memset(out, 0x5a, counts[rank] * es);
  rlx_request_t *req = NULL;
  int rc = nb ? rlx_ireduce_scatterv(in, out, counts, dt, op, rlx_comm_world(), &req)
              : rlx_reduce_scatterv(in, out, counts, dt, op, rlx_comm_world());
  if (rc == RLX_OK && nb)
    rc = rlx_wait(&req);
  checks++;
  if (rc != RLX_OK)
    FAIL("%sreduce_scatterv(base %zu, %s, %s): %s", nb ? "i" : "", base, rlx_dtype_name(dt),
         rlx_op_name(op), rlx_errmsg());
  else if (memcmp(out, ref + off * es, counts[rank] * es) != 0)
    FAIL("%sreduce_scatterv(base %zu, %s, %s): wrong block (%zu elements)", nb ? "i" : "", base,
         rlx_dtype_name(dt), rlx_op_name(op), counts[rank]);
  free(in);
  free(out);
  free(ref);
  free(counts);
}

/* The nonblocking forms give what the blocking ones give. */
static void check_nonblocking(rlx_dtype_t dt, rlx_op_t op, size_t count) {
  size_t es = rlx_dtype_size(dt), bytes = count * es;
  char *in = malloc(bytes + 1), *out = malloc(bytes + 1), *ref = malloc(bytes + 1);
  char *b = malloc(bytes + 1);
  rlx_request_t *r1 = NULL, *r2 = NULL;
  fill_inputs(in, count, dt, op);
  reference(ref, count, dt, op);
  for (size_t i = 0; i < bytes; i++)
    b[i] = rank == size - 1 ? (char)(i * 3) : 0;
  checks++;
  int rc = rlx_iallreduce(in, out, count, dt, op, rlx_comm_world(), &r1);
  if (rc == RLX_OK)
    rc = rlx_ibcast(b, count, dt, size - 1, rlx_comm_world(), &r2);
  int done = 0;
  for (int spins = 0; rc == RLX_OK && !done && spins < 10; spins++)
    rc = rlx_test(&r1, &done);
  if (rc == RLX_OK && !done)
    rc = rlx_wait(&r1);
  if (rc == RLX_OK)
    rc = rlx_wait(&r2);
  if (rc != RLX_OK)
    FAIL("iallreduce/ibcast(count=%zu, %s, %s): %s", count, rlx_dtype_name(dt), rlx_op_name(op),
         rlx_errmsg());
  else if (memcmp(out, ref, bytes) != 0)
    FAIL("iallreduce(count=%zu, %s, %s): wrong result", count, rlx_dtype_name(dt),
         rlx_op_name(op));
  else
    for (size_t i = 0; i < bytes; i++)
      if (b[i] != (char)(i * 3)) {
        FAIL("ibcast(count=%zu): byte %zu wrong", count, i);
        break;
      }
  /* ireduce to the last rank, iallgather, ireduce_scatter and ibarrier in
   * flight at once, then waited for in the opposite order */
  rlx_request_t *rq[4] = {NULL, NULL, NULL, NULL};
  size_t blk = count / (size_t)size;
  char *red = malloc(bytes + 1), *ag = malloc(bytes * (size_t)size + 1), *rs = malloc(blk * es + 1);
  rlx_comm_t *w = rlx_comm_world();
  checks++;
  rc = rlx_ireduce(in, red, count, dt, op, size - 1, w, &rq[0]);
  if (rc == RLX_OK)
    rc = rlx_iallgather(in, ag, count, dt, w, &rq[1]);
  if (rc == RLX_OK)
    rc = rlx_ireduce_scatter(in, rs, blk, dt, op, w, &rq[2]);
  if (rc == RLX_OK)
    rc = rlx_ibarrier(w, &rq[3]);
  for (int i = 3; i >= 0; i--) {
    int rc2 = rq[i] ? rlx_wait(&rq[i]) : RLX_OK;
    rc = rc ? rc : rc2;
  }
  if (rc != RLX_OK)
    FAIL("ireduce/iallgather/ireduce_scatter/ibarrier(count=%zu, %s, %s): %s", count,
         rlx_dtype_name(dt), rlx_op_name(op), rlx_errmsg());
  else if ((rank == size - 1 && memcmp(red, ref, bytes) != 0) ||
           memcmp(rs, ref + (size_t)rank * blk * es, blk * es) != 0)
    FAIL("ireduce/ireduce_scatter(count=%zu, %s, %s): wrong result", count, rlx_dtype_name(dt),
         rlx_op_name(op));
  else
    for (int r = 0; r < size; r++)
      if (memcmp(ag + (size_t)r * bytes, r == rank ? in : ag + (size_t)r * bytes, bytes) != 0 ||
          (r == rank && memcmp(ag + (size_t)r * bytes, in, bytes) != 0)) {
        FAIL("iallgather(count=%zu): own block wrong", count);
        break;
      }
  free(red);
  free(ag);
  free(rs);
  free(in);
  free(out);
  free(ref);
  free(b);
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void nap_us(long us) {
  struct timespec ts = {us / 1000000, (us % 1000000) * 1000};
  nanosleep(&ts, NULL);
}

/* --polling: a caller that polls a nonblocking call with rlx_test (and
 * naps between polls) sees it complete as soon as the data is there. The
 * root posts its ibcast 20 ms after the others, whose progress threads are
 * asleep by then; rlx_test's own pass of the loop used to take the
 * doorbell meant to wake them without reading the rings, and the data
 * then waited for the progress thread's 100 ms timeout (6 of 20 calls
 * were 60-80 ms late on 2 ranks). Late here: done 40+ ms after the root's
 * rlx_ibcast returned (the root tells its clock's reading afterwards: one
 * host, one CLOCK_MONOTONIC), so a root that the machine stalls before
 * its post is not counted against the others. One late call in a round
 * of 20 runs a second round, and only a second late round fails: the bug
 * this guards against was late in every round, while CI's shared 2-core
 * machines stall a whole rank now and then (once both non-roots read 171
 * ms late from their own barriers, under ASan, 1 call of 20). */
static int polling_round(size_t count, char *b, double *worst) {
  int late = 0;
  for (int it = 0; it < 20; it++) {
    rlx_request_t *q = NULL;
    double posted = 0;
    memset(b, rank == 0 ? 7 : 0, count);
    checks++;
    if (rlx_barrier(rlx_comm_world()) != RLX_OK) {
      FAIL("polling: barrier: %s", rlx_errmsg());
      return -1;
    }
    if (rank == 0)
      nap_us(20000);
    int rc = rlx_ibcast(b, count, RLX_UINT8, 0, rlx_comm_world(), &q), done = 0;
    if (rank == 0)
      posted = now_s();
    while (rc == RLX_OK && !done && (rc = rlx_test(&q, &done)) == RLX_OK && !done)
      nap_us(20);
    double finished = now_s();
    if (rc == RLX_OK)
      rc = rlx_bcast(&posted, 1, RLX_FLOAT64, 0, rlx_comm_world());
    if (rc != RLX_OK) {
      FAIL("polling: ibcast of %zu bytes: %s", count, rlx_errmsg());
      return -1;
    }
    if (rank != 0 && (b[0] != 7 || b[count - 1] != 7))
      FAIL("polling: ibcast of %zu bytes: wrong data", count);
    double late_s = finished - posted;
    if (rank != 0 && late_s > *worst)
      *worst = late_s;
    late += rank != 0 && late_s > 0.040;
  }
  return late;
}

static void check_polling(size_t count) {
  char *b = malloc(count + 1);
  int late[2] = {0, 0};
  double worst[2] = {0, 0};
  for (int round = 0; round < 2; round++) {
    if ((late[round] = polling_round(count, b, &worst[round])) < 0)
      break;
    /* every rank goes on to the second round or none does */
    int any = late[round], all_any = 0;
    if (rlx_allreduce(&any, &all_any, 1, RLX_INT32, RLX_MAX, rlx_comm_world()) != RLX_OK) {
      FAIL("polling: allreduce: %s", rlx_errmsg());
      break;
    }
    if (all_any == 0)
      break;
  }
  if (late[0] > 0 && late[1] > 0)
    FAIL("polling: %d and %d of two rounds of 20 ibcasts of %zu bytes completed 40+ ms after the "
         "root's post (worst %.1f and %.1f ms): rlx_test did not see data that was there",
         late[0], late[1], count, worst[0] * 1e3, worst[1] * 1e3);
  else if (late[0] > 0)
    fprintf(stderr, "[%d] coll_check: polling: %d of 20 ibcasts of %zu bytes %.1f ms late in the "
            "first round, none in the second: a stall, not a missed wake-up\n",
            rank, late[0], count, worst[0] * 1e3);
  free(b);
}

static void check_random_floats(size_t count) {
  float *in = malloc(count * sizeof(float)), *out = malloc(count * sizeof(float));
  srand(1234 + rank);
  for (size_t i = 0; i < count; i++)
    in[i] = (float)rand() / (float)RAND_MAX - 0.5f;
  if (rlx_allreduce(in, out, count, RLX_FLOAT32, RLX_SUM, rlx_comm_world()) != RLX_OK)
    FAIL("random allreduce failed: %s", rlx_errmsg());
  else
    check_same_everywhere(out, count * sizeof(float), "random float32 sum");
  free(in);
  free(out);
}

static void check_bcast(rlx_dtype_t dt, size_t count, int root) {
  size_t es = rlx_dtype_size(dt), bytes = count * es;
  unsigned char *buf = malloc(bytes + 1);
  for (size_t i = 0; i < bytes; i++)
    buf[i] = rank == root ? (unsigned char)(i * 31 + 7) : 0;
  int rc = rlx_bcast(buf, count, dt, root, rlx_comm_world());
  checks++;
  if (rc != RLX_OK) {
    FAIL("bcast(count=%zu, %s, root=%d): %s", count, rlx_dtype_name(dt), root, rlx_errmsg());
  } else {
    for (size_t i = 0; i < bytes; i++)
      if (buf[i] != (unsigned char)(i * 31 + 7)) {
        FAIL("bcast(count=%zu, %s, root=%d): byte %zu wrong", count, rlx_dtype_name(dt), root, i);
        break;
      }
  }
  free(buf);
}

/* RLX_IN_PLACE where no call takes it (a destination; bcast's buffer):
 * RLX_ERR_ARG with a message on every rank, no crash, and the
 * communicator still works (every rank makes the same mistake here, so
 * nobody waits for a call that never started; rlx_reduce's root recvbuf
 * is checked on the root alone, whose partners then see a mismatch). */
static void check_misuse(void) {
  rlx_comm_t *w = rlx_comm_world();
  float in[4] = {1, 2, 3, 4};
  void *ip = (void *)RLX_IN_PLACE;
  struct {
    const char *what;
    int rc;
  } t[] = {
      {"allreduce recvbuf", rlx_allreduce(in, ip, 4, RLX_FLOAT32, RLX_SUM, w)},
      {"bcast buf", rlx_bcast(ip, 4, RLX_FLOAT32, 0, w)},
      {"allgather recvbuf", rlx_allgather(in, ip, 1, RLX_FLOAT32, w)},
      {"reduce_scatter recvbuf", rlx_reduce_scatter(in, ip, 1, RLX_FLOAT32, RLX_SUM, w)},
  };
  for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
    checks++;
    if (t[i].rc != RLX_ERR_ARG)
      FAIL("RLX_IN_PLACE as %s returned %s", t[i].what, rlx_strerror(t[i].rc));
  }
  /* counts and displacements out of range (exchanges.c's check_blocks:
   * every rank checks both sides of an alltoallv), each named */
  enum { P = 64 };
  size_t ok[P] = {0}, at[P] = {0}, big[P] = {0}, far[P] = {0}, one[P] = {0};
  big[size - 1] = ((size_t)1 << 30) / sizeof(float) + 1; /* a block over 1 GiB */
  far[size - 1] = (size_t)1 << 62;                       /* a displacement past any buffer */
  one[size - 1] = 1;
  static const struct {
    const char *what, *says;
  } v[] = {{"a block over 1 GiB", "sendcounts[%d] is over 1 GiB"},
           {"a displacement too large", "recvcounts[%d] or recvdispls[%d] is too large"},
           {"a NULL buffer with a count", "the buffer is NULL with sendcounts[%d] = 1"}};
  for (int i = 0; i < 3 && size <= P; i++) {
    char says[96];
    snprintf(says, sizeof(says), v[i].says, size - 1, size - 1);
    float got[4];
    int rc = i == 0   ? rlx_alltoallv(in, big, at, got, ok, at, RLX_FLOAT32, w)
             : i == 1 ? rlx_alltoallv(in, ok, at, got, ok, far, RLX_FLOAT32, w)
                      : rlx_alltoallv(NULL, one, at, got, ok, at, RLX_FLOAT32, w);
    checks++;
    if (rc != RLX_ERR_ARG || strstr(rlx_errmsg(), says) == NULL)
      FAIL("alltoallv with %s returned %s (\"%s\", not \"%s\")", v[i].what, rlx_strerror(rc),
           rlx_errmsg(), says);
  }
  rlx_request_t *rq = NULL;
  checks++;
  if (rlx_iallreduce(in, ip, 4, RLX_FLOAT32, RLX_SUM, w, &rq) != RLX_ERR_ARG || rq != NULL)
    FAIL("RLX_IN_PLACE as rlx_iallreduce's recvbuf was taken");
  checks++;
  if (rlx_barrier(w) != RLX_OK)
    FAIL("the communicator does not work after argument errors: %s", rlx_errmsg());
}

/* --half-exact (a communicator in one shared segment): half-precision
 * sums are combined in float32 and rounded once, so base + 1 + 1 + ... is
 * the exact sum rounded once (float16 2048 + 1 + 1 = 2050, bfloat16
 * 256 + 1 + 1 = 258), which a step-by-step half sum loses (2048, 256). */
static void check_half_exact(void) {
  static const struct {
    rlx_dtype_t dt;
    float base;
  } t[] = {{RLX_FLOAT16, 2048}, {RLX_BFLOAT16, 256}};
  for (int i = 0; i < 2; i++) {
    float mine = rank == 0 ? t[i].base : 1, exact = t[i].base + (float)(size - 1);
    /* the exact sum, rounded once to the half type */
    float want = t[i].dt == RLX_FLOAT16 ? rlx__f16_to_f32(rlx__f32_to_f16(exact))
                                        : rlx__bf16_to_f32(rlx__f32_to_bf16(exact));
    uint16_t in[64], out[64];
    for (int k = 0; k < 64; k++)
      in[k] = t[i].dt == RLX_FLOAT16 ? rlx__f32_to_f16(mine) : rlx__f32_to_bf16(mine);
    checks++;
    if (rlx_allreduce(in, out, 64, t[i].dt, RLX_SUM, rlx_comm_world()) != RLX_OK) {
      FAIL("%s sum: %s", rlx_dtype_name(t[i].dt), rlx_errmsg());
      continue;
    }
    float got = t[i].dt == RLX_FLOAT16 ? rlx__f16_to_f32(out[0]) : rlx__bf16_to_f32(out[0]);
    if (got != want)
      FAIL("%s: %g + %d x 1 gave %g, not %g", rlx_dtype_name(t[i].dt), (double)t[i].base,
           size - 1, (double)got, (double)want);
  }
}

/* One rank (rlx__call_alone): every call moves its own block, at its
 * displacements, and nothing around it; in place moves nothing; the
 * nonblocking forms hand back a request that is done. */
static int alone_ok(const char *what, int rc, const float *out, size_t at, const float *want,
                    size_t n) {
  checks++;
  if (rc != RLX_OK) {
    FAIL("one rank: %s: %s", what, rlx_errmsg());
    return 0;
  }
  for (size_t i = 0; i < 8; i++) {
    float v = i >= at && i < at + n ? want[i - at] : -1.0f;
    if (out[i] != v) {
      FAIL("one rank: %s: element %zu is %g, not %g", what, i, (double)out[i], (double)v);
      return 0;
    }
  }
  return 1;
}

static void check_alone(void) {
  rlx_comm_t *w = rlx_comm_world();
  float in[8], out[8];
  size_t three[1] = {3}, two[1] = {2}, one[1] = {1}, four[1] = {4};
  for (int i = 0; i < 8; i++)
    in[i] = (float)(i + 1);
#define ALONE(what, call, at, want, n)                                                             \
  do {                                                                                             \
    for (int i_ = 0; i_ < 8; i_++)                                                                 \
      out[i_] = -1.0f;                                                                             \
    alone_ok(what, call, out, at, want, n);                                                        \
  } while (0)
  ALONE("allreduce", rlx_allreduce(in, out, 3, RLX_FLOAT32, RLX_SUM, w), 0, in, 3);
  ALONE("reduce", rlx_reduce(in, out, 3, RLX_FLOAT32, RLX_MAX, 0, w), 0, in, 3);
  ALONE("allgather", rlx_allgather(in, out, 3, RLX_FLOAT32, w), 0, in, 3);
  ALONE("reduce_scatter", rlx_reduce_scatter(in, out, 3, RLX_FLOAT32, RLX_SUM, w), 0, in, 3);
  ALONE("reduce_scatterv", rlx_reduce_scatterv(in, out, three, RLX_FLOAT32, RLX_SUM, w), 0, in, 3);
  ALONE("gather", rlx_gather(in, out, 3, RLX_FLOAT32, 0, w), 0, in, 3);
  ALONE("scatter", rlx_scatter(in, out, 3, RLX_FLOAT32, 0, w), 0, in, 3);
  ALONE("alltoall", rlx_alltoall(in, out, 3, RLX_FLOAT32, w), 0, in, 3);
  ALONE("gatherv", rlx_gatherv(in, 3, out, three, two, RLX_FLOAT32, 0, w), 2, in, 3);
  ALONE("scatterv", rlx_scatterv(in, three, two, out, 3, RLX_FLOAT32, 0, w), 0, in + 2, 3);
  ALONE("allgatherv", rlx_allgatherv(in, 3, out, three, two, RLX_FLOAT32, w), 2, in, 3);
  ALONE("alltoallv", rlx_alltoallv(in, three, one, out, three, four, RLX_FLOAT32, w), 4, in + 1, 3);
  rlx_request_t *rq = NULL;
  int rc;
  ALONE("iscatterv", (rc = rlx_iscatterv(in, three, two, out, 3, RLX_FLOAT32, 0, w, &rq)) ? rc
                     : rlx_wait(&rq), 0, in + 2, 3);
  ALONE("ialltoallv", (rc = rlx_ialltoallv(in, three, one, out, three, four, RLX_FLOAT32, w, &rq))
                          ? rc : rlx_wait(&rq), 4, in + 1, 3);
#undef ALONE
  /* in place: the block is where it goes already; nothing else moves */
  float keep[8];
  memcpy(keep, in, sizeof(keep));
  alone_ok("scatterv in place", rlx_scatterv(in, three, two, (void *)RLX_IN_PLACE, 0, RLX_FLOAT32, 0, w),
           in, 0, keep, 8);
  alone_ok("gatherv in place", rlx_gatherv(RLX_IN_PLACE, 0, in, three, two, RLX_FLOAT32, 0, w),
           in, 0, keep, 8);
  alone_ok("allreduce in place", rlx_allreduce(RLX_IN_PLACE, in, 8, RLX_FLOAT32, RLX_SUM, w), in,
           0, keep, 8);
}

static void stress(int n) {
  for (int it = 0; it < n; it++) {
    int64_t v = rank + it, want = (int64_t)size * it + (int64_t)size * (size - 1) / 2;
    if (rlx_allreduce(RLX_IN_PLACE, &v, 1, RLX_INT64, RLX_SUM, rlx_comm_world()) != RLX_OK) {
      FAIL("stress allreduce %d: %s", it, rlx_errmsg());
      return;
    }
    checks++;
    if (v != want) {
      FAIL("stress allreduce %d: got %lld, want %lld", it, (long long)v, (long long)want);
      return;
    }
  }
}

/* Small gathers, scatters and bcasts in a row while the ranks that take
 * are late: a gather's senders run ahead (up to RLX__SHMG_CELLS - 1
 * calls in the segment) and every call's data must still be its own;
 * an allreduce every 10 calls mixes in steps that wait for all. */
static void check_run_ahead(int root) {
  enum { CALLS = 64, K = 3 };
  int mine[K], got[64 * K], all[64 * K];
  for (int i = 0; i < CALLS; i++) {
    if (i == 0 && rank == root)
      nap_us(20000); /* gathers: the senders go ahead */
    for (int k = 0; k < K; k++)
      mine[k] = rank * 100000 + i * 10 + k;
    if (rlx_gather(mine, got, K, RLX_INT32, root, rlx_comm_world()) != RLX_OK) {
      FAIL("run ahead: gather %d: %s", i, rlx_errmsg());
      return;
    }
    for (int r = 0; rank == root && r < size; r++)
      for (int k = 0; k < K; k++)
        if (got[r * K + k] != r * 100000 + i * 10 + k)
          FAIL("run ahead: gather %d from rank %d [%d]: %d", i, r, k, got[r * K + k]);
    if (i % 10 == 9) {
      int one = 1, n = 0;
      if (rlx_allreduce(&one, &n, 1, RLX_INT32, RLX_SUM, rlx_comm_world()) != RLX_OK || n != size)
        FAIL("run ahead: allreduce after gather %d: %d", i, n);
    }
  }
  for (int i = 0; i < CALLS; i++) {
    if (i == 0 && rank != root)
      nap_us(20000); /* scatters and bcasts: the root goes ahead */
    for (int r = 0; r < size; r++)
      for (int k = 0; k < K; k++)
        all[r * K + k] = -(r * 100000 + i * 10 + k);
    if (rlx_scatter(all, mine, K, RLX_INT32, root, rlx_comm_world()) != RLX_OK) {
      FAIL("run ahead: scatter %d: %s", i, rlx_errmsg());
      return;
    }
    for (int k = 0; k < K; k++)
      if (mine[k] != -(rank * 100000 + i * 10 + k))
        FAIL("run ahead: scatter %d [%d]: %d", i, k, mine[k]);
    int b[K] = {rank == root ? i : -1, rank == root ? 2 * i : -1, rank == root ? 3 * i : -1};
    if (rlx_bcast(b, K, RLX_INT32, root, rlx_comm_world()) != RLX_OK ||
        b[0] != i || b[1] != 2 * i || b[2] != 3 * i)
      FAIL("run ahead: bcast %d: %d %d %d", i, b[0], b[1], b[2]);
    if (i % 10 == 9 && rlx_barrier(rlx_comm_world()) != RLX_OK)
      FAIL("run ahead: barrier after scatter %d", i);
  }
}

int main(int argc, char **argv) {
  /* Keep freed buffers for the next check instead of returning them to the
   * kernel: every check allocates megabytes, and fresh pages cost a fault
   * and a clear each. */
  mallopt(M_MMAP_THRESHOLD, 256 << 20);
  mallopt(M_TRIM_THRESHOLD, 1 << 30);
  size_t counts[16] = {0, 1, 7, 1023, 1048579};
  int ncounts = 5, nstress = 0, random_floats = 0, big_all = 0, half_exact = 0, polling = 0;
  int exchanges_only = 0; /* --exchanges: gather, scatter, all-to-all and the uneven calls alone */
  int want_dt[RLX_DTYPE_COUNT];
  for (int d = 0; d < RLX_DTYPE_COUNT; d++)
    want_dt[d] = 1;
  double pause_s = 0;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--counts") == 0 && i + 1 < argc) {
      ncounts = 0;
      for (char *t = strtok(argv[++i], ","); t && ncounts < 16; t = strtok(NULL, ","))
        counts[ncounts++] = strtoull(t, NULL, 10);
    } else if (strcmp(argv[i], "--stress") == 0 && i + 1 < argc) {
      nstress = atoi(argv[++i]);
      ncounts = 0;
    } else if (strcmp(argv[i], "--random") == 0) {
      random_floats = 1;
    } else if (strcmp(argv[i], "--pause") == 0 && i + 1 < argc) {
      pause_s = atof(argv[++i]);
    } else if (strcmp(argv[i], "--half-exact") == 0) {
      half_exact = 1;
      ncounts = 0;
    } else if (strcmp(argv[i], "--polling") == 0) {
      polling = 1;
      ncounts = 0;
    } else if (strcmp(argv[i], "--big-all") == 0) {
      big_all = 1;
    } else if (strcmp(argv[i], "--exchanges") == 0) {
      exchanges_only = 1;
    } else if (strcmp(argv[i], "--dtypes") == 0 && i + 1 < argc) {
      for (int d = 0; d < RLX_DTYPE_COUNT; d++)
        want_dt[d] = 0;
      for (char *t = strtok(argv[++i], ","); t; t = strtok(NULL, ",")) {
        int d = 0;
        while (d < RLX_DTYPE_COUNT && strcmp(rlx_dtype_name((rlx_dtype_t)d), t) != 0)
          d++;
        if (d == RLX_DTYPE_COUNT) {
          fprintf(stderr, "coll_check: --dtypes: no dtype '%s'\n", t);
          return 2;
        }
        want_dt[d] = 1;
      }
    }
  }
  int rc = rlx_init(&argc, &argv);
  if (rc != RLX_OK) {
    fprintf(stderr, "coll_check: rlx_init: %s\n", rlx_errmsg());
    return 2;
  }
  rank = rlx_comm_rank(rlx_comm_world());
  size = rlx_comm_size(rlx_comm_world());

  /* --pause: rank 0 arrives late, the others wait in the first call. */
  if (rank == 0 && pause_s > 0) {
    struct timespec ts = {(time_t)pause_s, (long)((pause_s - (time_t)pause_s) * 1e9)};
    nanosleep(&ts, NULL);
  }

  /* Everyone agrees on the leader. */
  int leader = rlx_comm_leader(rlx_comm_world()), lmax = leader;
  rlx_allreduce(&leader, &lmax, 1, RLX_INT32, RLX_MAX, rlx_comm_world());
  checks++;
  if (lmax != leader || leader < 0 || leader >= size)
    FAIL("leader disagreement: %d here, max %d", leader, lmax);
  if (size > 1 && !half_exact && !polling) {
    check_misuse();
    check_run_ahead(0);
    check_run_ahead(size - 1);
  }
  if (size == 1 && !half_exact && !polling)
    check_alone();
  if (half_exact)
    check_half_exact();
  if (polling && size > 1) {
    check_polling(8);
    check_polling(1 << 20);
  }

  for (int c = 0; c < ncounts; c++) {
    for (int dt = 0; dt < RLX_DTYPE_COUNT; dt++) {
      if (!want_dt[dt])
        continue;
      for (int op = 0; op < (exchanges_only ? 0 : RLX_OP_COUNT); op++) {
        if (op == RLX_AVG && !rlx__dtype_is_float((rlx_dtype_t)dt))
          continue;
        if (op >= RLX_BAND && rlx__dtype_is_float((rlx_dtype_t)dt))
          continue;
        /* The biggest count for every dtype with sum, and float32 with all ops. */
        if (counts[c] > 100000 && !big_all && op != RLX_SUM && dt != RLX_FLOAT32)
          continue;
        check_allreduce((rlx_dtype_t)dt, (rlx_op_t)op, counts[c], (dt + op + c) % 2);
        if (counts[c] <= 100000 || dt == RLX_FLOAT32 || op == RLX_SUM) {
          check_reduce((rlx_dtype_t)dt, (rlx_op_t)op, counts[c], (dt + op) % size);
          check_reduce_scatter((rlx_dtype_t)dt, (rlx_op_t)op,
                               counts[c] > 100000 ? counts[c] / (size_t)size : counts[c],
                               (dt + op + c + 1) % 2);
          check_reduce_scatterv((rlx_dtype_t)dt, (rlx_op_t)op,
                                counts[c] > 100000 ? counts[c] / (size_t)size : counts[c],
                                (dt + op + c) % 2);
        }
      }
      if (!exchanges_only) {
        check_allgather((rlx_dtype_t)dt, counts[c] > 100000 ? counts[c] / (size_t)size : counts[c],
                        (dt + c) % 2);
        check_bcast((rlx_dtype_t)dt, counts[c] > 100000 ? counts[c] / 4 : counts[c], size - 1);
      }
      /* (the big count: a block per rank of it, for float32 and int8) */
      if (counts[c] <= 100000 || dt == RLX_FLOAT32 || dt == RLX_INT8) {
        check_exchanges((rlx_dtype_t)dt, counts[c] > 100000 ? counts[c] / (size_t)size : counts[c],
                        (dt + c) % size, (dt + c) % 3 == 0, (dt + c) % 2);
        check_uneven((rlx_dtype_t)dt, counts[c] > 100000 ? counts[c] / (size_t)size : counts[c],
                     (dt + c + 1) % size, (dt + c) % 3 == 1);
      }
    }
    if (!exchanges_only) {
      check_bcast(RLX_UINT8, counts[c], 0);
      check_nonblocking(RLX_FLOAT32, RLX_SUM, counts[c]);
      check_nonblocking(RLX_INT32, RLX_MAX, counts[c]);
    }
    if (rlx_barrier(rlx_comm_world()) != RLX_OK)
      FAIL("barrier: %s", rlx_errmsg());
  }
  if (random_floats) {
    check_random_floats(1000);
    check_random_floats(300001);
  }
  if (nstress)
    stress(nstress);

  /* every rank folded the same results in the same order */
  check_same_everywhere(&digest, sizeof digest, "the digest of every allreduce result");
  int bad = failures, total_bad = 0;
  rlx_allreduce(&bad, &total_bad, 1, RLX_INT32, RLX_SUM, rlx_comm_world());
  if (rank == 0)
    printf("coll_check: %d ranks, %d checks per rank, %d failures in all\n", size, checks,
           total_bad);
  rlx_finalize();
  return failures || total_bad ? 1 : 0;
}
