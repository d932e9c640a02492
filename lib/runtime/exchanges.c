/* The collectives that move blocks rather than reduce them: gather,
 * scatter and all-to-all, even (a count per rank) and uneven (counts and
 * displacements in elements, the v-forms), blocking and not. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "base/fastdiv.h"
#include "base/tuning.h"
#include "runtime/calls.h"

/* rlx_gather and rlx_scatter: blocks of count elements between every rank
 * and the root's p blocks (recvbuf of gather, sendbuf of scatter, only
 * read on the root). RLX_IN_PLACE: the root's own block stays where it is
 * (gather: as sendbuf; scatter: as recvbuf). */
/* (inline in each public form, as rooted_v) */
__attribute__((always_inline)) static inline int
rooted(int kind, const char *call, const void *sendbuf, void *recvbuf, size_t count,
       rlx_dtype_t dt, int root, rlx_comm_t *c, rlx_request_t **req) {
  struct rlx_request rq;
  size_t es;
  int rc;
  if ((rc = rlx__call_check_comm(call, c)) != RLX_OK ||
      (rc = rlx__call_check_type(call, dt, count, &es)) != RLX_OK ||
      (rc = rlx__call_check_root(call, root, c)) != RLX_OK)
    return rc;
  if (count == 0)
    return rlx__call_done(req);
  int at_root = c->rank == root, gather = kind == RLX__CK_GATHER;
  size_t block = count * es;
  const void *src = sendbuf;
  void *dst = recvbuf;
  if (gather) {
    if (sendbuf == RLX_IN_PLACE && !at_root)
      return rlx__err(RLX_ERR_ARG, "%s: RLX_IN_PLACE as sendbuf is for the root only", call);
    if ((sendbuf == NULL) || (at_root && recvbuf == NULL))
      return rlx__err(RLX_ERR_ARG, "%s: %s is NULL", call, sendbuf == NULL ? "sendbuf" : "recvbuf");
    if (at_root && (rc = rlx__call_not_in_place(call, "recvbuf", recvbuf)) != RLX_OK)
      return rc;
    if (sendbuf == RLX_IN_PLACE)
      src = (char *)recvbuf + (size_t)root * block;
  } else {
    if (recvbuf == RLX_IN_PLACE && !at_root)
      return rlx__err(RLX_ERR_ARG, "%s: RLX_IN_PLACE as recvbuf is for the root only", call);
    if ((recvbuf == NULL) || (at_root && sendbuf == NULL))
      return rlx__err(RLX_ERR_ARG, "%s: %s is NULL", call, recvbuf == NULL ? "recvbuf" : "sendbuf");
    if (at_root && (rc = rlx__call_not_in_place(call, "sendbuf", sendbuf)) != RLX_OK)
      return rc;
    if (recvbuf == RLX_IN_PLACE)
      dst = (char *)sendbuf + (size_t)root * block;
  }
  if (c->size == 1) /* (the root: its own block) */
    return rlx__call_alone(c, kind, call, dt, RLX_SUM, count, root, src, dst, block, req);
  rlx__call_fill(&rq, kind, call, dt, RLX_SUM, count, es, root, src, dst);
  if ((rc = rlx__call_pick(&rq.op, c, block * (size_t)c->size, "", req == NULL)) != RLX_OK)
    return rc;
  return rlx__call_launch(c, &rq, req);
}

int rlx_gather(const void *sendbuf, void *recvbuf, size_t count, rlx_dtype_t dt, int root,
               rlx_comm_t *c) {
  return rlx__refused(c, rooted(RLX__CK_GATHER, "rlx_gather", sendbuf, recvbuf, count, dt, root,
                                c, NULL));
}

int rlx_scatter(const void *sendbuf, void *recvbuf, size_t count, rlx_dtype_t dt, int root,
                rlx_comm_t *c) {
  return rlx__refused(c, rooted(RLX__CK_SCATTER, "rlx_scatter", sendbuf, recvbuf, count, dt,
                                root, c, NULL));
}

int rlx_igather(const void *sendbuf, void *recvbuf, size_t count, rlx_dtype_t dt, int root,
                rlx_comm_t *c, rlx_request_t **req) {
  RLX__NEED_REQ("rlx_igather");
  return rlx__refused(c, rooted(RLX__CK_GATHER, "rlx_igather", sendbuf, recvbuf, count, dt, root,
                                c, req));
}

