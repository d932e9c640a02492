/* --bind-to core|numa|none: rlxrun binds its own thread to rank r's cpuset
 * just before spawning it (a child inherits its parent's affinity), then
 * takes its first binding back. Rank r gets the (r mod count)-th core or
 * NUMA node in hwloc's logical order. Joiners (BIND_AWAY) get every cpu
 * the job's ranks do not take. */
#include <hwloc.h>
#include <stdio.h>
#include <stdlib.h>
#include "bind.h"

struct binder {
  hwloc_topology_t topo;
  hwloc_obj_type_t type;
  int count;
  int how;
  hwloc_bitmap_t saved;
  hwloc_bitmap_t away; /* BIND_AWAY: the machine's cpus less the job's */
};

struct binder *binder_open(int how, int nranks) {
  struct binder *b = calloc(1, sizeof *b);
  if (!b)
    return NULL;
  if (hwloc_topology_init(&b->topo) != 0 || hwloc_topology_load(b->topo) != 0) {
    fprintf(stderr, "rlxrun: hwloc cannot read this machine's topology\n");
    free(b);
    return NULL;
  }
  int cores = hwloc_get_nbobjs_by_type(b->topo, HWLOC_OBJ_CORE);
  if (how == BIND_DEFAULT)
    how = nranks <= cores ? BIND_CORE : BIND_NONE;
  b->how = how;
  if (how == BIND_AWAY) { /* (until binder_set_taken: all of them) */
    b->away = hwloc_bitmap_dup(hwloc_topology_get_topology_cpuset(b->topo));
    if (b->away == NULL) {
      binder_close(b);
      return NULL;
    }
  }
  b->type = how == BIND_NUMA ? HWLOC_OBJ_NUMANODE : HWLOC_OBJ_CORE;
  b->count = hwloc_get_nbobjs_by_type(b->topo, b->type);
  if (how != BIND_NONE && b->count <= 0) {
    fprintf(stderr, "rlxrun: hwloc finds no %s to bind to\n", how == BIND_NUMA ? "NUMA node" : "core");
    binder_close(b);
    return NULL;
  }
  b->saved = hwloc_bitmap_alloc();
  if (hwloc_get_cpubind(b->topo, b->saved, HWLOC_CPUBIND_THREAD) != 0) {
    hwloc_bitmap_free(b->saved);
    b->saved = NULL;
  }
  return b;
}

/* One character pair per PU, "/" between cores: B bound, . not. */
static void picture(hwloc_topology_t t, hwloc_const_bitmap_t set, char *out, size_t len) {
  size_t k = 0;
  int ncores = hwloc_get_nbobjs_by_type(t, HWLOC_OBJ_CORE);
  out[0] = '[';
  k = 1;
  for (int c = 0; c < ncores && k + 8 < len; c++) {
    hwloc_obj_t core = hwloc_get_obj_by_type(t, HWLOC_OBJ_CORE, (unsigned)c);
    if (c)
      out[k++] = '/';
    int pu;
    hwloc_bitmap_foreach_begin(pu, core->cpuset) {
      if (k + 4 < len)
        out[k++] = hwloc_bitmap_isset(set, (unsigned)pu) ? 'B' : '.';
    }
    hwloc_bitmap_foreach_end();
  }
  out[k++] = ']';
  out[k] = '\0';
}

void binder_cpus(struct binder *b, int n, char *list, size_t len) {
  hwloc_bitmap_t all = hwloc_bitmap_alloc();
  if (len)
    list[0] = '\0';
  if (all == NULL || b->how == BIND_NONE || b->how == BIND_AWAY) {
    hwloc_bitmap_free(all);
    return;
  }
  for (int r = 0; r < n && r < b->count; r++)
    hwloc_bitmap_or(all, all, hwloc_get_obj_by_type(b->topo, b->type, (unsigned)r)->cpuset);
  hwloc_bitmap_list_snprintf(list, len, all);
  hwloc_bitmap_free(all);
}

void binder_set_taken(struct binder *b, const char *list) {
  hwloc_bitmap_t taken = hwloc_bitmap_alloc();
  if (b->away && taken && list && *list && hwloc_bitmap_list_sscanf(taken, list) == 0)
    hwloc_bitmap_andnot(b->away, b->away, taken);
  hwloc_bitmap_free(taken);
}

int binder_apply(struct binder *b, int r, int report) {
  if (b->how == BIND_AWAY) {
    char pic[1024];
    if (hwloc_bitmap_iszero(b->away)) { /* the job takes every core: the kernel places it */
      if (report)
        fprintf(stderr, "rlxrun: joining rank %d not bound: the job's ranks take every core\n", r);
      return 0;
    }
    if (hwloc_set_cpubind(b->topo, b->away, HWLOC_CPUBIND_THREAD) != 0) {
      fprintf(stderr, "rlxrun: cannot bind joining rank %d away from the job's cores\n", r);
      return -1;
    }
    if (report) {
      picture(b->topo, b->away, pic, sizeof pic);
      fprintf(stderr, "rlxrun: joining rank %d bound to the cores the job's ranks do not take: %s\n",
              r, pic);
    }
    return 0;
  }
  if (b->how == BIND_NONE) {
    if (report)
      fprintf(stderr, "rlxrun: rank %d not bound (--bind-to none)\n", r);
    return 0;
  }
  hwloc_obj_t o = hwloc_get_obj_by_type(b->topo, b->type, (unsigned)(r % b->count));
  if (hwloc_set_cpubind(b->topo, o->cpuset, HWLOC_CPUBIND_THREAD) != 0) {
    fprintf(stderr, "rlxrun: cannot bind rank %d to %s %u\n", r,
            b->type == HWLOC_OBJ_CORE ? "core" : "NUMA node", o->logical_index);
    return -1;
  }
  if (report) {
    char pic[1024];
    picture(b->topo, o->cpuset, pic, sizeof pic);
    fprintf(stderr, "rlxrun: rank %d bound to %s %u: %s\n", r,
            b->type == HWLOC_OBJ_CORE ? "core" : "NUMA node", o->logical_index, pic);
  }
  return 0;
}

void binder_restore(struct binder *b) {
  if (b && b->saved)
    hwloc_set_cpubind(b->topo, b->saved, HWLOC_CPUBIND_THREAD);
}

void binder_close(struct binder *b) {
  if (!b)
    return;
  if (b->saved)
    hwloc_bitmap_free(b->saved);
  if (b->away)
    hwloc_bitmap_free(b->away);
  hwloc_topology_destroy(b->topo);
  free(b);
}
