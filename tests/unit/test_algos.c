/* Every collective algorithm, driven in one process with no sockets: an
 * in-process executor plays all p ranks' rounds (the transfers of a round,
 * then its local work, lane by lane, as lib/coll/exec.c does), matching
 * each receive with the send of the same (sender, receiver, segment), and
 * the results are checked against a reference for p = 1..17, several
 * counts, every dtype and op, in place and not. Also rlx__select's table.
 * A lane that waits on a transfer nobody sends is a deadlock and fails. */
#include <check.h>
#include "suite.h"
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "coll/coll.h"
#include "base/tuning.h"

#define PMAX 17

/* Check sends every ck_assert's location to the runner (a write per
 * call); in the executor's hot loops a plain test is enough. */
#define REQUIRE(cond, ...)                                                     \
  do {                                                                         \
    if (!(cond))                                                               \
      ck_abort_msg(__VA_ARGS__);                                               \
  } while (0)

/* A send posted and not yet received: its bytes, copied when posted. */
struct msg {
  int from, to;
  uint32_t segment;
  size_t len;
  unsigned char *data;
  struct msg *next;
};

struct sim {
  int p;
  struct rlx__p2p p2p; /* only the hints algorithms read (cma, oversubscribed) */
  int world[PMAX];
  struct rlx__op op[PMAX];
  int done[PMAX][RLX__LANES_MAX][RLX__ROUND_MAX]; /* transfer of the current round done */
  struct msg *box;
  char err[256];
};

static void post_send(struct sim *s, int r, int l, int i) {
  struct rlx__op *op = &s->op[r];
  struct rlx__lane *ln = &op->lane[l];
  struct msg *m = calloc(1, sizeof(*m));
  REQUIRE(m != NULL, "no memory");
  m->from = r;
  m->to = ln->round.x[i].peer;
  m->segment = (uint32_t)(ln->k * op->nlanes + l);
  m->len = ln->round.x[i].len;
  m->data = malloc(m->len ? m->len : 1);
  REQUIRE(m->data != NULL, "no memory");
  if (m->len) /* a barrier's transfers have no buffer at all */
    memcpy(m->data, ln->round.x[i].buf, m->len);
  m->next = s->box;
  s->box = m;
  s->done[r][l][i] = 1; /* a send completes once the data left the buffer */
}

/* 1 if the receive found its send (the data is in place), 0 if not yet. */
static int try_recv(struct sim *s, int r, int l, int i) {
  struct rlx__op *op = &s->op[r];
  struct rlx__lane *ln = &op->lane[l];
  uint32_t seg = (uint32_t)(ln->k * op->nlanes + l);
  for (struct msg **pm = &s->box; *pm != NULL; pm = &(*pm)->next) {
    struct msg *m = *pm;
    if (m->from != ln->round.x[i].peer || m->to != r || m->segment != seg)
      continue;
    if (m->len != ln->round.x[i].len)
      snprintf(s->err, sizeof(s->err), "rank %d segment %u: %zu bytes sent by rank %d, %zu expected",
               r, seg, m->len, m->from, ln->round.x[i].len);
    else if (m->len)
      memcpy(ln->round.x[i].buf, m->data, m->len);
    *pm = m->next;
    free(m->data);
    free(m);
    return 1;
  }
  return 0;
}

/* Move lane l of rank r as far as it goes; 1 if it moved. */
static int step_lane(struct sim *s, int r, int l) {
  struct rlx__op *op = &s->op[r];
  struct rlx__lane *ln = &op->lane[l];
  int moved = 0;
  while (!ln->finished && s->err[0] == '\0') {
    for (int i = 0; i < ln->round.n; i++)
      if (!s->done[r][l][i] && try_recv(s, r, l, i))
        s->done[r][l][i] = moved = 1;
    for (int i = 0; i < ln->round.n; i++)
      if (!s->done[r][l][i])
        return moved;
    if (ln->k >= 0)
      rlx__round_work(op, &ln->round);
    ln->k++;
    memset(&ln->round, 0, sizeof(ln->round));
    memset(s->done[r][l], 0, sizeof(s->done[r][l]));
    moved = 1;
    if (!op->algo->round(op, l, ln->k, &ln->round)) {
      ln->finished = 1;
      break;
    }
    REQUIRE(ln->round.n <= RLX__ROUND_MAX, "%d transfers in a round", ln->round.n);
    if (ln->round.n == 0 && ln->round.skip_to > ln->k + 1) /* (as exec.c's advance) */
      ln->k = (int)ln->round.skip_to - 1;
    for (int i = 0; i < ln->round.n; i++) {
      int peer = ln->round.x[i].peer;
      if (peer < 0 || peer >= s->p || peer == r) {
        snprintf(s->err, sizeof(s->err), "rank %d round %d talks to rank %d", r, ln->k, peer);
        return moved;
      }
      if (ln->round.x[i].send)
        post_send(s, r, l, i);
    }
  }
  return moved;
}

