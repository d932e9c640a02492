/* How fast a device's buffer reaches host memory of each kind, and back
 * (issue 36: a rank computing in another rank's process has its gradient
 * written into memory the two share, not into the driver's pinned
 * memory). For bytes per transfer, the mean of iters blocking reads and
 * writes into: pinned (a CL_MEM_ALLOC_HOST_PTR buffer, mapped), malloc,
 * a memfd mapped shared, and that memfd wrapped by a CL_MEM_USE_HOST_PTR
 * buffer (read by clEnqueueCopyBuffer + map, as a driver that pins such
 * memory would serve it), then memcpy of the same bytes for scale.
 *   cl_hostmem [bytes] [iters]   (OCL_ICD_VENDORS picks the GPU)
 * Build: cc -O2 -o cl_hostmem bench/cl_hostmem.c -lOpenCL */
#define _GNU_SOURCE
#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static cl_command_queue q;
static cl_mem dev;
static size_t bytes;
static int iters;

static void rw(const char *what, void *host) {
  double t0 = now();
  for (int i = 0; i < iters; i++)
    clEnqueueReadBuffer(q, dev, CL_TRUE, 0, bytes, host, 0, NULL, NULL);
  double t1 = now();
  for (int i = 0; i < iters; i++)
    clEnqueueWriteBuffer(q, dev, CL_TRUE, 0, bytes, host, 0, NULL, NULL);
  double t2 = now();
  printf("%-28s read %8.1f us (%5.1f GB/s)  write %8.1f us (%5.1f GB/s)\n", what,
         (t1 - t0) / iters * 1e6, bytes * iters / (t1 - t0) / 1e9, (t2 - t1) / iters * 1e6,
         bytes * iters / (t2 - t1) / 1e9);
}

int main(int argc, char **argv) {
  bytes = argc > 1 ? strtoul(argv[1], NULL, 10) : 814120;
  iters = argc > 2 ? atoi(argv[2]) : 200;
  cl_platform_id plat;
  cl_device_id d;
  cl_int e;
  if (clGetPlatformIDs(1, &plat, NULL) != CL_SUCCESS ||
      clGetDeviceIDs(plat, CL_DEVICE_TYPE_ALL, 1, &d, NULL) != CL_SUCCESS) {
    fprintf(stderr, "cl_hostmem: no OpenCL device\n");
    return 1;
  }
  char name[128] = "";
  clGetDeviceInfo(d, CL_DEVICE_NAME, sizeof name, name, NULL);
  printf("cl_hostmem on %s: %zu bytes\n", name, bytes);
  cl_context ctx = clCreateContext(NULL, 1, &d, NULL, NULL, &e);
  q = clCreateCommandQueue(ctx, d, 0, &e);
  dev = clCreateBuffer(ctx, CL_MEM_READ_WRITE, bytes, NULL, &e);
  cl_mem pin = clCreateBuffer(ctx, CL_MEM_READ_WRITE | CL_MEM_ALLOC_HOST_PTR, bytes, NULL, &e);
  void *pp = clEnqueueMapBuffer(q, pin, CL_TRUE, CL_MAP_READ | CL_MAP_WRITE, 0, bytes, 0, NULL,
                                NULL, &e);
  memset(pp, 0, bytes);
  rw("pinned (ALLOC_HOST_PTR)", pp);
  void *m = malloc(bytes);
  memset(m, 0, bytes);
  rw("malloc", m);
  int fd = memfd_create("cl_hostmem", 0);
  if (fd < 0 || ftruncate(fd, (off_t)bytes) != 0)
    return 1;
  void *sh = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  memset(sh, 0, bytes);
  rw("memfd, shared", sh);
  cl_mem use = clCreateBuffer(ctx, CL_MEM_READ_WRITE | CL_MEM_USE_HOST_PTR, bytes, sh, &e);
  if (e == CL_SUCCESS) {
    void *mp = clEnqueueMapBuffer(q, use, CL_TRUE, CL_MAP_READ | CL_MAP_WRITE, 0, bytes, 0, NULL,
                                  NULL, &e);
    clEnqueueUnmapMemObject(q, use, mp, 0, NULL, NULL);
    rw("memfd, after USE_HOST_PTR", sh);
    double t0 = now();
    for (int i = 0; i < iters; i++) {
      clEnqueueCopyBuffer(q, dev, use, 0, 0, bytes, 0, NULL, NULL);
      mp = clEnqueueMapBuffer(q, use, CL_TRUE, CL_MAP_READ, 0, bytes, 0, NULL, NULL, &e);
      clEnqueueUnmapMemObject(q, use, mp, 0, NULL, NULL);
    }
    clFinish(q);
    double t1 = now();
    printf("%-28s copy+map %8.1f us (%5.1f GB/s), mapped at the memfd: %s\n", "USE_HOST_PTR buffer",
           (t1 - t0) / iters * 1e6, bytes * iters / (t1 - t0) / 1e9, mp == sh ? "yes" : "no");
  }
  double t0 = now();
  for (int i = 0; i < iters; i++)
    memcpy(m, pp, bytes);
  double t1 = now();
  printf("%-28s %8.1f us (%5.1f GB/s)\n", "memcpy pinned -> malloc", (t1 - t0) / iters * 1e6,
         bytes * iters / (t1 - t0) / 1e9);
  return 0;
}
