/* Interfaces by NCCL's grammar (RLX_IFACE and rlxrun's rendezvous
 * address): a comma-separated list of name prefixes, "^" to exclude them,
 * "=" for exact names. */
#include <arpa/inet.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include "bootstrap/bootstrap.h"

/* NCCL's grammar: "eth" is a prefix, "=eth0" an exact name, "^docker" skips
 * what matches; entries separated by commas. */
static int iface_wanted(const char *spec, const char *name) {
  int exclude = spec[0] == '^';
  const char *p = exclude ? spec + 1 : spec;
  int exact = p[0] == '=';
  if (exact)
    p++;
  char list[64];
  snprintf(list, sizeof(list), "%s", p);
  char *save;
  for (char *tok = strtok_r(list, ",", &save); tok != NULL; tok = strtok_r(NULL, ",", &save)) {
    int hit = exact ? strcmp(name, tok) == 0 : strncmp(name, tok, strlen(tok)) == 0;
    if (hit)
      return !exclude;
  }
  return exclude;
}

int rlx__iface_ip(const char *spec, char *ip, size_t len) {
  struct ifaddrs *ifa, *i;
  int found = -1;
  if (getifaddrs(&ifa) != 0)
    return -1;
  for (i = ifa; i != NULL; i = i->ifa_next) {
    if (i->ifa_addr == NULL || i->ifa_addr->sa_family != AF_INET || !(i->ifa_flags & IFF_UP))
      continue;
    if (!iface_wanted(spec, i->ifa_name))
      continue;
    inet_ntop(AF_INET, &((struct sockaddr_in *)i->ifa_addr)->sin_addr, ip, (socklen_t)len);
    found = 0;
    break;
  }
  freeifaddrs(ifa);
  return found;
}
