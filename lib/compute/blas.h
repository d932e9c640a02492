/* OpenBLAS for the C backend, loaded at first use rather than linked, so
 * its CPU detection can be corrected before its kernels are chosen. */
#ifndef RLX_COMPUTE_BLAS_H
#define RLX_COMPUTE_BLAS_H

#include <cblas.h>

struct rlx__blas {
  __typeof__(cblas_sgemm) *sgemm;
  __typeof__(cblas_sgemv) *sgemv;
  char core[48]; /* the kernel set OpenBLAS runs, e.g. "SkylakeX" */
};

/* The loaded library, or NULL with the reason set through rlx__err. */
const struct rlx__blas *rlx__blas_get(void);

#endif
