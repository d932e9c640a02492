/* Loading OpenBLAS. Debian 12's OpenBLAS (0.3.21) does not know some newer
 * CPUs by model (a Sapphire Rapids VM that calls itself "Intel Xeon
 * Processor", for one) and falls back to its Prescott (SSE3) kernels:
 * three times slower on the lent machine. Its choice is made in its
 * load-time constructor from OPENBLAS_CORETYPE, so when it has fallen back
 * to pre-AVX2 kernels on a CPU with AVX2 and FMA, and the user set no
 * OPENBLAS_CORETYPE, we unload it, name the right kernels and load it
 * again. Loaded RTLD_LOCAL and only by us, so the unload is real. */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "compute/blas.h"
#include "base/internal.h"

#define OPENBLAS_SONAME "libopenblas.so.0"

static struct rlx__blas blas;
static void *handle;
static char load_error[512];
static pthread_once_t once = PTHREAD_ONCE_INIT;

/* OpenBLAS's kernel sets that predate AVX2. */
static int pre_avx2(const char *core) {
  static const char *const old[] = {"Prescott", "Core2", "Penryn", "Dunnington", "Nehalem",
                                    "Sandybridge", "Atom", "Katmai", "Coppermine", "Northwood",
                                    "Banias", "Opteron", "Barcelona", "Bobcat", "Bulldozer",
                                    "Piledriver", "Steamroller", "Excavator", "Unknown"};
  for (size_t i = 0; i < RLX__ARRAY_SIZE(old); i++)
    if (!strcasecmp(core, old[i]))
      return 1;
  return 0;
}

static int open_lib(void) {
  handle = dlopen(OPENBLAS_SONAME, RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    snprintf(load_error, sizeof load_error,
             "cannot load OpenBLAS (%s): %s; on Debian: apt-get install libopenblas0", OPENBLAS_SONAME,
             dlerror());
    return -1;
  }
  char *(*corename)(void) = (char *(*)(void))dlsym(handle, "openblas_get_corename");
  void (*threads)(int) = (void (*)(int))dlsym(handle, "openblas_set_num_threads");
  blas.sgemm = (__typeof__(cblas_sgemm) *)dlsym(handle, "cblas_sgemm");
  blas.sgemv = (__typeof__(cblas_sgemv) *)dlsym(handle, "cblas_sgemv");
  if (!blas.sgemm || !blas.sgemv) {
    snprintf(load_error, sizeof load_error, "%s has no cblas_sgemm or cblas_sgemv", OPENBLAS_SONAME);
    dlclose(handle);
    handle = NULL;
    return -1;
  }
  /* Ranks are the parallelism; OpenBLAS threads would fight them for cores. */
  if (threads)
    threads(1);
  snprintf(blas.core, sizeof blas.core, "%s", corename ? corename() : "unknown");
  return 0;
}

static void load(void) {
  if (open_lib())
    return;
  __builtin_cpu_init();
  if (getenv("OPENBLAS_CORETYPE") || !pre_avx2(blas.core) || !__builtin_cpu_supports("avx2") ||
      !__builtin_cpu_supports("fma"))
    return;
  const char *better = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                               __builtin_cpu_supports("avx512vl") &&
                               __builtin_cpu_supports("avx512dq")
                           ? "SkylakeX"
                           : "Haswell";
  char was[sizeof blas.core];
  snprintf(was, sizeof was, "%s", blas.core);
  dlclose(handle);
  setenv("OPENBLAS_CORETYPE", better, 0);
  if (open_lib())
    return;
  rlx__info("compute: OpenBLAS took its %s kernels on a CPU with %s; reloaded it with "
            "OPENBLAS_CORETYPE=%s (now %s)", was, strcmp(better, "SkylakeX") ? "AVX2" : "AVX-512",
            better, blas.core);
}

const struct rlx__blas *rlx__blas_get(void) {
  pthread_once(&once, load);
  if (!handle) {
    rlx__err(RLX_ERR_DEVICE, "cpu backend: %s", load_error);
    return NULL;
  }
  return &blas;
}
