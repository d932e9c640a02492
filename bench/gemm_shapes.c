/* gemm_tiles' work-group shapes side by side on one OpenCL device: each
 * shape (RM x RN outputs a work-item, 16 x WY work-items, k CHUNK at a
 * time; kernels.cl) built from the library's own kernel source and run on
 * the products a training step of the MLP makes (forward, weight gradient,
 * backward; the k split and sum_parts as opencl.c decides them), timed
 * back to back, its output compared bit for bit with the first shape's
 * (where the k split differs, within 1e-5 of its largest output).
 * The default shape first: what the library runs. --baseline FILE: the
 * first shape also built from FILE (another version of kernels.cl, say
 * the one before a change) and run first, the reference for the rest:
 * its lines begin "base".
 *   gemm_shapes [--hidden 1024,1024] [--batch 1024] [--reps 50]
 *               [--shapes "4x4x16x16 8x4x16x16/128 ..."] [--baseline kernels.cl]
 *               [--options "-DNAME=VALUE ..."] (more build options, not the baseline's)
 * (a shape RMxRNxWYxCHUNK, then /FILL: k split while a product has fewer
 * work-groups than FILL, 256 unless given, as in RLX_GEMM_SHAPE)
 * Prints one line per shape and product: us a product and TFLOP/s. */

#include <CL/cl.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "compute/gemm_shape.h"
#include "compute/kernels_cl.h"
#include "mlp_sizes.h"

#define FILL 256 /* gemm_shape.c's default FILL; the k split as opencl.c's (rlx__gemm_shape_split) */

struct product {
  char name[48];
  cl_uint m, n, k, lda, ldb;
  cl_int a_k, b_k;
};

static double now_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

