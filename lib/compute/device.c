/* Which device a model computes on: RLX_DEVICE / rlx_model_desc_t.device
 * parsed, and the compute fault hook of test builds. Both model.c (the
 * choice) and opencl.c (the hook) use these, and neither calls the other
 * for them. */
#include <stdlib.h>
#include <string.h>
#include "compute/backend.h"
#include "base/internal.h"

int rlx__device_parse(const char *s, struct rlx__device_choice *out) {
  out->index = RLX__DEV_PICK;
  if (!s || !*s || !strcmp(s, "auto")) {
    out->kind = RLX__DEV_AUTO;
    return RLX_OK;
  }
  if (!strcmp(s, "cpu")) {
    out->kind = RLX__DEV_CPU;
    return RLX_OK;
  }
  if (!strcmp(s, "opencl")) {
    out->kind = RLX__DEV_OPENCL;
    return RLX_OK;
  }
  if (!strcmp(s, "gpu")) {
    out->kind = RLX__DEV_GPU;
    out->index = RLX__DEV_GPU_ONLY;
    return RLX_OK;
  }
  long idx;
  if (!strncmp(s, "opencl:", 7) && rlx__parse_long(s + 7, 0, 255, &idx) == RLX_OK) {
    out->kind = RLX__DEV_OPENCL;
    out->index = (int)idx;
    return RLX_OK;
  }
  return rlx__err(RLX_ERR_ARG,
                  "device '%s' is not one of auto, cpu, gpu, opencl, opencl:N (N = 0..255, the "
                  "OpenCL device's position, GPUs listed first)", s);
}

int rlx__fault_compute(const char *what) {
#ifdef RLX_FAULT_INJECTION
  const char *f = getenv("RLX_FAULT_COMPUTE");
  return f && !strcmp(f, what);
#else
  (void)what;
  return 0;
#endif
}