/* Run every rank to the end; "" or what went wrong. */
static void run(struct sim *s) {
  for (int r = 0; r < s->p; r++) {
    struct rlx__op *op = &s->op[r];
    op->nlanes = 1;
    size_t need = op->algo->setup(op);
    op->tmp = need ? malloc(need) : NULL;
    op->tmp_len = need;
    REQUIRE(need == 0 || op->tmp != NULL, "no memory");
    REQUIRE(op->nlanes >= 1 && op->nlanes <= RLX__LANES_MAX, "%d lanes", op->nlanes);
    for (int l = 0; l < op->nlanes; l++) {
      memset(&op->lane[l], 0, sizeof(op->lane[l]));
      op->lane[l].k = -1;
    }
  }
  for (;;) {
    int moved = 0, left = 0;
    for (int r = 0; r < s->p; r++)
      for (int l = 0; l < s->op[r].nlanes; l++) {
        moved |= step_lane(s, r, l);
        left += !s->op[r].lane[l].finished;
      }
    if (s->err[0] || left == 0)
      break;
    if (!moved) {
      snprintf(s->err, sizeof(s->err), "deadlock: %d lanes wait on transfers nobody sends", left);
      break;
    }
  }
  if (s->err[0] == '\0' && s->box != NULL)
    snprintf(s->err, sizeof(s->err), "rank %d sent segment %u to rank %d, never received",
             s->box->from, s->box->segment, s->box->to);
  while (s->box) {
    struct msg *m = s->box;
    s->box = m->next;
    free(m->data);
    free(m);
  }
  for (int r = 0; r < s->p; r++)
    free(s->op[r].tmp);
}

/* ---- values and references --------------------------------------------- */

/* Inputs whose every reduction is exact in every dtype and any order: small
 * integers; for PROD mostly +-1 so products stay in range. */
static double value(int rank, size_t i, rlx_op_t op) {
  uint32_t h = (uint32_t)(rank * 2654435761u) ^ (uint32_t)(i * 40503u + 17u);
  h ^= h >> 13;
  if (op == RLX_PROD)
    return (h & 1) ? 1 : (rank < 2 && (h & 2) ? 2 : -1);
  return (double)(int)(h % 9) - 4; /* -4..4 */
}

static void put(void *b, size_t i, rlx_dtype_t dt, double v) {
  switch (dt) {
  case RLX_INT8: ((int8_t *)b)[i] = (int8_t)v; break;
  case RLX_UINT8: ((uint8_t *)b)[i] = (uint8_t)(v < 0 ? v + 5 : v); break;
  case RLX_INT32: ((int32_t *)b)[i] = (int32_t)v; break;
  case RLX_UINT32: ((uint32_t *)b)[i] = (uint32_t)(v < 0 ? v + 5 : v); break;
  case RLX_INT64: ((int64_t *)b)[i] = (int64_t)v; break;
  case RLX_UINT64: ((uint64_t *)b)[i] = (uint64_t)(v < 0 ? v + 5 : v); break;
  case RLX_FLOAT16: ((uint16_t *)b)[i] = rlx__f32_to_f16((float)v); break;
  case RLX_BFLOAT16: ((uint16_t *)b)[i] = rlx__f32_to_bf16((float)v); break;
  case RLX_FLOAT32: ((float *)b)[i] = (float)v; break;
  default: ((double *)b)[i] = v; break;
  }
}

