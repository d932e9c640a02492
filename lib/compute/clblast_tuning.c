/* RLX_CLBLAST_TUNING: CLBlast's kernel parameters for a device its tuning
 * database does not know (the H200 in Debian 12's CLBlast 1.5.3), without
 * rebuilding CLBlast. Grammar, as CLBlast's tuners print the values:
 *   Kernel:NAME=V,NAME=V[;Kernel:...]
 * e.g. "GemmRoutine:XGEMM_MIN_INDIRECT_SIZE=2048". CLBlast wants every
 * parameter of a kernel at once and says so when one is missing.
 * bench/clblast_tuning.py makes the value from CLBlast's tuner output. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <clblast_c.h>
#include "compute/clblast_tuning.h"

#define MAX_PARAMS 32

static int apply_one(cl_device_id dev, char *kernel, char *list, char *why, size_t whylen) {
  const char *names[MAX_PARAMS];
  size_t values[MAX_PARAMS], n = 0;
  for (char *save, *t = strtok_r(list, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
    char *eq = strchr(t, '='), *end;
    if (!eq || eq == t || n == MAX_PARAMS) {
      snprintf(why, whylen, "RLX_CLBLAST_TUNING: '%s' in %s is not NAME=VALUE", t, kernel);
      return -1;
    }
    *eq = '\0';
    unsigned long long v = strtoull(eq + 1, &end, 10);
    if (end == eq + 1 || *end) {
      snprintf(why, whylen, "RLX_CLBLAST_TUNING: %s=%s in %s is not a whole number", t, eq + 1,
               kernel);
      return -1;
    }
    names[n] = t;
    values[n++] = (size_t)v;
  }
  CLBlastStatusCode s = CLBlastOverrideParameters(dev, kernel, CLBlastPrecisionSingle, n, names,
                                                  values);
  if (s != CLBlastSuccess) {
    snprintf(why, whylen,
             "RLX_CLBLAST_TUNING: CLBlast refused the %zu parameter(s) for %s (status %d; it "
             "wants all of a kernel's parameters, by the names its tuner prints)", n, kernel,
             (int)s);
    return -1;
  }
  return 0;
}

/* Devices we tuned ourselves (bench/results/clblast_*_<device>.json). On
 * the H200, CLBlast's defaults run a 1024^3 SGEMM in 0.56 ms, these in
 * 0.092 ms. */
static const struct {
  const char *device;
  const char *spec;
} known[] = {
    {"NVIDIA H200",
     "Xgemm:GEMMK=0,KREG=1,KWG=32,KWI=2,MDIMA=16,MDIMC=16,MWG=64,NDIMB=16,NDIMC=16,NWG=64,SA=1,"
     "SB=1,STRM=0,STRN=0,VWM=4,VWN=4;"
     "XgemmDirect:KWID=2,MDIMAD=8,MDIMCD=8,NDIMBD=8,NDIMCD=8,PADA=1,PADB=1,VWMD=4,VWND=4,WGD=32"},
};

const char *rlx__clblast_known(const char *device_name) {
  for (size_t i = 0; i < sizeof known / sizeof known[0]; i++)
    if (!strcmp(device_name, known[i].device))
      return known[i].spec;
  return NULL;
}

int rlx__clblast_tune(cl_device_id dev, const char *spec, char *why, size_t whylen) {
  if (!spec || !*spec)
    return 0;
  char *copy = strdup(spec);
  if (!copy) {
    snprintf(why, whylen, "out of memory");
    return -1;
  }
  int rc = 0;
  for (char *save, *k = strtok_r(copy, ";", &save); k && rc == 0; k = strtok_r(NULL, ";", &save)) {
    char *colon = strchr(k, ':');
    if (!colon || colon == k || !colon[1]) {
      snprintf(why, whylen, "RLX_CLBLAST_TUNING: '%s' is not Kernel:NAME=V,...", k);
      rc = -1;
      break;
    }
    *colon = '\0';
    rc = apply_one(dev, k, colon + 1, why, whylen);
  }
  free(copy);
  return rc;
}
