/* OpenCL device discovery and placement, apart from the model so the
 * placement rule can be tested on a topology read from XML. */
#ifndef RLX_COMPUTE_CL_DEVICES_H
#define RLX_COMPUTE_CL_DEVICES_H


/* CL_TARGET_OPENCL_VERSION (1.2: what PoCL, NVIDIA and the rest all offer) comes from the build flags. */
#include <CL/cl.h>
#include <hwloc.h>
#include <stddef.h>

#define RLX__CL_MAX_DEVICES 64

struct rlx__cl_device {
  cl_platform_id platform;
  cl_device_id id;
  int is_gpu;
  char name[128];
};

/* Every device of every platform, GPUs first (then the rest, in platform
 * order). Returns the count, or -1 with the reason in why. */
int rlx__cl_list(struct rlx__cl_device *out, int max, char *why, size_t whylen);

/* Which of n GPUs this rank takes: among those whose cpuset intersects
 * mine (all of them when none does or mine is NULL), the
 * (local_rank mod count)-th. */
int rlx__cl_pick_near(hwloc_const_bitmap_t const *gpu_sets, int n, hwloc_const_bitmap_t mine,
                      int local_rank);

/* A GPU vendor's OpenCL library on disk (NVIDIA's, AMD's, Intel's, or
 * one of RLX_GPU_OPENCL_LIBS, colon-separated paths): its path in out, 1;
 * else 0. When no GPU device is listed, it is there but not registered
 * with the ICD loader. */
int rlx__cl_gpu_library(char *out, size_t len);

/* "CL_OUT_OF_RESOURCES" for -5, and so on. */
const char *rlx__cl_errname(cl_int e);

#endif
