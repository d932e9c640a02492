/* What this host is: an identity that tells ranks on the same host apart
 * from ranks elsewhere (also across containers and network namespaces,
 * where hostnames can repeat), its core count and the CPUs beside this
 * rank's binding (hwloc), and interface addresses for RLX_IFACE. */
#include <ifaddrs.h>
#include <arpa/inet.h>
#include <net/if.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <hwloc.h>
#include <hwloc/glibc-sched.h>
#include "runtime/runtime.h"

int rlx__host_identity(char *buf, size_t len) {
  char host[64] = "localhost", boot[40] = "";
  struct stat net, mnt;
  FILE *f = fopen("/proc/sys/kernel/random/boot_id", "r");
  if (f != NULL) {
    if (fgets(boot, sizeof(boot), f) == NULL)
      boot[0] = '\0';
    boot[strcspn(boot, "\n")] = '\0';
    fclose(f);
  }
  gethostname(host, sizeof(host) - 1);
  host[sizeof(host) - 1] = '\0';
  /* Ranks share Unix sockets only if they share a network and a mount
   * namespace on one booted kernel. */
  if (stat("/proc/self/ns/net", &net) != 0)
    net.st_ino = 0;
  if (stat("/proc/self/ns/mnt", &mnt) != 0)
    mnt.st_ino = 0;
  snprintf(buf, len, "%.40s/%.8s/%lx/%lx", host, boot, (unsigned long)net.st_ino,
           (unsigned long)mnt.st_ino);
  return 0;
}

/* The host's cores in hwloc's logical order (the order rlxrun and srun
 * bind local ranks in), which of them share a NUMA node with the calling
 * thread's binding, and which one that binding is exactly (-1: none, or
 * more than one core). */
static void list_cores(hwloc_topology_t topo, hwloc_const_bitmap_t bound, struct rlx__cores *out) {
  hwloc_bitmap_t nodes = hwloc_bitmap_alloc(), near = hwloc_bitmap_alloc();
  int n = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_CORE);
  out->set = n > 0 ? calloc((size_t)n, sizeof(*out->set)) : NULL;
  out->near = n > 0 ? calloc((size_t)n, 1) : NULL;
  if (nodes && near && out->set && out->near) {
    hwloc_cpuset_to_nodeset(topo, bound, nodes);
    hwloc_cpuset_from_nodeset(topo, near, nodes);
    hwloc_bitmap_and(near, near, hwloc_topology_get_allowed_cpuset(topo));
    for (int i = 0; i < n; i++) {
      hwloc_obj_t core = hwloc_get_obj_by_type(topo, HWLOC_OBJ_CORE, (unsigned)i);
      hwloc_cpuset_to_glibc_sched_affinity(topo, core->cpuset, &out->set[i], sizeof(cpu_set_t));
      out->near[i] = hwloc_bitmap_isincluded(core->cpuset, near);
      if (hwloc_bitmap_isequal(core->cpuset, bound))
        out->own = i;
    }
    out->n = n;
  }
  hwloc_bitmap_free(nodes);
  hwloc_bitmap_free(near);
}

void rlx__cores_free(struct rlx__cores *c) {
  free(c->set);
  free(c->near);
  memset(c, 0, sizeof(*c));
  c->own = -1;
}

int rlx__cores_spare(const struct rlx__cores *c, int local_rank, int local_size, cpu_set_t *out) {
  int k = 0;
  CPU_ZERO(out);
  if (c->own < 0 || c->own != local_rank)
    return 0; /* not bound as a launcher binds in order: whose are the others? */
  for (int i = local_size; i < c->n; i++) {
    if (c->near[i]) {
      CPU_OR(out, out, &c->set[i]);
      k++;
    }
  }
  return k;
}

int rlx__host_cores(char *binding, size_t len, struct rlx__cores *cores) {
  hwloc_topology_t topo;
  int n = 0;
  memset(cores, 0, sizeof(*cores));
  cores->own = -1;
  if (binding && len)
    snprintf(binding, len, "binding unknown");
  if (hwloc_topology_init(&topo) != 0)
    return (int)sysconf(_SC_NPROCESSORS_ONLN);
  if (hwloc_topology_load(topo) == 0) {
    n = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_CORE);
    hwloc_bitmap_t set = hwloc_bitmap_alloc();
    /* the calling thread's: rlx_init runs before the application starts
     * threads of its own, and a launcher binds the whole process */
    if (set && hwloc_get_cpubind(topo, set, HWLOC_CPUBIND_THREAD) == 0) {
      char list[96];
      hwloc_bitmap_list_snprintf(list, sizeof list, set);
      int all = hwloc_bitmap_isincluded(hwloc_topology_get_allowed_cpuset(topo), set);
      if (binding && len)
        snprintf(binding, len, "%s cpus %s", all ? "not bound:" : "bound to", list);
      list_cores(topo, set, cores);
    }
    hwloc_bitmap_free(set);
  }
  hwloc_topology_destroy(topo);
  if (n <= 0)
    n = (int)sysconf(_SC_NPROCESSORS_ONLN);
  return n > 0 ? n : 1;
}

void rlx__cpu_list(const cpu_set_t *set, char *out, size_t len) {
  hwloc_bitmap_t b = hwloc_bitmap_alloc();
  out[0] = '\0';
  if (b == NULL)
    return;
  for (int c = 0; c < CPU_SETSIZE; c++)
    if (CPU_ISSET(c, set))
      hwloc_bitmap_set(b, (unsigned)c);
  hwloc_bitmap_list_snprintf(out, len, b);
  hwloc_bitmap_free(b);
}