static void *input(int rank, size_t n, rlx_dtype_t dt, rlx_op_t op) {
  void *b = malloc(n * rlx_dtype_size(dt) + 1);
  REQUIRE(b != NULL, "no memory");
  for (size_t i = 0; i < n; i++)
    put(b, i, dt, value(rank, i, op));
  return b;
}

/* The reduction of every rank's input (n elements from element off), in
 * rank order, with the library's own kernels: the values are exact, so
 * the algorithms' other orders must give the same bits. */
static void *reference(int p, size_t n, size_t off, rlx_dtype_t dt, rlx_op_t op) {
  size_t es = rlx_dtype_size(dt);
  unsigned char *acc = input(0, n + off, dt, op);
  for (int r = 1; r < p; r++) {
    unsigned char *in = input(r, n + off, dt, op);
    rlx__reduce(acc + off * es, acc + off * es, in + off * es, n, dt, op);
    free(in);
  }
  if (op == RLX_AVG)
    rlx__avg_finish(acc + off * es, n, dt, p);
  memmove(acc, acc + off * es, n * es);
  return acc;
}

static void sim_init(struct sim *s, int p, const struct rlx__algo *a, int kind, rlx_dtype_t dt,
                     rlx_op_t op, size_t count, int root, int cma, int oversubscribed) {
  memset(s, 0, sizeof(*s));
  s->p = p;
  s->p2p.cma = cma;
  s->p2p.oversubscribed = oversubscribed;
  for (int r = 0; r < p; r++) {
    struct rlx__op *o = &s->op[r];
    s->world[r] = r;
    o->kind = kind;
    o->call = rlx__call_name(kind);
    o->dt = dt;
    o->rop = op;
    o->count = count;
    o->esize = rlx_dtype_size(dt);
    o->root = root;
    o->p2p = &s->p2p;
    o->world = s->world;
    o->rank = r;
    o->size = p;
    o->algo = a;
  }
}

static const char *label(const struct rlx__algo *a, int p, rlx_dtype_t dt, rlx_op_t op,
                         size_t count, int in_place) {
  static char buf[160];
  snprintf(buf, sizeof(buf), "%s p=%d %s %s count=%zu%s", a->name, p, rlx_dtype_name(dt),
           rlx_op_name(op), count, in_place ? " in place" : "");
  return buf;
}

/* ---- the collectives ------------------------------------------------------ */

static void check_allreduce(const struct rlx__algo *a, int p, rlx_dtype_t dt, rlx_op_t op,
                            size_t count, int in_place, int cma, int over) {
  struct sim *s = malloc(sizeof(*s));
  size_t es = rlx_dtype_size(dt);
  void *src[PMAX], *dst[PMAX];
  sim_init(s, p, a, RLX__CK_ALLREDUCE, dt, op, count, 0, cma, over);
  for (int r = 0; r < p; r++) {
    src[r] = input(r, count, dt, op);
    dst[r] = in_place ? src[r] : malloc(count * es + 1);
    s->op[r].src = src[r];
    s->op[r].dst = dst[r];
  }
  run(s);
  REQUIRE(s->err[0] == '\0', "%s: %s", label(a, p, dt, op, count, in_place), s->err);
  void *want = reference(p, count, 0, dt, op);
  for (int r = 0; r < p; r++) {
    REQUIRE(memcmp(dst[r], want, count * es) == 0, "%s: rank %d wrong",
                  label(a, p, dt, op, count, in_place), r);
    if (!in_place) { /* the input is left as it was */
      void *orig = input(r, count, dt, op);
      REQUIRE(memcmp(src[r], orig, count * es) == 0, "%s: rank %d's input changed",
                    label(a, p, dt, op, count, in_place), r);
      free(orig);
    }
  }
  for (int r = 0; r < p; r++) {
    if (!in_place)
      free(dst[r]);
    free(src[r]);
  }
  free(want);
  free(s);
}

