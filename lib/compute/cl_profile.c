/* RLX_COMPUTE_PROFILE: the OpenCL backend's commands timed on the device
 * (cl_profile.h says what each column means). */
#include "compute/cl_profile.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { MAX_PENDING = 256, MAX_ROWS = 64 };

struct pending {
  const char *what;
  int layer, side;
  cl_event ev;
};

struct row {
  const char *what;
  int layer, side;
  long calls;
  double own_ns, before_ns; /* the command's run; the time since the previous one ended */
};

struct rlx__cl_prof {
  struct pending pend[MAX_PENDING];
  int npend;
  struct row rows[MAX_ROWS];
  int nrows;
  long steps;
  double span_ns; /* first start to last end on the compute queue, summed over steps */
  cl_ulong step_start, last_end[2];
  int in_step;
};

int rlx__cl_prof_wanted(char *why, size_t whylen) {
  const char *s = getenv("RLX_COMPUTE_PROFILE");
  if (s == NULL || strcmp(s, "0") == 0 || *s == '\0')
    return 0;
  if (strcmp(s, "1") == 0)
    return 1;
  if (strcmp(s, "host") == 0)
    return 2;
  snprintf(why, whylen, "RLX_COMPUTE_PROFILE=\"%.40s\": expected 0, 1 or host", s);
  return -1;
}

struct rlx__cl_prof *rlx__cl_prof_new(void) { return calloc(1, sizeof(struct rlx__cl_prof)); }

cl_event *rlx__cl_prof_ev(struct rlx__cl_prof *p, const char *what, int layer, int side) {
  if (p == NULL || p->npend == MAX_PENDING)
    return NULL;
  struct pending *e = &p->pend[p->npend++];
  e->what = what;
  e->layer = layer;
  e->side = side;
  e->ev = NULL;
  return &e->ev;
}

static struct row *row_of(struct rlx__cl_prof *p, const struct pending *e) {
  for (int i = 0; i < p->nrows; i++)
    if (p->rows[i].layer == e->layer && p->rows[i].side == e->side &&
        strcmp(p->rows[i].what, e->what) == 0)
      return &p->rows[i];
  if (p->nrows == MAX_ROWS)
    return NULL;
  struct row *r = &p->rows[p->nrows++];
  memset(r, 0, sizeof *r);
  r->what = e->what;
  r->layer = e->layer;
  r->side = e->side;
  return r;
}

void rlx__cl_prof_collect(struct rlx__cl_prof *p, int step) {
  if (p == NULL)
    return;
  for (int i = 0; i < p->npend; i++) {
    struct pending *e = &p->pend[i];
    cl_ulong start = 0, end = 0;
    if (e->ev == NULL) /* the enqueue failed */
      continue;
    if (clWaitForEvents(1, &e->ev) == CL_SUCCESS &&
        clGetEventProfilingInfo(e->ev, CL_PROFILING_COMMAND_START, sizeof start, &start, NULL) ==
            CL_SUCCESS &&
        clGetEventProfilingInfo(e->ev, CL_PROFILING_COMMAND_END, sizeof end, &end, NULL) ==
            CL_SUCCESS &&
        end >= start) {
      struct row *r = row_of(p, e);
      if (!p->in_step && e->side == 0) {
        p->in_step = 1;
        p->step_start = start;
        p->last_end[0] = start;
      }
      cl_ulong prev = p->last_end[e->side] && p->last_end[e->side] <= start ? p->last_end[e->side]
                                                                          : start;
      if (r) {
        r->calls++;
        r->own_ns += (double)(end - start);
        r->before_ns += (double)(start - prev);
      }
      if (end > p->last_end[e->side])
        p->last_end[e->side] = end;
    }
    clReleaseEvent(e->ev);
  }
  p->npend = 0;
  if (step && p->in_step) {
    p->steps++;
    p->span_ns += (double)(p->last_end[0] - p->step_start);
    p->in_step = 0;
    p->last_end[0] = p->last_end[1] = 0;
  }
}

void rlx__cl_prof_report(const struct rlx__cl_prof *p, const char *device) {
  if (p == NULL || p->steps == 0)
    return;
  double k = 1e-3 / (double)p->steps, own = 0, before = 0;
  fprintf(stderr,
          "compute profile (%s), %ld steps, us per step on the device: the compute queue from "
          "its first command's start to its last's end %.1f\n"
          "  %-26s %6s %9s %9s  (own: the command's run, for CLBlast its last kernel; before: "
          "since the previous command on its queue ended)\n",
          device, p->steps, p->span_ns * k, "command", "calls", "own", "before");
  for (int i = 0; i < p->nrows; i++) {
    const struct row *r = &p->rows[i];
    char name[64];
    if (r->layer >= 0)
      snprintf(name, sizeof name, "%s%s, layer %d", r->side ? "[transfer] " : "", r->what, r->layer);
    else
      snprintf(name, sizeof name, "%s%s", r->side ? "[transfer] " : "", r->what);
    fprintf(stderr, "  %-26s %6.2f %9.1f %9.1f\n", name, (double)r->calls / (double)p->steps,
            r->own_ns * k, r->before_ns * k);
    if (r->side == 0) {
      own += r->own_ns;
      before += r->before_ns;
    }
  }
  fprintf(stderr, "  %-26s %6s %9.1f %9.1f\n", "compute queue, in all", "", own * k, before * k);
}

void rlx__cl_prof_free(struct rlx__cl_prof *p) {
  if (p == NULL)
    return;
  rlx__cl_prof_collect(p, 0);
  free(p);
}
