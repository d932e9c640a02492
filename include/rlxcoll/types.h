/* rlxcoll data types, reduction operations and opaque handles. */
#ifndef RLXCOLL_TYPES_H
#define RLXCOLL_TYPES_H

#include <stddef.h>

typedef enum rlx_dtype {
  RLX_INT8 = 0,
  RLX_UINT8,
  RLX_INT32,
  RLX_UINT32,
  RLX_INT64,
  RLX_UINT64,
  RLX_FLOAT16,
  RLX_BFLOAT16,
  RLX_FLOAT32,
  RLX_FLOAT64,
  RLX_DTYPE_COUNT
} rlx_dtype_t;

typedef enum rlx_op {
  RLX_SUM = 0,
  RLX_PROD,
  RLX_MIN,
  RLX_MAX,
  RLX_AVG,  /* floating types only */
  RLX_BAND, /* bitwise and, or, exclusive or: integer types only */
  RLX_BOR,
  RLX_BXOR,
  RLX_OP_COUNT
} rlx_op_t;

/* Pass as sendbuf to reduce in place in recvbuf. */
#define RLX_IN_PLACE ((const void *)1)

typedef struct rlx_comm rlx_comm_t;
typedef struct rlx_request rlx_request_t;

/* What a receive got: the sender's rank in the communicator, the tag, and
 * the count of elements (rlx_recv, rlx_wait on a receive's request). */
typedef struct rlx_status {
  int source;
  int tag;
  size_t count;
} rlx_status_t;

/* A receive's source and tag that take any (rlx_recv). */
#define RLX_ANY_SOURCE (-1)
#define RLX_ANY_TAG (-1)

/* rlx_comm_split's color for "not in any new communicator". */
#define RLX_UNDEFINED (-32766)

#endif