static void check_reduce(const struct rlx__algo *a, int p, rlx_dtype_t dt, rlx_op_t op,
                         size_t count, int root, int in_place) {
  struct sim *s = malloc(sizeof(*s));
  size_t es = rlx_dtype_size(dt);
  void *src[PMAX], *out = NULL;
  sim_init(s, p, a, RLX__CK_REDUCE, dt, op, count, root, 0, 0);
  for (int r = 0; r < p; r++) {
    src[r] = input(r, count, dt, op);
    s->op[r].src = src[r];
    s->op[r].dst = NULL;
  }
  out = in_place ? src[root] : malloc(count * es + 1);
  s->op[root].dst = out;
  run(s);
  REQUIRE(s->err[0] == '\0', "%s root=%d: %s", label(a, p, dt, op, count, in_place), root,
                s->err);
  void *want = reference(p, count, 0, dt, op);
  REQUIRE(memcmp(out, want, count * es) == 0, "%s root=%d: wrong",
                label(a, p, dt, op, count, in_place), root);
  if (!in_place)
    free(out);
  for (int r = 0; r < p; r++)
    free(src[r]);
  free(want);
  free(s);
}

static void check_bcast(const struct rlx__algo *a, int p, rlx_dtype_t dt, size_t count, int root) {
  struct sim *s = malloc(sizeof(*s));
  size_t es = rlx_dtype_size(dt);
  void *buf[PMAX];
  sim_init(s, p, a, RLX__CK_BCAST, dt, RLX_SUM, count, root, 0, 0);
  for (int r = 0; r < p; r++) {
    buf[r] = r == root ? input(root, count, dt, RLX_SUM) : calloc(count * es + 1, 1);
    s->op[r].src = s->op[r].dst = buf[r];
  }
  run(s);
  REQUIRE(s->err[0] == '\0', "%s root=%d: %s", label(a, p, dt, RLX_SUM, count, 0), root,
                s->err);
  for (int r = 0; r < p; r++)
    REQUIRE(memcmp(buf[r], buf[root], count * es) == 0, "%s root=%d: rank %d wrong",
                  label(a, p, dt, RLX_SUM, count, 0), root, r);
  for (int r = 0; r < p; r++)
    free(buf[r]);
  free(s);
}

static void check_allgather(const struct rlx__algo *a, int p, rlx_dtype_t dt, size_t count,
                            int in_place) {
  struct sim *s = malloc(sizeof(*s));
  size_t es = rlx_dtype_size(dt), blk = count * es;
  void *src[PMAX], *dst[PMAX];
  unsigned char *want = malloc(blk * (size_t)p + 1);
  sim_init(s, p, a, RLX__CK_ALLGATHER, dt, RLX_SUM, count, 0, 0, 0);
  for (int r = 0; r < p; r++) {
    void *in = input(r, count, dt, RLX_SUM);
    memcpy(want + (size_t)r * blk, in, blk);
    dst[r] = calloc(blk * (size_t)p + 1, 1);
    if (in_place) {
      memcpy((char *)dst[r] + (size_t)r * blk, in, blk);
      free(in);
      src[r] = NULL;
      s->op[r].src = (char *)dst[r] + (size_t)r * blk;
    } else {
      src[r] = in;
      s->op[r].src = in;
    }
    s->op[r].dst = dst[r];
  }
  run(s);
  REQUIRE(s->err[0] == '\0', "%s: %s", label(a, p, dt, RLX_SUM, count, in_place), s->err);
  for (int r = 0; r < p; r++)
    REQUIRE(memcmp(dst[r], want, blk * (size_t)p) == 0, "%s: rank %d wrong",
                  label(a, p, dt, RLX_SUM, count, in_place), r);
  for (int r = 0; r < p; r++) {
    free(src[r]);
    free(dst[r]);
  }
  free(want);
  free(s);
}

static void check_reduce_scatter(const struct rlx__algo *a, int p, rlx_dtype_t dt, rlx_op_t op,
                                 size_t count) {
  struct sim *s = malloc(sizeof(*s));
  size_t es = rlx_dtype_size(dt);
  void *src[PMAX], *dst[PMAX];
  sim_init(s, p, a, RLX__CK_REDUCE_SCATTER, dt, op, count, 0, 0, 0);
  for (int r = 0; r < p; r++) {
    src[r] = input(r, count * (size_t)p, dt, op);
    dst[r] = malloc(count * es + 1);
    s->op[r].src = src[r];
    s->op[r].dst = dst[r];
  }
  run(s);
  REQUIRE(s->err[0] == '\0', "%s: %s", label(a, p, dt, op, count, 0), s->err);
  unsigned char *want = reference(p, count * (size_t)p, 0, dt, op);
  for (int r = 0; r < p; r++)
    REQUIRE(memcmp(dst[r], want + (size_t)r * count * es, count * es) == 0,
            "%s: rank %d wrong", label(a, p, dt, op, count, 0), r);
  free(want);
  for (int r = 0; r < p; r++) {
    free(src[r]);
    free(dst[r]);
  }
  free(s);
}

