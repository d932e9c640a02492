/* OpenCL devices: list them GPUs first, and place a rank on the GPU
 * nearest its cores (hwloc), local rank i taking the i-th mod count. */
#include <hwloc/opencl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "compute/cl_devices.h"

const char *rlx__cl_errname(cl_int e) {
  switch (e) {
#define N(x) case x: return #x;
    N(CL_SUCCESS) N(CL_DEVICE_NOT_FOUND) N(CL_DEVICE_NOT_AVAILABLE) N(CL_COMPILER_NOT_AVAILABLE)
    N(CL_MEM_OBJECT_ALLOCATION_FAILURE) N(CL_OUT_OF_RESOURCES) N(CL_OUT_OF_HOST_MEMORY)
    N(CL_BUILD_PROGRAM_FAILURE) N(CL_INVALID_VALUE) N(CL_INVALID_PLATFORM) N(CL_INVALID_DEVICE)
    N(CL_INVALID_CONTEXT) N(CL_INVALID_COMMAND_QUEUE) N(CL_INVALID_MEM_OBJECT)
    N(CL_INVALID_BUILD_OPTIONS) N(CL_INVALID_PROGRAM) N(CL_INVALID_PROGRAM_EXECUTABLE)
    N(CL_INVALID_KERNEL_NAME) N(CL_INVALID_KERNEL) N(CL_INVALID_ARG_INDEX) N(CL_INVALID_ARG_VALUE)
    N(CL_INVALID_ARG_SIZE) N(CL_INVALID_KERNEL_ARGS) N(CL_INVALID_WORK_DIMENSION)
    N(CL_INVALID_WORK_GROUP_SIZE) N(CL_INVALID_WORK_ITEM_SIZE) N(CL_INVALID_GLOBAL_OFFSET)
    N(CL_INVALID_EVENT_WAIT_LIST) N(CL_INVALID_OPERATION) N(CL_INVALID_BUFFER_SIZE)
    N(CL_INVALID_GLOBAL_WORK_SIZE)
#undef N
  case -1001:
    return "CL_PLATFORM_NOT_FOUND_KHR (no OpenCL driver installed)";
  default:
    return "unknown OpenCL error";
  }
}

static void add_devices(cl_platform_id p, cl_device_type type, struct rlx__cl_device *out,
                        int max, int *n) {
  cl_device_id ids[RLX__CL_MAX_DEVICES];
  cl_uint got = 0;
  if (clGetDeviceIDs(p, type, RLX__CL_MAX_DEVICES, ids, &got) != CL_SUCCESS)
    return;
  for (cl_uint i = 0; i < got && *n < max; i++) {
    cl_device_type t = 0;
    clGetDeviceInfo(ids[i], CL_DEVICE_TYPE, sizeof t, &t, NULL);
    /* The second pass takes everything that is not a GPU. */
    if (type == CL_DEVICE_TYPE_ALL && (t & CL_DEVICE_TYPE_GPU))
      continue;
    struct rlx__cl_device *d = &out[(*n)++];
    d->platform = p;
    d->id = ids[i];
    d->is_gpu = (t & CL_DEVICE_TYPE_GPU) != 0;
    d->name[0] = '\0';
    clGetDeviceInfo(ids[i], CL_DEVICE_NAME, sizeof d->name - 1, d->name, NULL);
    d->name[sizeof d->name - 1] = '\0';
  }
}

/* One thread lists at a time: PoCL answers a second thread that asks while
 * the first one's call sets the driver up with no device at all (two
 * threads making their models at once: one fell back to the CPU). */
static pthread_mutex_t listing = PTHREAD_MUTEX_INITIALIZER;

static int list(struct rlx__cl_device *out, int max, char *why, size_t whylen) {
  cl_platform_id plats[16];
  cl_uint np = 0;
  cl_int e = clGetPlatformIDs(16, plats, &np);
  if (e != CL_SUCCESS || np == 0) {
    snprintf(why, whylen, "no OpenCL platform (clGetPlatformIDs: %d %s)", (int)e,
             e == CL_SUCCESS ? "none listed" : rlx__cl_errname(e));
    return -1;
  }
  int n = 0;
  for (cl_uint i = 0; i < np; i++)
    add_devices(plats[i], CL_DEVICE_TYPE_GPU, out, max, &n);
  for (cl_uint i = 0; i < np; i++)
    add_devices(plats[i], CL_DEVICE_TYPE_ALL, out, max, &n);
  if (n == 0) {
    snprintf(why, whylen, "%u OpenCL platform(s) but no device", (unsigned)np);
    return -1;
  }
  return n;
}

int rlx__cl_list(struct rlx__cl_device *out, int max, char *why, size_t whylen) {
  pthread_mutex_lock(&listing);
  int n = list(out, max, why, whylen);
  pthread_mutex_unlock(&listing);
  return n;
}

int rlx__cl_pick_near(hwloc_const_bitmap_t const *gpu_sets, int n, hwloc_const_bitmap_t mine,
                      int local_rank) {
  int near[RLX__CL_MAX_DEVICES], nn = 0;
  for (int i = 0; mine && i < n && i < RLX__CL_MAX_DEVICES; i++)
    if (gpu_sets[i] && hwloc_bitmap_intersects(gpu_sets[i], mine))
      near[nn++] = i;
  if (nn == 0)
    for (int i = 0; i < n && i < RLX__CL_MAX_DEVICES; i++)
      near[nn++] = i;
  if (nn == 0)
    return -1;
  return near[(local_rank < 0 ? 0 : local_rank) % nn];
}

int rlx__cl_gpu_library(char *out, size_t len) {
  static const char *const known[] = {
      "/usr/lib/x86_64-linux-gnu/libnvidia-opencl.so.1", "/usr/lib/libnvidia-opencl.so.1",
      "/usr/lib64/libnvidia-opencl.so.1", "/usr/lib/aarch64-linux-gnu/libnvidia-opencl.so.1",
      "/opt/rocm/lib/libamdocl64.so", "/usr/lib/x86_64-linux-gnu/libamdocl64.so",
      "/usr/lib/x86_64-linux-gnu/intel-opencl/libigdrcl.so", NULL};
  const char *extra = getenv("RLX_GPU_OPENCL_LIBS");
  if (extra && *extra) {
    char buf[1024];
    snprintf(buf, sizeof buf, "%s", extra);
    for (char *save = NULL, *p = strtok_r(buf, ":", &save); p; p = strtok_r(NULL, ":", &save))
      if (access(p, F_OK) == 0) {
        snprintf(out, len, "%s", p);
        return 1;
      }
    return 0; /* the list given replaces ours */
  }
  for (int i = 0; known[i]; i++)
    if (access(known[i], F_OK) == 0) {
      snprintf(out, len, "%s", known[i]);
      return 1;
    }
  return 0;
}