int rlx_iscatter(const void *sendbuf, void *recvbuf, size_t count, rlx_dtype_t dt, int root,
                 rlx_comm_t *c, rlx_request_t **req) {
  RLX__NEED_REQ("rlx_iscatter");
  return rlx__refused(c, rooted(RLX__CK_SCATTER, "rlx_iscatter", sendbuf, recvbuf, count, dt,
                                root, c, req));
}

/* rlx_alltoall: block j of sendbuf to rank j, block i of recvbuf from rank
 * i. Not in place (MPI allows it; pairwise exchange would overwrite a
 * block before sending it). */
static int alltoall(const char *call, const void *sendbuf, void *recvbuf, size_t count,
                    rlx_dtype_t dt, rlx_comm_t *c, rlx_request_t **req) {
  struct rlx_request rq;
  size_t es;
  int rc;
  if ((rc = rlx__call_check_comm(call, c)) != RLX_OK ||
      (rc = rlx__call_check_type(call, dt, count, &es)) != RLX_OK)
    return rc;
  if (count == 0)
    return rlx__call_done(req);
  if (sendbuf == NULL || recvbuf == NULL)
    return rlx__err(RLX_ERR_ARG, "%s: %s is NULL", call, sendbuf == NULL ? "sendbuf" : "recvbuf");
  if (sendbuf == RLX_IN_PLACE || recvbuf == RLX_IN_PLACE || sendbuf == recvbuf)
    return rlx__err(RLX_ERR_ARG, "%s: sendbuf and recvbuf must be two buffers (no RLX_IN_PLACE)",
                    call);
  if (c->size == 1)
    return rlx__call_alone(c, RLX__CK_ALLTOALL, call, dt, RLX_SUM, count, 0, sendbuf, recvbuf,
                           count * es, req);
  rlx__call_fill(&rq, RLX__CK_ALLTOALL, call, dt, RLX_SUM, count, es, 0, sendbuf, recvbuf);
  if ((rc = rlx__call_pick(&rq.op, c, count * es * (size_t)c->size, "", req == NULL)) != RLX_OK)
    return rc;
  return rlx__call_launch(c, &rq, req);
}

int rlx_alltoall(const void *sendbuf, void *recvbuf, size_t count, rlx_dtype_t dt,
                 rlx_comm_t *c) {
  return rlx__refused(c, alltoall("rlx_alltoall", sendbuf, recvbuf, count, dt, c, NULL));
}

int rlx_ialltoall(const void *sendbuf, void *recvbuf, size_t count, rlx_dtype_t dt,
                  rlx_comm_t *c, rlx_request_t **req) {
  RLX__NEED_REQ("rlx_ialltoall");
  return rlx__refused(c, alltoall("rlx_ialltoall", sendbuf, recvbuf, count, dt, c, req));
}


/* ---- the uneven forms -------------------------------------------------------- */

/* Why counts[i] / displs[i] fail check_blocks (its slow path). */
static int blocks_refused(const char *call, const char *what, const size_t *counts,
                          const size_t *displs, int i, size_t es, const void *buf) {
  size_t most = rlx__per_elem((SIZE_MAX / 2) / 4096, es);
  if (counts[i] > most || displs[i] > most)
    return rlx__err(RLX_ERR_ARG, "%s: %scounts[%d] or %sdispls[%d] is too large", call, what, i,
                    what, i);
  if (counts[i] > rlx__per_elem((size_t)RLX__UNEVEN_BLOCK_MAX, es))
    return rlx__err(RLX_ERR_ARG, "%s: %scounts[%d] is over 1 GiB (a block of an uneven call "
                    "is at most that)", call, what, i);
  return rlx__err(RLX_ERR_ARG, "%s: the buffer is NULL with %scounts[%d] = %zu", call, what, i,
                  counts[i]);
}

/* counts[i] elements at displs[i] for each of the p ranks: in range, and
 * (checked) what they add up to in elements past the buffer's start. */