/* ---- the matrix ------------------------------------------------------------ */

static const rlx_dtype_t dtypes[] = {RLX_INT8,    RLX_UINT8,    RLX_INT32,   RLX_UINT32,
                                     RLX_INT64,   RLX_UINT64,   RLX_FLOAT16, RLX_BFLOAT16,
                                     RLX_FLOAT32, RLX_FLOAT64};
static const size_t counts[] = {1, 7, 1023};
/* per rank, for the collectives whose vector is p blocks */
static const size_t block_counts[] = {1, 7, 130};

static int op_valid(rlx_op_t op, rlx_dtype_t dt) {
  return rlx__dtype_is_float(dt) ? op < RLX_BAND : op != RLX_AVG;
}
static int pow2(int p) { return (p & (p - 1)) == 0; }

START_TEST(allreduce_every_algorithm) {
  const struct rlx__algo *algos[] = {&rlx__allreduce_rd, &rlx__allreduce_rabenseifner,
                                     &rlx__allreduce_ring};
  int p = _i + 1;
  for (size_t a = 0; a < 3; a++)
    for (size_t d = 0; d < sizeof(dtypes) / sizeof(dtypes[0]); d++)
      for (rlx_op_t op = 0; op < RLX_OP_COUNT; op++)
        for (size_t c = 0; c < sizeof(counts) / sizeof(counts[0]); c++)
          if (op_valid(op, dtypes[d]))
            check_allreduce(algos[a], p, dtypes[d], op, counts[c], (int)(c + d) % 2, 0, 0);
}
END_TEST

START_TEST(rooted_every_algorithm) {
  int p = _i + 1;
  for (size_t d = 0; d < sizeof(dtypes) / sizeof(dtypes[0]); d++)
    for (size_t c = 0; c < sizeof(counts) / sizeof(counts[0]); c++) {
      int root = (int)(c * 5 + d) % p;
      check_bcast(&rlx__bcast_binomial, p, dtypes[d], counts[c], root);
      check_bcast(&rlx__bcast_scatter_allgather, p, dtypes[d], counts[c], root);
      for (rlx_op_t op = 0; op < RLX_OP_COUNT; op++)
        if (op_valid(op, dtypes[d]))
          check_reduce(&rlx__reduce_binomial, p, dtypes[d], op, counts[c], root,
                       (int)(op + c) % 2);
    }
}
END_TEST

START_TEST(gathering_every_algorithm) {
  int p = _i + 1;
  for (size_t d = 0; d < sizeof(dtypes) / sizeof(dtypes[0]); d++)
    for (size_t c = 0; c < sizeof(block_counts) / sizeof(block_counts[0]); c++) {
      size_t n = block_counts[c];
      check_allgather(&rlx__allgather_ring, p, dtypes[d], n, (int)c % 2);
      if (pow2(p))
        check_allgather(&rlx__allgather_rd, p, dtypes[d], n, (int)(c + 1) % 2);
      check_allgather(&rlx__allgather_bruck, p, dtypes[d], n, (int)c % 2);
      for (rlx_op_t op = 0; op < RLX_OP_COUNT; op++)
        if (op_valid(op, dtypes[d]))
          check_reduce_scatter(&rlx__reduce_scatter_ring, p, dtypes[d], op, n);
    }
}
END_TEST

START_TEST(barrier_every_size) {
  struct sim *s = malloc(sizeof(*s));
  sim_init(s, _i + 1, &rlx__barrier_dissemination, RLX__CK_BARRIER, RLX_UINT8, RLX_SUM, 0, 0, 0,
           0);
  run(s);
  REQUIRE(s->err[0] == '\0', "barrier p=%d: %s", _i + 1, s->err);
  free(s);
}
END_TEST

