/* Where ranks go: --host h1:2,h2:2 and --hostfile F (Open MPI's syntax). */
#ifndef RLXRUN_HOSTS_H
#define RLXRUN_HOSTS_H

struct host_slot {
  char name[128];
  int slots;
};

struct hostlist {
  struct host_slot *h;
  int n;
};

/* Append "h1:2,h2" (slots default 1). -1 with a message on stderr. */
int hosts_parse_list(struct hostlist *hl, const char *spec);
/* Append the lines of F: "name [slots=N]", '#' comments, blank lines. */
int hosts_parse_file(struct hostlist *hl, const char *path);
/* Rank r's host, filling each host's slots in order ("by slot"). -1 when
 * the slots run out. */
int hosts_of_rank(const struct hostlist *hl, int r, int *local_rank);
/* Number of ranks of nranks on host index h. */
int hosts_count_on(const struct hostlist *hl, int h, int nranks);
int hosts_total_slots(const struct hostlist *hl);
/* Is this name this machine (localhost, 127.0.0.1 or our hostname)? */
int hosts_is_local(const char *name);

#endif
