/* What two processes sharing one GPU pay (issue 36, item 3): each process
 * runs `iters` rounds of `kernels` small kernels (a few microseconds of
 * work each) and waits for them (clFinish), as a training step's burst
 * does; it prints the microseconds a round took. Run one alone, then two
 * at once: a GPU that time-slices between processes' contexts shows it
 * as rounds much longer than twice the work.
 * With a fourth argument, a file under /dev/shm, the processes take turns:
 * each waits for a token in that file before its round and passes it on
 * after clFinish, so only one context has work at a time; a round is then
 * timed from taking the token (does the switch itself cost, or only
 * contexts with work at once?). Start every process within a second.
 *   cl_share [iters] [kernels] [work-items] [turn-file nprocs]
 * (OCL_ICD_VENDORS picks the GPU)
 * Build: cc -O2 -o cl_share bench/cl_share.c -lOpenCL */
#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>
#include <fcntl.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

struct turn { /* in the turn file */
  atomic_int joined, token;
};

static const char *src =
    "__kernel void spin(__global float *x, uint n) {\n"
    "  uint i = get_global_id(0);\n"
    "  if (i >= n) return;\n"
    "  float v = x[i];\n"
    "  for (int k = 0; k < 64; k++) v = fma(v, 0.999f, 0.001f);\n"
    "  x[i] = v;\n"
    "}\n";

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

int main(int argc, char **argv) {
  int iters = argc > 1 ? atoi(argv[1]) : 2000, kernels = argc > 2 ? atoi(argv[2]) : 10;
  cl_uint n = argc > 3 ? (cl_uint)atoi(argv[3]) : 262144;
  struct turn *turn = NULL;
  int me = 0, procs = argc > 5 ? atoi(argv[5]) : 2;
  if (argc > 4) {
    int fd = open(argv[4], O_RDWR | O_CREAT, 0600);
    if (fd < 0 || ftruncate(fd, sizeof *turn) != 0 ||
        (turn = mmap(NULL, sizeof *turn, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0)) == MAP_FAILED) {
      perror("cl_share: turn file");
      return 1;
    }
    me = atomic_fetch_add(&turn->joined, 1);
  }
  cl_platform_id plat;
  cl_device_id dev;
  cl_int e;
  if (clGetPlatformIDs(1, &plat, NULL) != CL_SUCCESS ||
      clGetDeviceIDs(plat, CL_DEVICE_TYPE_ALL, 1, &dev, NULL) != CL_SUCCESS) {
    fprintf(stderr, "cl_share: no OpenCL device\n");
    return 1;
  }
  char name[128] = "";
  clGetDeviceInfo(dev, CL_DEVICE_NAME, sizeof name, name, NULL);
  cl_context ctx = clCreateContext(NULL, 1, &dev, NULL, NULL, &e);
  cl_command_queue q = clCreateCommandQueue(ctx, dev, 0, &e);
  cl_program p = clCreateProgramWithSource(ctx, 1, &src, NULL, &e);
  if (clBuildProgram(p, 1, &dev, NULL, NULL, NULL) != CL_SUCCESS) {
    fprintf(stderr, "cl_share: build failed\n");
    return 1;
  }
  cl_kernel k = clCreateKernel(p, "spin", &e);
  cl_mem x = clCreateBuffer(ctx, CL_MEM_READ_WRITE, sizeof(float) * n, NULL, &e);
  float zero = 0.0f;
  clEnqueueFillBuffer(q, x, &zero, sizeof zero, 0, sizeof(float) * n, 0, NULL, NULL);
  clSetKernelArg(k, 0, sizeof x, &x);
  clSetKernelArg(k, 1, sizeof n, &n);
  size_t local = 256, global = (n + 255) / 256 * 256;
  clFinish(q);
  if (turn) /* everyone ready before the first round */
    while (atomic_load(&turn->joined) < procs)
      sched_yield();
  double best = 1e9, sum = 0, start = now();
  for (int i = 0; i < iters; i++) {
    if (turn)
      while (atomic_load_explicit(&turn->token, memory_order_acquire) != me)
        ;
    double t0 = now();
    for (int j = 0; j < kernels; j++)
      clEnqueueNDRangeKernel(q, k, 1, NULL, &global, &local, 0, NULL, NULL);
    clFinish(q);
    double t = now() - t0;
    if (turn)
      atomic_store_explicit(&turn->token, (me + 1) % procs, memory_order_release);
    if (i == iters / 10)
      start = t0;
    if (i >= iters / 10) { /* (the first tenth warms up) */
      sum += t;
      if (t < best)
        best = t;
    }
  }
  int counted = iters - iters / 10;
  printf("cl_share pid %d on %s: %d kernels a round%s: mean %.1f us, best %.1f us; a round every %.1f us\n",
         (int)getpid(), name, kernels, turn ? " (taking turns)" : "", sum / counted * 1e6, best * 1e6,
         (now() - start) / counted * 1e6);
  return 0;
}