/* Big enough for several segments per chunk, so the ring's lanes and the
 * segment arithmetic run: through the socket (two lanes of 256 KiB),
 * by reference (one lane of 1 MiB) and oversubscribed (512 KiB). */
START_TEST(segmented_paths) {
  for (int p = 2; p <= 2; p++) {
    size_t big = (size_t)p * RLX__RING_LANES_FROM * RLX__RING_SEG + 3; /* int8 */
    check_allreduce(&rlx__allreduce_ring, p, RLX_INT8, RLX_SUM, big, 0, 0, 0);
    check_allreduce(&rlx__allreduce_ring, p, RLX_INT8, RLX_MAX, big, 1, 1, 0);
    check_allreduce(&rlx__allreduce_ring, p, RLX_INT8, RLX_SUM, big, 0, 1, 1);
    check_reduce_scatter(&rlx__reduce_scatter_ring, p, RLX_INT8, RLX_SUM, big / (size_t)p);
    check_allgather(&rlx__allgather_ring, p, RLX_INT8, (RLX__RING_LANES_FROM + 1) *
                    RLX__ALLGATHER_SEG + 5, p % 2);
  }
}
END_TEST

/* ---- selection --------------------------------------------------------------- */

static const char *sel(int kind, size_t bytes, int n, const char *forced) {
  const struct rlx__algo *a = rlx__select(kind, bytes, n, forced);
  return a ? a->name : "(none)";
}

