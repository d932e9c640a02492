/* RLX_CLBLAST_TUNING: override CLBlast's kernel parameters for a device. */
#ifndef RLX_COMPUTE_CLBLAST_TUNING_H
#define RLX_COMPUTE_CLBLAST_TUNING_H

#include <CL/cl.h>
#include <stddef.h>

/* Our own tuning for a device CLBlast's database lacks, or NULL. */
const char *rlx__clblast_known(const char *device_name);
/* Apply spec ("Kernel:NAME=V,...;..."); -1 with the reason in why. */
int rlx__clblast_tune(cl_device_id dev, const char *spec, char *why, size_t whylen);

#endif