__attribute__((always_inline)) static inline int
check_blocks(const char *call, const char *what, const size_t *counts, const size_t *displs, int p,
             size_t es, const void *buf) {
  if (counts == NULL || displs == NULL)
    return rlx__err(RLX_ERR_ARG, "%s: %s%s is NULL", call, what,
                    counts == NULL ? "counts" : "displs");
  size_t most = rlx__per_elem((SIZE_MAX / 2) / 4096, es),
         block_max = rlx__per_elem((size_t)RLX__UNEVEN_BLOCK_MAX, es);
  /* One test a rank on the way through (a small call's root runs this
   * every call); a NULL buffer is a block of at most 0 elements. */
  if (buf == NULL)
    block_max = 0;
  for (int i = 0; i < p; i++)
    if (counts[i] > block_max || displs[i] > most)
      return blocks_refused(call, what, counts, displs, i, es, buf);
  return RLX_OK;
}

/* (inline in each public form: the kind known, half its tests go, and
 * its fourteen arguments stay in registers) */
__attribute__((always_inline)) static inline int
rooted_v(int kind, const char *call, const void *sendbuf, size_t sendcount,
         const size_t *sendcounts, const size_t *sdispls, void *recvbuf, size_t recvcount,
         const size_t *recvcounts, const size_t *rdispls, rlx_dtype_t dt, int root, rlx_comm_t *c,
         rlx_request_t **req) {
  struct rlx_request rq;
  size_t es;
  int rc, gather = kind == RLX__CK_GATHERV;
  if ((rc = rlx__call_check_comm(call, c)) != RLX_OK ||
      (rc = rlx__call_check_type(call, dt, gather ? sendcount : recvcount, &es)) != RLX_OK ||
      (rc = rlx__call_check_root(call, root, c)) != RLX_OK)
    return rc;
  int at_root = c->rank == root;
  size_t own = gather ? sendcount : recvcount;
  const void *src = sendbuf;
  void *dst = recvbuf;
  if (at_root) {
    if (gather ? (rc = check_blocks(call, "recv", recvcounts, rdispls, c->size, es, recvbuf))
               : (rc = check_blocks(call, "send", sendcounts, sdispls, c->size, es, sendbuf)))
      return rc;
    const size_t *mine = gather ? recvcounts : sendcounts;
    if ((gather ? sendbuf : recvbuf) == RLX_IN_PLACE)
      own = mine[root];
    else if (own != mine[root])
      return rlx__err(RLX_ERR_ARG, "%s: the root's own block is %zu elements where its %scounts "
                      "say %zu", call, own, gather ? "recv" : "send", mine[root]);
  }
  if (gather) {
    if (sendbuf == RLX_IN_PLACE && !at_root)
      return rlx__err(RLX_ERR_ARG, "%s: RLX_IN_PLACE as sendbuf is for the root only", call);
    if (sendbuf == NULL && own > 0)
      return rlx__err(RLX_ERR_ARG, "%s: sendbuf is NULL", call);
    if (at_root && (rc = rlx__call_not_in_place(call, "recvbuf", recvbuf)) != RLX_OK)
      return rc;
    if (sendbuf == RLX_IN_PLACE)
      src = (char *)recvbuf + rdispls[root] * es;
  } else {
    if (recvbuf == RLX_IN_PLACE && !at_root)
      return rlx__err(RLX_ERR_ARG, "%s: RLX_IN_PLACE as recvbuf is for the root only", call);
    if (recvbuf == NULL && own > 0)
      return rlx__err(RLX_ERR_ARG, "%s: recvbuf is NULL", call);
    if (at_root && (rc = rlx__call_not_in_place(call, "sendbuf", sendbuf)) != RLX_OK)
      return rc;
    if (recvbuf == RLX_IN_PLACE)
      dst = (char *)sendbuf + sdispls[root] * es;
  }
  if (c->size == 1) { /* (the root: its own block, at its displacement) */
    const void *from = src;
    void *to = dst;
    if (own > 0 && gather)
      to = (char *)recvbuf + rdispls[0] * es;
    else if (own > 0)
      from = (const char *)sendbuf + sdispls[0] * es;
    return rlx__call_alone(c, kind, call, dt, RLX_SUM, own, root, from, to, own * es, req);
  }
  rlx__call_fill(&rq, kind, call, dt, RLX_SUM, own, es, root, src, dst);
  if (at_root && gather) {
    rq.op.counts = recvcounts;
    rq.op.displs = rdispls;
  } else if (at_root) {
    rq.op.scounts = sendcounts;
    rq.op.sdispls = sdispls;
  }
  if ((rc = rlx__call_pick(&rq.op, c, own * es, "", req == NULL)) != RLX_OK)
    return rc;
  return rlx__call_launch(c, &rq, req);
}

