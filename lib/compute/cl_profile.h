/* Where an OpenCL step's time goes (RLX_COMPUTE_PROFILE=1): every command
 * the backend enqueues gets a profiling event; at each wait the events are
 * read and, per command, the device time since the previous command on
 * the same queue ended is split into the command's own run (its kernel;
 * for a CLBlast routine, its last kernel) and what came before it (the
 * device idle, waiting for the host to enqueue it, or the routine's
 * earlier kernels). The table goes to stderr when the model is freed. */
#ifndef RLX_COMPUTE_CL_PROFILE_H
#define RLX_COMPUTE_CL_PROFILE_H

/* CL_TARGET_OPENCL_VERSION comes from the build flags (cl_devices.h). */
#include <CL/cl.h>
#include <stddef.h>

struct rlx__cl_prof;

/* RLX_COMPUTE_PROFILE: 1 on (the device's events and the host's spans),
 * 2 for "host" (the host's spans only: the events cost time of their
 * own), 0 or unset off; -1 (why filled) otherwise. */
int rlx__cl_prof_wanted(char *why, size_t whylen);
struct rlx__cl_prof *rlx__cl_prof_new(void);
/* The event slot for the next command (what, layer; layer -1: none) on
 * queue side (0 compute, 1 transfers); NULL when p is NULL or full, which
 * the enqueue calls take as "no event". */
cl_event *rlx__cl_prof_ev(struct rlx__cl_prof *p, const char *what, int layer, int side);
/* Read and release the events so far; step: one step ended with them. */
void rlx__cl_prof_collect(struct rlx__cl_prof *p, int step);
void rlx__cl_prof_report(const struct rlx__cl_prof *p, const char *device);
void rlx__cl_prof_free(struct rlx__cl_prof *p);

#endif
