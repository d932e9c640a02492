/* rlxcoll: MPI-style collective communication over TCP and Unix-domain
 * sockets. This umbrella header is the whole public surface. */
#ifndef RLXCOLL_H
#define RLXCOLL_H

#include <stddef.h>
#include <rlxcoll/errors.h>
#include <rlxcoll/types.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define RLX_API __attribute__((visibility("default")))
#else
#define RLX_API
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

/* Collectives. */
RLX_API int rlx_allreduce(const void *sendbuf, void *recvbuf, size_t count,
                          rlx_dtype_t dt, rlx_op_t op, rlx_comm_t *c);
RLX_API int rlx_bcast(void *buf, size_t count, rlx_dtype_t dt, int root,
                      rlx_comm_t *c);
RLX_API int rlx_barrier(rlx_comm_t *c);

/* Errors. */
RLX_API const char *rlx_strerror(int err);
RLX_API const char *rlx_errmsg(void);

/* Names, for messages: "float32", "sum". NULL when out of range. */
RLX_API const char *rlx_dtype_name(rlx_dtype_t dt);
RLX_API const char *rlx_op_name(rlx_op_t op);
RLX_API size_t rlx_dtype_size(rlx_dtype_t dt);

#ifdef __cplusplus
}
#endif
#endif
