/* What this host is: an identity that tells ranks on the same host apart
 * from ranks elsewhere (also across containers and network namespaces,
 * where hostnames can repeat), its core count (hwloc), and interface
 * addresses for RLX_IFACE. */
#include <ifaddrs.h>
#include <arpa/inet.h>
#include <net/if.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <hwloc.h>
#include "runtime.h"

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

int rlx__host_cores(char *binding, size_t len) {
  hwloc_topology_t topo;
  int n = 0;
  if (binding && len)
    snprintf(binding, len, "binding unknown");
  if (hwloc_topology_init(&topo) != 0)
    return (int)sysconf(_SC_NPROCESSORS_ONLN);
  if (hwloc_topology_load(topo) == 0) {
    n = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_CORE);
    hwloc_bitmap_t set = hwloc_bitmap_alloc();
    if (binding && set && hwloc_get_cpubind(topo, set, HWLOC_CPUBIND_PROCESS) == 0) {
      char list[96];
      hwloc_bitmap_list_snprintf(list, sizeof list, set);
      int all = hwloc_bitmap_isincluded(hwloc_topology_get_allowed_cpuset(topo), set);
      snprintf(binding, len, "%s cpus %s", all ? "not bound:" : "bound to", list);
    }
    hwloc_bitmap_free(set);
  }
  hwloc_topology_destroy(topo);
  if (n <= 0)
    n = (int)sysconf(_SC_NPROCESSORS_ONLN);
  return n > 0 ? n : 1;
}

