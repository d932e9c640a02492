/* rlxcoll: MPI-style collective communication over TCP and Unix-domain
 * sockets. This umbrella header is the whole public surface of librlxcoll;
 * the compute layer (librlxcompute) is <rlxcoll/compute.h>, apart. */
#ifndef RLXCOLL_H
#define RLXCOLL_H

#include <stddef.h>
#include <rlxcoll/errors.h>
#include <rlxcoll/types.h>

#ifdef __cplusplus
extern "C" {
#endif


#define RLXCOLL_VERSION_MAJOR 0
#define RLXCOLL_VERSION_MINOR 1
#define RLXCOLL_VERSION_PATCH 0

/* Lifetime. */
RLX_API int rlx_init(int *argc, char ***argv);
RLX_API int rlx_finalize(void);
RLX_API int rlx_initialized(void);

/* Communicators. */
RLX_API rlx_comm_t *rlx_comm_world(void);
RLX_API int rlx_comm_rank(const rlx_comm_t *c);
RLX_API int rlx_comm_size(const rlx_comm_t *c);
RLX_API int rlx_comm_leader(const rlx_comm_t *c);
/* Collective over c: ranks with the same color form a communicator, ordered
 * by key then by rank in c; color RLX_UNDEFINED gets *out = NULL. */
RLX_API int rlx_comm_split(rlx_comm_t *c, int color, int key, rlx_comm_t **out);
/* A communicator of the parent's ranks listed (in that order), made by
 * them alone: only they call it (rlx_comm_create_group(3)). */
RLX_API int rlx_comm_create_group(rlx_comm_t *parent, int n, const int *ranks, int tag,
                                  rlx_comm_t **out);
RLX_API int rlx_comm_dup(rlx_comm_t *c, rlx_comm_t **out);
RLX_API int rlx_comm_free(rlx_comm_t **c);
/* How long a call on c may wait before it fails with RLX_ERR_TIMEOUT, in
 * seconds (0: no limit), from its next call on; this rank only. A new
 * communicator starts at RLX_TIMEOUT; a negative value goes back to it. */
RLX_API int rlx_comm_set_timeout(rlx_comm_t *c, double seconds);
RLX_API int rlx_comm_get_timeout(const rlx_comm_t *c, double *seconds);
/* After a member is lost: the survivors (all of them call it) agree on who
 * is gone and get a communicator of their own, leader re-elected. */
RLX_API int rlx_comm_shrink(rlx_comm_t *c, rlx_comm_t **out);
/* Any one member, at any time (MPI_Comm_revoke): every member's pending and
 * later calls on c fail at once with RLX_ERR_REVOKED naming this rank;
 * rlx_comm_shrink(c) then gives the members a communicator of their own. */
RLX_API int rlx_comm_revoke(rlx_comm_t *c);
/* A job that may grow (rlxrun --max-np, RLX_MAX_NP): every member of c
 * calls it at a point of its choosing; the ranks waiting to join (started
 * with RLX_JOIN=1) are admitted, after c's members in order. Nobody
 * waiting: a dup of c. rlx_comm_joiners: how many wait (this rank's view,
 * at most RLX_MAX_NP - size of c). rlx_joined: 1 in a process that joined
 * a running job (its world is the grown communicator). */
RLX_API int rlx_comm_grow(rlx_comm_t *c, rlx_comm_t **out);
RLX_API int rlx_comm_joiners(const rlx_comm_t *c);
RLX_API int rlx_joined(void);

/* A function the library calls, about every 10 ms, from a thread waiting
 * in a blocking call (or rlx_wait): nonzero fails that call with
 * RLX_ERR_INTERRUPTED, and the other ranks in it hear so (their call
 * fails too). For language bindings: Python's Ctrl-C. NULL: none. */
typedef int (*rlx_interrupt_fn)(void *arg);
RLX_API int rlx_set_interrupt(rlx_interrupt_fn fn, void *arg);

/* Collectives. */
RLX_API int rlx_allreduce(const void *sendbuf, void *recvbuf, size_t count,
                          rlx_dtype_t dt, rlx_op_t op, rlx_comm_t *c);
RLX_API int rlx_bcast(void *buf, size_t count, rlx_dtype_t dt, int root,
                      rlx_comm_t *c);
RLX_API int rlx_barrier(rlx_comm_t *c);
RLX_API int rlx_reduce(const void *sendbuf, void *recvbuf, size_t count, rlx_dtype_t dt,
                       rlx_op_t op, int root, rlx_comm_t *c);
RLX_API int rlx_allgather(const void *sendbuf, void *recvbuf, size_t count, rlx_dtype_t dt,
                          rlx_comm_t *c);
RLX_API int rlx_reduce_scatter(const void *sendbuf, void *recvbuf, size_t recvcount,
                               rlx_dtype_t dt, rlx_op_t op, rlx_comm_t *c);

/* Nonblocking collectives: progress happens on the progress thread while
 * the caller works; rlx_wait or rlx_test completes and frees *req. */
RLX_API int rlx_iallreduce(const void *sendbuf, void *recvbuf, size_t count, rlx_dtype_t dt,
                           rlx_op_t op, rlx_comm_t *c, rlx_request_t **req);
RLX_API int rlx_ibcast(void *buf, size_t count, rlx_dtype_t dt, int root, rlx_comm_t *c,
                       rlx_request_t **req);
/* Gather every rank's count elements into the root's recvbuf (rank i's
 * at block i), scatter the root's blocks, and all-to-all (block j of
 * sendbuf to rank j, block i of recvbuf from rank i); rlx_gather(3). */
RLX_API int rlx_gather(const void *sendbuf, void *recvbuf, size_t count, rlx_dtype_t dt,
                       int root, rlx_comm_t *c);
RLX_API int rlx_scatter(const void *sendbuf, void *recvbuf, size_t count, rlx_dtype_t dt,
                        int root, rlx_comm_t *c);
RLX_API int rlx_alltoall(const void *sendbuf, void *recvbuf, size_t count, rlx_dtype_t dt,
                         rlx_comm_t *c);
RLX_API int rlx_igather(const void *sendbuf, void *recvbuf, size_t count, rlx_dtype_t dt,
                        int root, rlx_comm_t *c, rlx_request_t **req);
RLX_API int rlx_iscatter(const void *sendbuf, void *recvbuf, size_t count, rlx_dtype_t dt,
                         int root, rlx_comm_t *c, rlx_request_t **req);
RLX_API int rlx_ialltoall(const void *sendbuf, void *recvbuf, size_t count, rlx_dtype_t dt,
                          rlx_comm_t *c, rlx_request_t **req);
/* The uneven forms: counts and displacements in elements, per rank
 * (rlx_gatherv(3)). */
RLX_API int rlx_gatherv(const void *sendbuf, size_t sendcount, void *recvbuf,
                        const size_t *recvcounts, const size_t *displs, rlx_dtype_t dt, int root,
                        rlx_comm_t *c);
RLX_API int rlx_scatterv(const void *sendbuf, const size_t *sendcounts, const size_t *displs,
                         void *recvbuf, size_t recvcount, rlx_dtype_t dt, int root, rlx_comm_t *c);
RLX_API int rlx_allgatherv(const void *sendbuf, size_t sendcount, void *recvbuf,
                           const size_t *recvcounts, const size_t *displs, rlx_dtype_t dt,
                           rlx_comm_t *c);
RLX_API int rlx_alltoallv(const void *sendbuf, const size_t *sendcounts, const size_t *sdispls,
                          void *recvbuf, const size_t *recvcounts, const size_t *rdispls,
                          rlx_dtype_t dt, rlx_comm_t *c);
/* Rank i gets block i (recvcounts[i] elements, the blocks packed in rank
 * order in sendbuf) of the reduction; every rank passes the same
 * recvcounts (rlx_reduce_scatter(3)). */
RLX_API int rlx_reduce_scatterv(const void *sendbuf, void *recvbuf, const size_t *recvcounts,
                                rlx_dtype_t dt, rlx_op_t op, rlx_comm_t *c);
RLX_API int rlx_ireduce_scatterv(const void *sendbuf, void *recvbuf, const size_t *recvcounts,
                                 rlx_dtype_t dt, rlx_op_t op, rlx_comm_t *c, rlx_request_t **req);
RLX_API int rlx_igatherv(const void *sendbuf, size_t sendcount, void *recvbuf,
                         const size_t *recvcounts, const size_t *displs, rlx_dtype_t dt, int root,
                         rlx_comm_t *c, rlx_request_t **req);
RLX_API int rlx_iscatterv(const void *sendbuf, const size_t *sendcounts, const size_t *displs,
                          void *recvbuf, size_t recvcount, rlx_dtype_t dt, int root,
                          rlx_comm_t *c, rlx_request_t **req);
RLX_API int rlx_iallgatherv(const void *sendbuf, size_t sendcount, void *recvbuf,
                            const size_t *recvcounts, const size_t *displs, rlx_dtype_t dt,
                            rlx_comm_t *c, rlx_request_t **req);
RLX_API int rlx_ialltoallv(const void *sendbuf, const size_t *sendcounts, const size_t *sdispls,
                           void *recvbuf, const size_t *recvcounts, const size_t *rdispls,
                           rlx_dtype_t dt, rlx_comm_t *c, rlx_request_t **req);
RLX_API int rlx_ireduce(const void *sendbuf, void *recvbuf, size_t count, rlx_dtype_t dt,
                        rlx_op_t op, int root, rlx_comm_t *c, rlx_request_t **req);
RLX_API int rlx_iallgather(const void *sendbuf, void *recvbuf, size_t count, rlx_dtype_t dt,
                           rlx_comm_t *c, rlx_request_t **req);
RLX_API int rlx_ireduce_scatter(const void *sendbuf, void *recvbuf, size_t recvcount,
                                rlx_dtype_t dt, rlx_op_t op, rlx_comm_t *c, rlx_request_t **req);
RLX_API int rlx_ibarrier(rlx_comm_t *c, rlx_request_t **req);
RLX_API int rlx_wait(rlx_request_t **req);
RLX_API int rlx_test(rlx_request_t **req, int *done);

/* Point-to-point messages, MPI's way: a tag >= 0 on a communicator; a
 * receive takes RLX_ANY_SOURCE and RLX_ANY_TAG; two messages from one
 * sender that one receive could both match arrive in the order sent; a
 * message longer than the receive fails it with RLX_ERR_TRUNCATE. st may
 * be NULL. A request of rlx_isend/rlx_irecv completes in rlx_wait,
 * rlx_test, rlx_waitall or rlx_testany like a collective's; the status
 * of a receive's request is had from rlx_wait_status/rlx_waitall. */
RLX_API int rlx_send(const void *buf, size_t count, rlx_dtype_t dt, int dest, int tag,
                     rlx_comm_t *c);
RLX_API int rlx_recv(void *buf, size_t count, rlx_dtype_t dt, int source, int tag,
                     rlx_comm_t *c, rlx_status_t *st);
RLX_API int rlx_isend(const void *buf, size_t count, rlx_dtype_t dt, int dest, int tag,
                      rlx_comm_t *c, rlx_request_t **req);
RLX_API int rlx_irecv(void *buf, size_t count, rlx_dtype_t dt, int source, int tag,
                      rlx_comm_t *c, rlx_request_t **req);
RLX_API int rlx_sendrecv(const void *sbuf, size_t scount, int dest, int stag, void *rbuf,
                         size_t rcount, int source, int rtag, rlx_dtype_t dt, rlx_comm_t *c,
                         rlx_status_t *st);
/* rlx_wait that also gives the status of a receive (st may be NULL). */
RLX_API int rlx_wait_status(rlx_request_t **req, rlx_status_t *st);
/* Wait for all n requests (NULL entries are skipped; each is freed and
 * set NULL): RLX_OK, or the first failure's error (every request is still
 * completed). sts: n statuses, or NULL. */
RLX_API int rlx_waitall(int n, rlx_request_t **reqs, rlx_status_t *sts);
/* One pass over n requests: *done 1 and *index set when one completed (it
 * is freed and set NULL; its result returned, its status in *st); *done 1
 * and *index -1 when every entry is NULL; else *done 0. */
RLX_API int rlx_testany(int n, rlx_request_t **reqs, int *index, int *done, rlx_status_t *st);

/* Errors: rlx_strerror and rlx_errmsg, in <rlxcoll/errors.h>. */

/* Names, for messages: "float32", "sum". NULL when out of range. */
RLX_API const char *rlx_dtype_name(rlx_dtype_t dt);
RLX_API const char *rlx_op_name(rlx_op_t op);
RLX_API size_t rlx_dtype_size(rlx_dtype_t dt);

#ifdef __cplusplus
}
#endif

#endif
