/* Allreduce in a communicator's shared segment (shm_group.h), for members
 * of one host. Small vectors: every rank posts its vector
 * and reduces all of them (one step, one wait: latency is the cost). Above
 * it, in chunks, pipelined: every rank posts a chunk, reduces its own
 * slice of it straight from every rank's slot into the shared result, and
 * copies the whole reduced chunk out, while posting the next chunk. Every
 * element is reduced by one rank in rank order, so all ranks get the same
 * bits. rlx_reduce runs the same steps and only the root copies out.
 * (lib/tuning.h says where the two meet.) */
#include <string.h>
#include "base/fastdiv.h"
#include "base/tuning.h"
#include "coll.h"
#include "shm_group.h"
#include "base/copy.h"

/* Half precision: every rank's values widened and combined in float32,
 * rounded to the half type once at the end (a step-by-step half sum
 * loses what falls under half an ulp at each step: 2048 + 1 + 1 stays
 * 2048 in float16, though 2050 is representable). */
static void reduce_half(struct rlx__op *op, struct rlx__shm_group *g, uint64_t step, size_t bytes,
                        size_t off, size_t count, void *out) {
  enum { BLOCK = 256 };
  float acc[BLOCK], in[BLOCK];
  int bf = op->dt == RLX_BFLOAT16;
  for (size_t i = 0; i < count; i += BLOCK) {
    size_t k = count - i < BLOCK ? count - i : BLOCK, at = off + i * 2;
    for (int r = 0; r < g->n; r++) {
      const uint16_t *h = (const uint16_t *)(rlx__shmg_data(g, r, step, bytes) + at);
      float *dst = r == 0 ? acc : in;
      if (bf)
        rlx__bf16_to_f32_n(dst, h, k);
      else
        rlx__f16_to_f32_n(dst, h, k);
      if (r > 0)
        rlx__reduce(acc, acc, in, k, RLX_FLOAT32, op->rop);
    }
    if (op->rop == RLX_AVG)
      rlx__avg_finish(acc, k, RLX_FLOAT32, g->n);
    uint16_t *o = (uint16_t *)((char *)out + i * 2);
    if (bf)
      rlx__f32_to_bf16_n(o, acc, k);
    else
      rlx__f32_to_f16_n(o, acc, k);
  }
}

/* out = data[0] op data[1] op ... over count elements at byte offset
 * off of the ranks' data of step, whose whole size is bytes. */
void rlx__shm_reduce_slots(struct rlx__op *op, struct rlx__shm_group *g, uint64_t step,
                           size_t bytes, size_t off, size_t count, void *out) {
  if (count == 0)
    return;
  if (op->dt == RLX_FLOAT16 || op->dt == RLX_BFLOAT16) {
    reduce_half(op, g, step, bytes, off, count, out);
    return;
  }
  rlx__reduce(out, rlx__shmg_data(g, 0, step, bytes) + off,
              rlx__shmg_data(g, 1, step, bytes) + off, count, op->dt, op->rop);
  for (int r = 2; r < g->n; r++)
    rlx__reduce(out, out, rlx__shmg_data(g, r, step, bytes) + off, count, op->dt, op->rop);
  if (op->rop == RLX_AVG)
    rlx__avg_finish(out, count, op->dt, g->n);
}

static int flat(struct rlx__op *op, struct rlx__shm_group *g, int all) {
  size_t bytes = op->count * op->esize;
  uint64_t s = ++g->step;
  int rc;
  if ((rc = rlx__shmg_post(g, op, s, op->src, bytes, bytes)) != RLX_OK)
    return rc;
  /* The root reads our slot before it posts again; we only wait until it
   * entered the call, to compare its call with ours: a root that names
   * another root would otherwise go unseen (both would just post). */
  if (!all && g->me != op->root)
    return rlx__shmg_wait_arrived(g, op, op->root, s);
  if ((rc = rlx__shmg_wait_arrived(g, op, -1, s)) != RLX_OK)
    return rc;
  rlx__shm_reduce_slots(op, g, s, bytes, 0, op->count, op->dst);
  return RLX_OK;
}

/* Elements of chunk k, and bytes of a whole chunk. */
static size_t chunk_bytes(const struct rlx__shm_group *g) {
  size_t c = (size_t)g->n * RLX__SHMG_CHUNK_PER_RANK;
  if (c < RLX__SHMG_CHUNK_MIN)
    c = RLX__SHMG_CHUNK_MIN;
  if (c > g->slot)
    c = g->slot;
  return c; /* (whole elements of any dtype: each bound is a multiple of 8) */
}

static void post(struct rlx__op *op, struct rlx__shm_group *g, uint64_t s, size_t off, size_t len) {
  rlx__copy(rlx__shmg_slot(g, g->me, s), (const char *)op->src + off, len);
  rlx__shmg_arrive(g, s);
}

static int sliced(struct rlx__op *op, struct rlx__shm_group *g, int all) {
  size_t es = op->esize, total = op->count * es, cb = chunk_bytes(g);
  size_t nchunks = (total + cb - 1) / cb;
  int rc, copy_out = all || g->me == op->root;
  uint64_t s = ++g->step;
  if ((rc = rlx__shmg_wait_room(g, op, s)) != RLX_OK)
    return rc;
  post(op, g, s, 0, total < cb ? total : cb);
  for (size_t k = 0; k < nchunks; k++) {
    size_t off = k * cb, len = total - off < cb ? total - off : cb, cnt = rlx__per_elem(len, es);
    size_t per = cnt / (size_t)g->n, extra = cnt % (size_t)g->n, me = (size_t)g->me;
    size_t first = me * per + (me < extra ? me : extra), mine = per + (me < extra);
    if ((rc = rlx__shmg_wait_arrived(g, op, -1, s)) != RLX_OK)
      return rc;
    rlx__shm_reduce_slots(op, g, s, cb, first * es, mine, rlx__shmg_result(g, s) + first * es);
    rlx__shmg_reduced(g, s);
    uint64_t next = s;
    if (k + 1 < nchunks) { /* the next chunk goes in while the others reduce */
      next = ++g->step;
      size_t noff = off + cb;
      if ((rc = rlx__shmg_wait_room(g, op, next)) != RLX_OK)
        return rc;
      post(op, g, next, noff, total - noff < cb ? total - noff : cb);
    }
    if (copy_out) {
      if ((rc = rlx__shmg_wait_reduced(g, op, -1, s)) != RLX_OK)
        return rc;
      rlx__copy((char *)op->dst + off, rlx__shmg_result(g, s), len);
    }
    s = next;
  }
  return RLX_OK;
}

int rlx__shm_reduce_run(struct rlx__op *op, int all) {
  struct rlx__shm_group *g = op->shm;
  int rc;
  if ((rc = rlx__shmg_begin(g, op)) != RLX_OK)
    return rc;
  size_t bytes = op->count * op->esize;
  int flat_ok = bytes <= RLX__SHMG_FLAT_MAX && bytes * (size_t)g->n <= RLX__SHMG_FLAT_READ;
  return flat_ok || bytes <= RLX__SHMG_INLINE ? flat(op, g, all) : sliced(op, g, all);
}

static int run(struct rlx__op *op) { return rlx__shm_reduce_run(op, 1); }
static size_t setup(struct rlx__op *op) {
  (void)op;
  return 0;
}

const struct rlx__algo rlx__allreduce_shm = {"shm", NULL, setup, NULL, run};