#define CHECK(call)                                                                            \
  do {                                                                                         \
    cl_int e_ = (call);                                                                        \
    if (e_ != CL_SUCCESS) {                                                                    \
      fprintf(stderr, "gemm_shapes: %s: OpenCL error %d\n", #call, e_);                        \
      exit(1);                                                                                 \
    }                                                                                          \
  } while (0)

static cl_mem buffer(cl_context ctx, size_t n, const float *init) {
  cl_int e;
  cl_mem m = clCreateBuffer(ctx, CL_MEM_READ_WRITE | (init ? CL_MEM_COPY_HOST_PTR : 0),
                            n * sizeof(float), (void *)init, &e);
  CHECK(e);
  return m;
}

static float *random_floats(size_t n, unsigned seed) {
  float *v = malloc(n * sizeof *v);
  for (size_t i = 0; i < n; i++) {
    seed = seed * 1664525u + 1013904223u;
    v[i] = (float)((seed >> 8) & 0xffff) / 32768.0f - 1.0f;
  }
  return v;
}

/* the whole of a file, NUL-terminated, or NULL */
static char *read_file(const char *path) {
  FILE *f = fopen(path, "rb");
  long n = f && fseek(f, 0, SEEK_END) == 0 ? ftell(f) : -1;
  char *buf = n >= 0 ? malloc((size_t)n + 1) : NULL;
  if (buf && (fseek(f, 0, SEEK_SET) != 0 || fread(buf, 1, (size_t)n, f) != (size_t)n)) {
    free(buf);
    buf = NULL;
  }
  if (buf)
    buf[n] = '\0';
  if (f)
    fclose(f);
  return buf;
}

int main(int argc, char **argv) {
  const char *hidden = "1024,1024", *shapes = "4x4x16x16 8x4x16x16 4x8x16x16 8x4x8x16 8x8x16x8";
  const char *baseline = NULL, *extra = "";
  int batch = 1024, reps = 50;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!strcmp(argv[i], "--hidden"))
      hidden = argv[i + 1];
    else if (!strcmp(argv[i], "--batch"))
      batch = atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "--reps"))
      reps = atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "--shapes"))
      shapes = argv[i + 1];
    else if (!strcmp(argv[i], "--baseline"))
      baseline = argv[i + 1];
    else if (!strcmp(argv[i], "--options"))
      extra = argv[i + 1];
    else {
      fprintf(stderr, "usage: %s [--hidden H,H] [--batch B] [--reps N] [--shapes \"RMxRNxWYxCHUNK[/FILL] ...\"] [--baseline kernels.cl] [--options \"-DNAME=V\"]\n",
              argv[0]);
      return 2;
    }
  }
  int sizes[18], nsizes = mlp_sizes(hidden, sizes);
  if (nsizes < 0 || batch < 1 || reps < 1) {
    fprintf(stderr, "gemm_shapes: bad --hidden, --batch or --reps\n");
    return 2;
  }
  /* the products opencl.c gives gemm_tiles for this model and batch */
  struct product p[3 * 18];
  int np = 0;
  for (int l = 0; l + 1 < nsizes; l++) {
    cl_uint in = (cl_uint)sizes[l], out = (cl_uint)sizes[l + 1], b = (cl_uint)batch;
    p[np] = (struct product){"", b, out, in, in, in, 0, 0};
    snprintf(p[np++].name, sizeof p[0].name, "forward %d (%ux%ux%u)", l, b, out, in);
    if (out > 16) {
      p[np] = (struct product){"", out, in, b, out, in, 1, 1};
      snprintf(p[np++].name, sizeof p[0].name, "wgrad %d (%ux%ux%u)", l, out, in, b);
    }
    if (l > 0) {
      p[np] = (struct product){"", b, in, out, out, in, 0, 1};
      snprintf(p[np++].name, sizeof p[0].name, "backward %d (%ux%ux%u)", l, b, in, out);
    }
  }
  cl_platform_id plats[8];
  cl_uint nplat = 0;
  CHECK(clGetPlatformIDs(8, plats, &nplat));
  cl_device_id dev = NULL;
  for (cl_uint i = 0; i < nplat && !dev; i++)
    if (clGetDeviceIDs(plats[i], CL_DEVICE_TYPE_GPU, 1, &dev, NULL) != CL_SUCCESS)
      dev = NULL;
  for (cl_uint i = 0; i < nplat && !dev; i++)
    if (clGetDeviceIDs(plats[i], CL_DEVICE_TYPE_ALL, 1, &dev, NULL) != CL_SUCCESS)
      dev = NULL;
  if (!dev) {
    fprintf(stderr, "gemm_shapes: no OpenCL device\n");
    return 1;
  }
  char dname[256] = "";
  clGetDeviceInfo(dev, CL_DEVICE_NAME, sizeof dname, dname, NULL);
  printf("# device %s, MLP %s, batch %d, %d reps\n", dname, hidden, batch, reps);
  cl_int e;
  cl_context ctx = clCreateContext(NULL, 1, &dev, NULL, NULL, &e);
  CHECK(e);
  cl_command_queue q = clCreateCommandQueue(ctx, dev, 0, &e);
  CHECK(e);
  size_t most = 0;
  for (int i = 0; i < np; i++) {
    size_t sa = (size_t)p[i].m * p[i].k, sb = (size_t)p[i].n * p[i].k;
    most = sa > most ? sa : most;
    most = sb > most ? sb : most;
    most = (size_t)p[i].m * p[i].n * 8 > most ? (size_t)p[i].m * p[i].n * 8 : most;
  }
  float *ha = random_floats(most, 1), *hb = random_floats(most, 2);
  cl_mem a = buffer(ctx, most, ha), b = buffer(ctx, most, hb), c = buffer(ctx, most, NULL),
         part = buffer(ctx, most, NULL), bias = buffer(ctx, most, hb);
  float *ref[3 * 18] = {0}, *got = malloc(most * sizeof *got);
  char *base_src = baseline ? read_file(baseline) : NULL;
  if (baseline && !base_src) {
    fprintf(stderr, "gemm_shapes: cannot read %s\n", baseline);
    return 2;
  }
  int first = 1;
  for (const char *s = shapes; *s;) {
    int rm, rn, wy, chunk, fill = FILL, used = 0, more = 0;
    if (sscanf(s, " %dx%dx%dx%d%n", &rm, &rn, &wy, &chunk, &used) != 4)
      break;
    if (s[used] == '/' && sscanf(s + used, "/%d%n", &fill, &more) == 1)
      used += more;
    /* with a baseline, the first shape twice: from it, then from ours */
    const char *src = first && base_src ? base_src : rlx__kernels_cl;
    if (src == rlx__kernels_cl)
      s += used;
    char opts[320];
    snprintf(opts, sizeof opts, "-cl-std=CL1.2 -DRM=%d -DRN=%d -DWY=%d -DCHUNK=%d -DSMALL_OUT=16 %.150s",
             rm, rn, wy, chunk, src == base_src ? "" : extra);
    cl_program prog = clCreateProgramWithSource(ctx, 1, &src, NULL, &e);
    CHECK(e);
    if (clBuildProgram(prog, 1, &dev, opts, NULL, NULL) != CL_SUCCESS) {
      char log[4096] = "";
      clGetProgramBuildInfo(prog, dev, CL_PROGRAM_BUILD_LOG, sizeof log, log, NULL);
      printf("%dx%dx%dx%d: does not build: %.300s\n", rm, rn, wy, chunk, log);
      clReleaseProgram(prog);
      continue;
    }
    if (getenv("GEMM_SHAPES_LOG")) { /* the compiler's warnings, when asked */
      char log[8192] = "";
      clGetProgramBuildInfo(prog, dev, CL_PROGRAM_BUILD_LOG, sizeof log, log, NULL);
      fprintf(stderr, "%s\n", log);
    }
    cl_kernel kt = clCreateKernel(prog, "gemm_tiles", &e);
    CHECK(e);
    cl_kernel ks = clCreateKernel(prog, "sum_parts", &e);
    CHECK(e);
    struct rlx__gemm_shape gs = {rm, rn, wy, chunk, fill};
    cl_uint zero = 0;
    cl_int off = 0;
    for (int i = 0; i < np; i++) {
      const struct product *t = &p[i];
      cl_uint mn = t->m * t->n, tm, tn, splits, per;
      rlx__gemm_shape_split(&gs, t->m, t->n, t->k, &tm, &tn, &splits, &per);
      cl_mem args_mem[] = {a, b, c, part, bias};
      CHECK(clSetKernelArg(kt, 0, sizeof(cl_mem), &args_mem[0]));
      CHECK(clSetKernelArg(kt, 1, sizeof zero, &zero));
      CHECK(clSetKernelArg(kt, 2, sizeof t->lda, &t->lda));
      CHECK(clSetKernelArg(kt, 3, sizeof t->a_k, &t->a_k));
      CHECK(clSetKernelArg(kt, 4, sizeof(cl_mem), &args_mem[1]));
      CHECK(clSetKernelArg(kt, 5, sizeof zero, &zero));
      CHECK(clSetKernelArg(kt, 6, sizeof t->ldb, &t->ldb));
      CHECK(clSetKernelArg(kt, 7, sizeof t->b_k, &t->b_k));
      CHECK(clSetKernelArg(kt, 8, sizeof t->m, &t->m));
      CHECK(clSetKernelArg(kt, 9, sizeof t->n, &t->n));
      CHECK(clSetKernelArg(kt, 10, sizeof t->k, &t->k));
      CHECK(clSetKernelArg(kt, 11, sizeof(cl_mem), &args_mem[2]));
      CHECK(clSetKernelArg(kt, 12, sizeof zero, &zero));
      CHECK(clSetKernelArg(kt, 13, sizeof(cl_mem), &args_mem[3]));
      CHECK(clSetKernelArg(kt, 14, sizeof per, &per));
      CHECK(clSetKernelArg(kt, 15, sizeof(cl_mem), &args_mem[4]));
      CHECK(clSetKernelArg(kt, 16, sizeof zero, &zero));
      cl_int one = 1;
      CHECK(clSetKernelArg(kt, 17, sizeof one, &one));
      CHECK(clSetKernelArg(kt, 18, sizeof one, &one));
      CHECK(clSetKernelArg(ks, 0, sizeof(cl_mem), &args_mem[3]));
      CHECK(clSetKernelArg(ks, 1, sizeof splits, &splits));
      CHECK(clSetKernelArg(ks, 2, sizeof mn, &mn));
      CHECK(clSetKernelArg(ks, 3, sizeof t->n, &t->n));
      CHECK(clSetKernelArg(ks, 4, sizeof(cl_mem), &args_mem[2]));
      CHECK(clSetKernelArg(ks, 5, sizeof zero, &zero));
      CHECK(clSetKernelArg(ks, 6, sizeof(cl_mem), &args_mem[4]));
      CHECK(clSetKernelArg(ks, 7, sizeof zero, &zero));
      CHECK(clSetKernelArg(ks, 8, sizeof one, &one));
      CHECK(clSetKernelArg(ks, 9, sizeof one, &one));
      cl_uint nargs = 0; /* (a baseline's sum_parts may predate its group argument) */
      CHECK(clGetKernelInfo(ks, CL_KERNEL_NUM_ARGS, sizeof nargs, &nargs, NULL));
      if (nargs > 10)
        CHECK(clSetKernelArg(ks, 10, sizeof splits, &splits));
      size_t local[3] = {16, (size_t)wy, 1};
      size_t global[3] = {(t->n + tn - 1) / tn * 16, (t->m + tm - 1) / tm * (size_t)wy, splits};
      size_t sglobal = (mn + 255) / 256 * 256;
      double best = 1e30;
      for (int round = 0; round < 3; round++) {
        double t0 = now_us();
        for (int r = 0; r < (round ? reps : 3); r++) {
          CHECK(clEnqueueNDRangeKernel(q, kt, 3, NULL, global, local, 0, NULL, NULL));
          if (splits > 1)
            CHECK(clEnqueueNDRangeKernel(q, ks, 1, NULL, &sglobal, NULL, 0, NULL, NULL));
        }
        CHECK(clFinish(q));
        double us = (now_us() - t0) / (round ? reps : 3);
        if (round && us < best)
          best = us;
      }
      CHECK(clEnqueueReadBuffer(q, c, CL_TRUE, 0, (size_t)mn * sizeof(float), got, 0, NULL,
                                NULL));
      const char *same = "reference";
      if (first) {
        ref[i] = malloc((size_t)mn * sizeof(float));
        memcpy(ref[i], got, (size_t)mn * sizeof(float));
      } else {
        /* a k split elsewhere sums in another order: the largest
         * difference against the largest output */
        double worst = 0, top = 1e-30;
        for (size_t j = 0; j < mn; j++) {
          double d = fabs((double)got[j] - ref[i][j]);
          worst = d > worst ? d : worst;
          top = fabs(ref[i][j]) > top ? fabs(ref[i][j]) : top;
        }
        worst /= top;
        static char buf[64];
        if (memcmp(got, ref[i], (size_t)mn * sizeof(float)) == 0)
          same = "same bits";
        else
          snprintf(buf, sizeof buf, "differs (relative %.2g)", worst), same = buf;
        off |= worst > 1e-5;
      }
      printf("%s%dx%dx%dx%d/%d %-28s split %u %9.1f us %6.2f TFLOP/s  %s\n", src == base_src ? "base " : "", rm, rn, wy, chunk,
             fill, t->name, splits, best, 2.0 * t->m * t->n * t->k / best / 1e6, same);
      fflush(stdout);
    }
    first = 0;
    clReleaseKernel(kt);
    clReleaseKernel(ks);
    clReleaseProgram(prog);
    if (off) {
      fprintf(stderr, "gemm_shapes: a shape's products differ from the first's\n");
      return 1;
    }
  }
  return 0;
}