int rlx_gatherv(const void *sendbuf, size_t sendcount, void *recvbuf, const size_t *recvcounts,
                const size_t *displs, rlx_dtype_t dt, int root, rlx_comm_t *c) {
  return rlx__refused(c, rooted_v(RLX__CK_GATHERV, "rlx_gatherv", sendbuf, sendcount, NULL, NULL,
                                  recvbuf, 0, recvcounts, displs, dt, root, c, NULL));
}

int rlx_scatterv(const void *sendbuf, const size_t *sendcounts, const size_t *displs,
                 void *recvbuf, size_t recvcount, rlx_dtype_t dt, int root, rlx_comm_t *c) {
  return rlx__refused(c, rooted_v(RLX__CK_SCATTERV, "rlx_scatterv", sendbuf, 0, sendcounts,
                                  displs, recvbuf, recvcount, NULL, NULL, dt, root, c, NULL));
}

int rlx_igatherv(const void *sendbuf, size_t sendcount, void *recvbuf, const size_t *recvcounts,
                 const size_t *displs, rlx_dtype_t dt, int root, rlx_comm_t *c,
                 rlx_request_t **req) {
  RLX__NEED_REQ("rlx_igatherv");
  return rlx__refused(c, rooted_v(RLX__CK_GATHERV, "rlx_igatherv", sendbuf, sendcount, NULL, NULL,
                                  recvbuf, 0, recvcounts, displs, dt, root, c, req));
}

int rlx_iscatterv(const void *sendbuf, const size_t *sendcounts, const size_t *displs,
                  void *recvbuf, size_t recvcount, rlx_dtype_t dt, int root, rlx_comm_t *c,
                  rlx_request_t **req) {
  RLX__NEED_REQ("rlx_iscatterv");
  return rlx__refused(c, rooted_v(RLX__CK_SCATTERV, "rlx_iscatterv", sendbuf, 0, sendcounts,
                                  displs, recvbuf, recvcount, NULL, NULL, dt, root, c, req));
}

static int allgatherv(const char *call, const void *sendbuf, size_t sendcount, void *recvbuf,
                      const size_t *recvcounts, const size_t *displs, rlx_dtype_t dt,
                      rlx_comm_t *c, rlx_request_t **req) {
  struct rlx_request rq;
  size_t es;
  int rc;
  if ((rc = rlx__call_check_comm(call, c)) != RLX_OK ||
      (rc = rlx__call_check_type(call, dt, sendcount, &es)) != RLX_OK ||
      (rc = check_blocks(call, "recv", recvcounts, displs, c->size, es, recvbuf)) != RLX_OK ||
      (rc = rlx__call_not_in_place(call, "recvbuf", recvbuf)) != RLX_OK)
    return rc;
  if (sendbuf == RLX_IN_PLACE)
    sendcount = recvcounts[c->rank];
  if (sendcount != recvcounts[c->rank])
    return rlx__err(RLX_ERR_ARG, "%s: sendcount %zu where recvcounts[%d] is %zu", call,
                    sendcount, c->rank, recvcounts[c->rank]);
  if (sendbuf == NULL && sendcount > 0)
    return rlx__err(RLX_ERR_ARG, "%s: sendbuf is NULL", call);
  const void *src = sendbuf == RLX_IN_PLACE ? (char *)recvbuf + displs[c->rank] * es : sendbuf;
  /* The call's count is the total and its root the counts' hash (call.h):
   * ranks that disagree on any count fail at once, on every rank, and
   * the shared segment's steps, counted from the counts, agree. */
  size_t total;
  uint32_t hash = rlx__call_counts_hash(recvcounts, c->size, &total);
  if (c->size == 1)
    return rlx__call_alone(c, RLX__CK_ALLGATHERV, call, dt, RLX_SUM, sendcount, 0, src,
                           (char *)recvbuf + (sendcount ? displs[0] * es : 0), sendcount * es,
                           req);
  rlx__call_fill(&rq, RLX__CK_ALLGATHERV, call, dt, RLX_SUM, total, es, (int)hash, src, recvbuf);
  rq.op.counts = recvcounts;
  rq.op.displs = displs;
  if ((rc = rlx__call_pick(&rq.op, c, total * es, "", req == NULL)) != RLX_OK)
    return rc;
  return rlx__call_launch(c, &rq, req);
}

