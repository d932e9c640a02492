/* Names and sizes of the public dtypes and ops. */
#include "base/internal.h"

static const char *const dtype_names[] = {"int8",   "uint8",   "int32",    "uint32",  "int64",
                                          "uint64", "float16", "bfloat16", "float32", "float64"};
const size_t rlx__dtype_sizes[RLX_DTYPE_COUNT] = {1, 1, 4, 4, 8, 8, 2, 2, 4, 8};
static const char *const op_names[] = {"sum", "prod", "min", "max", "avg", "band", "bor", "bxor"};

const char *rlx_dtype_name(rlx_dtype_t dt) {
  return (unsigned)dt < RLX_DTYPE_COUNT ? dtype_names[dt] : NULL;
}

size_t rlx_dtype_size(rlx_dtype_t dt) {
  return (unsigned)dt < RLX_DTYPE_COUNT ? rlx__dtype_sizes[dt] : 0;
}

const char *rlx_op_name(rlx_op_t op) { return (unsigned)op < RLX_OP_COUNT ? op_names[op] : NULL; }