START_TEST(selection_table) {
  /* allreduce: recursive doubling, then Rabenseifner, then the ring */
  ck_assert_str_eq(sel(RLX__CK_ALLREDUCE, 8, 4, ""), "recursive-doubling");
  ck_assert_str_eq(sel(RLX__CK_ALLREDUCE, RLX__AR_RD_MAX, 4, NULL), "recursive-doubling");
  ck_assert_str_eq(sel(RLX__CK_ALLREDUCE, RLX__AR_RD_MAX + 1, 4, NULL), "rabenseifner");
  ck_assert_str_eq(sel(RLX__CK_ALLREDUCE, RLX__AR_RABENSEIFNER_MAX_2, 2, NULL), "rabenseifner");
  ck_assert_str_eq(sel(RLX__CK_ALLREDUCE, RLX__AR_RABENSEIFNER_MAX_2 + 1, 2, NULL), "ring");
  ck_assert_str_eq(sel(RLX__CK_ALLREDUCE, 256u << 10, 4, NULL), "rabenseifner");
  ck_assert_str_eq(sel(RLX__CK_ALLREDUCE, (256u << 10) + 1, 4, NULL), "ring");
  ck_assert_str_eq(sel(RLX__CK_ALLREDUCE, 1u << 20, 16, NULL), "rabenseifner");
  ck_assert_str_eq(sel(RLX__CK_ALLREDUCE, (1u << 20) + 1, 16, NULL), "ring");
  ck_assert_str_eq(sel(RLX__CK_ALLREDUCE, 8, 1, NULL), "ring");
  /* forced, by name or alias; one name each, as logs and stats show it */
  ck_assert_str_eq(sel(RLX__CK_ALLREDUCE, 8, 4, "ring"), "ring");
  ck_assert_str_eq(sel(RLX__CK_ALLREDUCE, 1u << 24, 4, "rd"), "recursive-doubling");
  ck_assert_str_eq(sel(RLX__CK_ALLREDUCE, 1u << 24, 4, "recursive-doubling"),
                   "recursive-doubling");
  ck_assert_str_eq(sel(RLX__CK_ALLREDUCE, 8, 4, "rabenseifner"), "rabenseifner");
  ck_assert_str_eq(sel(RLX__CK_ALLREDUCE, 8, 4, "auto"), "recursive-doubling");
  ck_assert_str_eq(sel(RLX__CK_ALLREDUCE, 8, 4, "halving-doubling"), "(none)");
  ck_assert_str_eq(sel(RLX__CK_ALLREDUCE, 8, 4, "binomial"), "(none)");
  /* bcast */
  ck_assert_str_eq(sel(RLX__CK_BCAST, RLX__BCAST_BINOMIAL_MAX, 8, NULL), "binomial");
  ck_assert_str_eq(sel(RLX__CK_BCAST, RLX__BCAST_BINOMIAL_MAX + 1, 8, NULL), "scatter-allgather");
  ck_assert_str_eq(sel(RLX__CK_BCAST, 1u << 26, 2, NULL), "binomial");
  ck_assert_str_eq(sel(RLX__CK_BCAST, 8, 8, "scatter-allgather"), "scatter-allgather");
  /* allgather: recursive doubling only on a power of two, Bruck's on any
   * other count, the ring for large */
  ck_assert_str_eq(sel(RLX__CK_ALLGATHER, 64, 8, NULL), "recursive-doubling");
  ck_assert_str_eq(sel(RLX__CK_ALLGATHER, 64, 6, NULL), "bruck");
  ck_assert_str_eq(sel(RLX__CK_ALLGATHER, 64, 3, NULL), "ring");
  ck_assert_str_eq(sel(RLX__CK_ALLGATHER, RLX__AG_RD_MAX + 1, 8, NULL), "ring");
  ck_assert_str_eq(sel(RLX__CK_ALLGATHER, RLX__AG_BRUCK_MAX + 1, 6, NULL), "ring");
  ck_assert_str_eq(sel(RLX__CK_ALLGATHER, 64, 6, "rd"), "bruck");
  ck_assert_str_eq(sel(RLX__CK_ALLGATHER, 64, 8, "bruck"), "bruck");
  /* one algorithm each */
  ck_assert_str_eq(sel(RLX__CK_REDUCE, 1u << 24, 8, NULL), "binomial");
  ck_assert_str_eq(sel(RLX__CK_REDUCE_SCATTER, 8, 8, NULL), "ring");
  ck_assert_str_eq(sel(RLX__CK_BARRIER, 0, 8, NULL), "dissemination");
  ck_assert_str_eq(sel(RLX__CK_FINALIZE, 0, 8, NULL), "dissemination");
  /* the names RLX_<COLL>_ALGO takes, from the same tables */
  char names[160];
  ck_assert_str_eq(rlx__algo_names(RLX__CK_ALLREDUCE, names, sizeof names),
                   "auto, recursive-doubling (or rd), rabenseifner, ring, shm");
  ck_assert_str_eq(rlx__algo_names(RLX__CK_BCAST, names, sizeof names),
                   "auto, binomial, scatter-allgather, shm");
  ck_assert_str_eq(rlx__algo_names(RLX__CK_ALLGATHER, names, sizeof names),
                   "auto, recursive-doubling (or rd), bruck, ring, shm");
  ck_assert(rlx__algo_known(RLX__CK_ALLREDUCE, "rd") && rlx__algo_known(RLX__CK_BCAST, "shm") &&
            rlx__algo_known(RLX__CK_ALLGATHER, "bruck") && rlx__algo_known(RLX__CK_BCAST, "auto"));
  ck_assert(!rlx__algo_known(RLX__CK_ALLREDUCE, "tree") && !rlx__algo_known(RLX__CK_BCAST, "ring") &&
            !rlx__algo_known(RLX__CK_ALLGATHER, "binomial"));
}
END_TEST

static void add(Suite *s, const char *name, const TTest *t, int loop) {
  TCase *tc = tcase_create(name);
  /* ALGOS_PMAX: fewer rank counts (CI's sanitizer phase: 1-9, every shape
   * of power of two and not, at a third of the time) */
  const char *e = getenv("ALGOS_PMAX");
  int pmax = e != NULL && atoi(e) >= 1 && atoi(e) <= PMAX ? atoi(e) : PMAX;
  if (loop)
    tcase_add_loop_test(tc, t, 0, pmax);
  else
    tcase_add_test(tc, t);
  tcase_set_timeout(tc, 300);
  suite_add_tcase(s, tc);
}

int main(void) {
  Suite *s = suite_create("algos");
  add(s, "allreduce", allreduce_every_algorithm, 1);
  add(s, "rooted", rooted_every_algorithm, 1);
  add(s, "gathering", gathering_every_algorithm, 1);
  add(s, "barrier", barrier_every_size, 1);
  add(s, "segments", segmented_paths, 0);
  add(s, "selection", selection_table, 0);
  return rlx_run_suite(s);
}