int rlx_allgatherv(const void *sendbuf, size_t sendcount, void *recvbuf, const size_t *recvcounts,
                   const size_t *displs, rlx_dtype_t dt, rlx_comm_t *c) {
  return rlx__refused(c, allgatherv("rlx_allgatherv", sendbuf, sendcount, recvbuf, recvcounts,
                                    displs, dt, c, NULL));
}

int rlx_iallgatherv(const void *sendbuf, size_t sendcount, void *recvbuf,
                    const size_t *recvcounts, const size_t *displs, rlx_dtype_t dt,
                    rlx_comm_t *c, rlx_request_t **req) {
  RLX__NEED_REQ("rlx_iallgatherv");
  return rlx__refused(c, allgatherv("rlx_iallgatherv", sendbuf, sendcount, recvbuf, recvcounts,
                                    displs, dt, c, req));
}

static int alltoallv(const char *call, const void *sendbuf, const size_t *sendcounts,
                     const size_t *sdispls, void *recvbuf, const size_t *recvcounts,
                     const size_t *rdispls, rlx_dtype_t dt, rlx_comm_t *c, rlx_request_t **req) {
  struct rlx_request rq;
  size_t es;
  int rc;
  if ((rc = rlx__call_check_comm(call, c)) != RLX_OK ||
      (rc = rlx__call_check_type(call, dt, 0, &es)) != RLX_OK)
    return rc;
  if (sendbuf == RLX_IN_PLACE || recvbuf == RLX_IN_PLACE || (sendbuf == recvbuf && sendbuf))
    return rlx__err(RLX_ERR_ARG, "%s: sendbuf and recvbuf must be two buffers (no RLX_IN_PLACE)",
                    call);
  if ((rc = check_blocks(call, "send", sendcounts, sdispls, c->size, es, sendbuf)) != RLX_OK ||
      (rc = check_blocks(call, "recv", recvcounts, rdispls, c->size, es, recvbuf)) != RLX_OK)
    return rc;
  if (sendcounts[c->rank] != recvcounts[c->rank])
    return rlx__err(RLX_ERR_ARG, "%s: rank %d sends itself %zu elements and receives %zu", call,
                    c->rank, sendcounts[c->rank], recvcounts[c->rank]);
  if (c->size == 1)
    return rlx__call_alone(c, RLX__CK_ALLTOALLV, call, dt, RLX_SUM, sendcounts[0], 0,
                           (const char *)sendbuf + (sendcounts[0] ? sdispls[0] * es : 0),
                           (char *)recvbuf + (sendcounts[0] ? rdispls[0] * es : 0),
                           sendcounts[0] * es, req);
  rlx__call_fill(&rq, RLX__CK_ALLTOALLV, call, dt, RLX_SUM, 0, es, 0, sendbuf, recvbuf);
  rq.op.counts = recvcounts;
  rq.op.displs = rdispls;
  rq.op.scounts = sendcounts;
  rq.op.sdispls = sdispls;
  if ((rc = rlx__call_pick(&rq.op, c, 0, "", req == NULL)) != RLX_OK)
    return rc;
  return rlx__call_launch(c, &rq, req);
}

int rlx_alltoallv(const void *sendbuf, const size_t *sendcounts, const size_t *sdispls,
                  void *recvbuf, const size_t *recvcounts, const size_t *rdispls, rlx_dtype_t dt,
                  rlx_comm_t *c) {
  return rlx__refused(c, alltoallv("rlx_alltoallv", sendbuf, sendcounts, sdispls, recvbuf,
                                   recvcounts, rdispls, dt, c, NULL));
}

int rlx_ialltoallv(const void *sendbuf, const size_t *sendcounts, const size_t *sdispls,
                   void *recvbuf, const size_t *recvcounts, const size_t *rdispls, rlx_dtype_t dt,
                   rlx_comm_t *c, rlx_request_t **req) {
  RLX__NEED_REQ("rlx_ialltoallv");
  return rlx__refused(c, alltoallv("rlx_ialltoallv", sendbuf, sendcounts, sdispls, recvbuf,
                                   recvcounts, rdispls, dt, c, req));
}
