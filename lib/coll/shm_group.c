/* A communicator's shared segment: made by its rank 0, handed to the
 * other members over their Unix-socket connections, agreed on by all
 * (shm_group.h says the layout and why). */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include "engine/engine.h"
#include "base/internal.h"
#include "base/tuning.h"
#include "transport/p2p.h"
#include "transport/shm_seg.h"
#include "shm_group.h"

#define SHMG_MAGIC 0x31474d48534c5852ull /* "RXLSHMG1" */
#define SHMG_PAGE 4096u

_Static_assert(sizeof(struct rlx__shmg_hdr) <= SHMG_PAGE, "header fits its page");
_Static_assert(sizeof(struct rlx__shmg_line) <= RLX__SHMG_LINE, "a rank's line fits");

/* Live groups, for peer losses; under the loop lock. */
static struct rlx__list groups = {&groups, &groups};

/* Listed (under the loop lock), a group hears of the losses to come
 * (rlx__shmg_on_lost); one its transport heard of before (after the last
 * agreement that made the group, before this: the loop tells only the
 * groups listed when it hears) fails it now, as the telling would have.
 * Without this, its first call waits for the lost until its deadline. */
static void list_locked(struct rlx__shm_group *g) {
  rlx__list_push(&groups, &g->link);
  g->listed = 1;
  for (int r = 0; r < g->n; r++) {
    const char *why = r != g->me ? rlx__p2p_lost_reason(g->p2p, g->world[r]) : NULL;
    if (why != NULL) {
      rlx__shmg_fail(g, RLX_ERR_PEER_LOST, r, UINT64_MAX, why);
      return;
    }
  }
}

static void list_group(struct rlx__shm_group *g) {
  rlx__engine_lock(g->engine);
  list_locked(g);
  rlx__engine_unlock(g->engine);
}

static size_t lines_span(int n) {
  return ((size_t)n * RLX__SHMG_LINE + SHMG_PAGE - 1) & ~(size_t)(SHMG_PAGE - 1);
}

static size_t seg_len(int n, size_t slot) {
  return SHMG_PAGE + lines_span(n) + ((size_t)n * 2 + 2) * slot;
}

static void place(struct rlx__shm_group *g) {
  g->hdr = g->base;
  g->line = (void *)((char *)g->base + SHMG_PAGE);
  g->data = (unsigned char *)g->base + SHMG_PAGE + lines_span(g->cap);
  g->result = g->data + (size_t)g->cap * 2 * g->slot;
}

/* Rank 0: a sealed memfd of the whole segment, mapped, header written. */
static int create(struct rlx__shm_group *g, int *memfd) {
  int fd = memfd_create("rlxcoll-group", MFD_CLOEXEC | MFD_ALLOW_SEALING);
  if (fd < 0)
    return -errno;
  int rc = rlx__memfd_size(fd, g->len, "a communicator's shared segment",
                           "its collectives go point to point instead");
  if (rc != 0 || fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) != 0) {
    rc = rc != 0 ? rc : -errno;
    close(fd);
    return rc;
  }
  void *b = mmap(NULL, g->len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (b == MAP_FAILED) {
    rc = -errno;
    close(fd);
    return rc;
  }
  g->base = b;
  place(g);
  g->hdr->magic = SHMG_MAGIC;
  g->hdr->n = (uint32_t)g->cap;
  g->hdr->comm_id = g->comm_id;
  g->hdr->slot = g->slot;
  g->hdr->len = g->len;
  *memfd = fd;
  return 0;
}

/* The others: map what rank 0 sent, if it is the segment we expect (a
 * joiner's: of the grown communicator, its layout as RLX_MAX_NP says). */
static int attach(struct rlx__shm_group *g, int fd, int check_id) {
  struct stat st;
  int rc = 0;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || (size_t)st.st_size != g->len ||
      fcntl(fd, F_GET_SEALS) != (F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL)) {
    close(fd);
    return -EPROTO;
  }
  void *b = mmap(NULL, g->len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (b == MAP_FAILED)
    rc = -errno;
  close(fd);
  if (rc != 0)
    return rc;
  g->base = b;
  place(g);
  if (g->hdr->magic != SHMG_MAGIC || g->hdr->n != (uint32_t)g->cap ||
      (check_id && g->hdr->comm_id != g->comm_id) || g->hdr->slot != g->slot ||
      g->hdr->len != g->len)
    return -EPROTO; /* a segment of another communicator: nothing to trust */
  return 0;
}

/* Between two looks at what the set-up waits for (since: when the wait
 * began): only yield the core for its first 500 us, then sleep 20 us. A
 * sleep costs ~70 us here (the timer's slack), and what comes (the
 * segment's descriptor, a peer's agreement) mostly comes within that:
 * sleeping from the start made every set-up ~110 us longer. */
void rlx__shmg_rest(uint64_t since) {
  if (rlx__now_ns() - since < 500000) {
    sched_yield();
    return;
  }
  struct timespec ts = {0, 20 * 1000};
  nanosleep(&ts, NULL);
}

/* Drive the loop until the connections to peers (world ranks: rank 0's
 * to the members it hands the segment to; a member's to rank 0) are ready
 * shared-memory ones (1), one of them will not be (0), or the deadline. */
static int connect_all(struct rlx__shm_group *g, const int *peers, int npeers, uint64_t deadline) {
  uint64_t since = rlx__now_ns();
  for (;;) {
    int waiting = 0, bad = 0;
    rlx__engine_lock(g->engine);
    rlx__engine_turn(g->engine); /* the rings too (rlx_test says why) */
    for (int i = 0; i < npeers; i++) {
      int st = rlx__p2p_shm_state(g->p2p, peers[i]);
      waiting += st == 0;
      bad += st < 0;
    }
    rlx__engine_unlock(g->engine);
    if (bad)
      return 0;
    if (!waiting)
      return 1;
    if (rlx__now_ns() >= deadline)
      return 0;
    rlx__shmg_rest(since);
  }
}

/* Rank 0 sends the segment to peers (world ranks); a full socket is tried
 * again. */
static int send_all(struct rlx__shm_group *g, int memfd, const int *peers, int npeers,
                    uint64_t deadline) {
  uint64_t since = rlx__now_ns();
  for (int i = 0; i < npeers; i++) {
    int rc;
    for (;;) {
      rlx__engine_lock(g->engine);
      rc = rlx__p2p_send_fd(g->p2p, peers[i], memfd);
      rlx__engine_unlock(g->engine);
      if (rc != -EAGAIN || rlx__now_ns() >= deadline)
        break;
      rlx__shmg_rest(since);
    }
    if (rc != 0) {
      rlx__debug("no shared segment for job rank %d: %s", peers[i], strerror(-rc));
      return 0;
    }
  }
  return 1;
}

/* Rank 0's peers in a set-up (every other member), or a member's (rank 0). */
static int setup_peers(const struct rlx__shm_group *g, const int **peers) {
  *peers = g->me == 0 ? g->world + 1 : g->world;
  return g->me == 0 ? g->n - 1 : 1;
}

/* A member takes what rank 0 (world rank from) sent (it may still be on
 * its way); check_id: the header must name g's communicator (a joiner's
 * segment, sent ahead of its communicator, names an earlier one). */
static int take(struct rlx__shm_group *g, int from, int check_id, uint64_t deadline) {
  uint64_t since = rlx__now_ns();
  int fd;
  for (;;) {
    rlx__engine_lock(g->engine);
    rlx__engine_turn(g->engine);
    fd = rlx__p2p_take_fd(g->p2p, from);
    rlx__engine_unlock(g->engine);
    if (fd != -EAGAIN || rlx__now_ns() >= deadline)
      break;
    rlx__shmg_rest(since);
  }
  int rc = fd < 0 ? fd : attach(g, fd, check_id);
  if (rc == -EMFILE || rc == -ENFILE)
    rlx__warn("no shared segment from rank 0 for a communicator of %d ranks: %s (ulimit -n?): "
              "its collectives go point to point", g->n, strerror(-rc));
  else if (rc != 0)
    rlx__debug("no shared segment from rank 0: %s",
               rc == -EPROTO ? "not a sealed segment of this communicator" : strerror(-rc));
  return rc == 0;
}

/* The members' setup waits are bounded even without RLX_TIMEOUT: a
 * member that cannot get the segment says so in the agreement. */
static uint64_t bounded(uint64_t deadline) {
  uint64_t cap = rlx__now_ns() + 30ull * 1000000000ull;
  return deadline == 0 || deadline > cap ? cap : deadline;
}

/* A group of n ranks (world: comm rank -> world rank, owned from now on),
 * not mapped yet; NULL when out of memory. */
static struct rlx__shm_group *new_group(struct rlx__engine *e, struct rlx__p2p *p,
                                        uint32_t comm_id, int *world, int n, int me, int cap) {
  struct rlx__shm_group *g = calloc(1, sizeof(*g));
  if (g == NULL)
    return NULL;
  g->world = world;
  g->n = n;
  g->me = me;
  g->cap = cap > n ? cap : n;
  g->memfd = -1;
  g->comm_id = comm_id;
  g->slot = RLX__SHMG_SLOT;
  g->len = seg_len(g->cap, g->slot);
  g->engine = e;
  g->p2p = p;
  if ((g->pids = calloc((size_t)g->cap, sizeof(int))) == NULL) {
    free(g);
    return NULL;
  }
  static _Atomic uint64_t serials;
  g->serial = atomic_fetch_add(&serials, 1) + 1;
  return g;
}

static int *copy_world(const int *world, int n) {
  int *w = malloc(sizeof(int) * (size_t)n);
  if (w != NULL)
    memcpy(w, world, sizeof(int) * (size_t)n);
  return w;
}

struct rlx__shm_group *rlx__shmg_setup(struct rlx__engine *e, struct rlx__p2p *p,
                                       uint32_t comm_id, const int *world, int n, int me, int cap,
                                       uint64_t deadline, int (*run_agree)(void *ctx, int *ok),
                                       void *ctx, int *err) {
  int *w = copy_world(world, n);
  struct rlx__shm_group *g = w != NULL ? new_group(e, p, comm_id, w, n, me, cap) : NULL;
  int ok = g != NULL, memfd = -1;
  const int *peers = NULL;
  int npeers = g != NULL ? setup_peers(g, &peers) : 0;
  *err = 0;
  if (g == NULL)
    free(w);
  deadline = bounded(deadline);
  if (ok)
    ok = connect_all(g, peers, npeers, deadline);
  if (ok && me == 0) {
    int rc = create(g, &memfd);
    if (rc != 0)
      rlx__debug("no shared segment for the communicator: %s", strerror(-rc));
    ok = rc == 0;
  }
  if ((*err = run_agree(ctx, &ok)) != 0 || !ok)
    goto none;
  ok = me == 0 ? send_all(g, memfd, peers, npeers, deadline) : take(g, g->world[0], 1, deadline);
  if (ok) /* (before the agreement: every rank's is there once it is done) */
    atomic_store(&g->line[me].pid, (int32_t)getpid());
  if ((*err = run_agree(ctx, &ok)) != 0 || !ok)
    goto none;
  /* The mappings keep it; nothing of it outlives the processes. Rank 0
   * of a layout with room keeps the descriptor too, for joiners. */
  if (memfd >= 0 && g->cap > n)
    g->memfd = memfd;
  else if (memfd >= 0)
    close(memfd);
  list_group(g);
  return g;
none:
  if (memfd >= 0)
    close(memfd);
  if (g != NULL) {
    g->link.next = NULL;
    rlx__shmg_free(g);
  }
  return NULL;
}

/* A joiner's own line, before any call: it has arrived at the step the
 * segment is at (and the one before), as the members have, so the first
 * step of the first call waits for nobody's past. */
static void join_line(struct rlx__shm_group *g, uint64_t step) {
  struct rlx__shmg_line *l = &g->line[g->me];
  memset(l, 0, sizeof(*l));
  for (uint64_t k = 0; k < RLX__SHMG_CELLS; k++) /* (steps step - CELLS + 1 .. step) */
    atomic_store(&l->cell[(step - k) & (RLX__SHMG_CELLS - 1)].arrive, step >= k ? step - k : 0);
  atomic_store(&l->reduced, step);
  atomic_store(&l->pid, (int32_t)getpid());
  g->step = g->min_seen = step;
}

struct rlx__shm_group *rlx__shmg_receive(struct rlx__engine *e, struct rlx__p2p *p, int from,
                                         const int *world, int n, int me, int cap,
                                         uint64_t deadline) {
  int *w = copy_world(world, n);
  struct rlx__shm_group *g = w != NULL ? new_group(e, p, 0, w, n, me, cap) : NULL;
  if (g == NULL) {
    free(w);
    return NULL;
  }
  deadline = bounded(deadline);
  if (!connect_all(g, &from, 1, deadline) || !take(g, from, 0, deadline)) {
    g->link.next = NULL;
    rlx__shmg_free(g);
    return NULL;
  }
  return g;
}

/* Fault in the pages of [p, p + len) that the segment holds already
 * (resident: some member touched them), or, with like, those at the same
 * offsets as like's resident ones (allocating them). */
static void populate(char *p, size_t len, const char *like, unsigned char *vec) {
#ifdef MADV_POPULATE_WRITE
  if (mincore((void *)(like != NULL ? like : p), len, vec) != 0)
    return;
  size_t pages = len / SHMG_PAGE;
  for (size_t i = 0; i < pages;) {
    size_t j = i;
    while (j < pages && (vec[j] & 1))
      j++;
    if (j > i)
      (void)madvise(p + i * SHMG_PAGE, (j - i) * SHMG_PAGE, MADV_POPULATE_WRITE);
    i = j + 1;
  }
#else
  (void)p, (void)len, (void)like, (void)vec;
#endif
}

void rlx__shmg_prefault(struct rlx__shm_group *g, int me, int n) {
  size_t span = 2 * g->slot, head = SHMG_PAGE + lines_span(g->cap);
  unsigned char *vec = malloc((head > span ? head : span) / SHMG_PAGE);
  if (vec == NULL || n > g->cap || me >= n) {
    free(vec);
    return;
  }
  populate(g->base, head, NULL, vec);
  /* the slots in use, ours as rank 0 uses its own (from 3 ranks: at 2,
   * large allreduces run point to point, and our slots wait for our own
   * broadcasts; making them now would hold a 1 -> 2 admission, where no
   * other member waits for our dial) */
  for (int r = 0; r < n; r++)
    if (r != me || n > 2)
      populate((char *)g->data + (size_t)r * span, span,
               r == me ? (const char *)g->data : NULL, vec);
  populate((char *)g->result, span, NULL, vec);
  free(vec);
}

void rlx__shmg_touch_own(struct rlx__shm_group *g, int result) {
#ifdef MADV_POPULATE_WRITE
  size_t span = 2 * g->slot;
  (void)madvise((char *)g->data + (size_t)g->me * span, span, MADV_POPULATE_WRITE);
  if (result)
    (void)madvise((char *)g->result, span, MADV_POPULATE_WRITE);
#else
  (void)g, (void)result;
#endif
}

void rlx__shmg_mark_adopt(struct rlx__shm_group *g) {
  if (g->me == 0)
    g->hdr->adopt_step = g->step;
  struct rlx__shmg_line *l = &g->line[g->me];
  atomic_store(&l->p2p_seq, 0);
  atomic_store(&l->p2p_sig[0], 0);
  atomic_store(&l->p2p_sig[1], 0);
  /* A comparison still owed (rlx__shmg_owe) would read the joiners' cells,
   * which never held that call: dropped (the admission's own calls ran
   * after it, every member at the same step). */
  memset(g->owed, 0, sizeof(g->owed));
  g->owing = 0;
  g->owed_last = 0;
  g->owed_next = 0;
}

void rlx__shmg_take_over(struct rlx__shm_group *g, int member, uint32_t comm_id, int *world,
                         int n, int me) {
  if (!member) { /* (not live yet; rank 0 wrote the step before its agreement) */
    g->me = me;
    join_line(g, g->hdr->adopt_step);
  }
  rlx__engine_lock(g->engine); /* (the loop looks groups up by id and world) */
  free(g->world);
  g->world = world;
  g->n = n;
  g->comm_id = comm_id;
  if (!member)
    list_locked(g);
  rlx__engine_unlock(g->engine);
}

void rlx__shmg_free(struct rlx__shm_group *g) {
  if (g == NULL)
    return;
  if (g->listed) {
    rlx__engine_lock(g->engine);
    rlx__list_remove(&g->link);
    g->listed = 0;
    rlx__engine_unlock(g->engine);
  }
  if (g->base != NULL)
    munmap(g->base, g->len);
  if (g->memfd >= 0)
    close(g->memfd);
  free(g->world);
  free(g->pids);
  free(g);
}

void rlx__shmg_unmap_all(void) {
  while (!rlx__list_empty(&groups)) {
    struct rlx__shm_group *g = rlx__container_of(groups.next, struct rlx__shm_group, link);
    rlx__list_remove(&g->link);
    g->listed = 0;
    if (g->base != NULL)
      munmap(g->base, g->len);
    g->base = NULL;
    if (g->memfd >= 0)
      close(g->memfd);
    g->memfd = -1;
  }
}

int rlx__shmg_pid(struct rlx__shm_group *g, int r) {
  if (g->pids[r] != 0)
    return g->pids[r];
  /* (read after r's arrival at a step of this call: written before its
   * first arrival in the segment) */
  int pid = atomic_load_explicit(&g->line[r].pid, memory_order_acquire);
  rlx__engine_lock(g->engine);
  int cred = rlx__p2p_peer_pid(g->p2p, g->world[r]);
  rlx__engine_unlock(g->engine);
  if (pid <= 0 || (cred > 0 && cred != pid)) {
    rlx__warn("shared segment of communicator %u: rank %d's line names process %d, %s%d: "
              "nothing of it is read by reference", g->comm_id, r, pid,
              cred > 0 ? "its socket's other end is " : "", cred > 0 ? cred : pid);
    pid = -1;
  }
  g->pids[r] = pid;
  return pid;
}

void rlx__shmg_fail(struct rlx__shm_group *g, int err, int lost, uint64_t seq, const char *why) {
  uint32_t none = 0;
  if (!atomic_compare_exchange_strong(&g->hdr->claim, &none, 1u))
    return; /* the first failure is the one every member reports */
  g->hdr->err = err;
  g->hdr->lost = lost;
  g->hdr->seq = seq;
  snprintf(g->hdr->why, sizeof(g->hdr->why), "%s", why);
  atomic_store_explicit(&g->hdr->failed, 1u, memory_order_release);
  rlx__shmg_wake(g);
}

void rlx__shmg_waiting_for(uint32_t comm_id, uint64_t seq, char *buf, size_t len) {
  buf[0] = '\0';
  for (struct rlx__list *l = groups.next; l != &groups; l = l->next) {
    struct rlx__shm_group *g = rlx__container_of(l, struct rlx__shm_group, link);
    if (g->comm_id != comm_id || atomic_load(&g->w_seq) != seq + 1)
      continue;
    rlx__shmg_describe_wait(g, atomic_load(&g->w_which), atomic_load(&g->w_rank),
                            atomic_load(&g->w_step), buf, len);
    return;
  }
}

void rlx__shmg_on_lost(int world_rank, const char *why) {
  for (struct rlx__list *l = groups.next; l != &groups; l = l->next) {
    struct rlx__shm_group *g = rlx__container_of(l, struct rlx__shm_group, link);
    for (int r = 0; r < g->n; r++) {
      if (g->world[r] != world_rank || r == g->me)
        continue;
      rlx__shmg_fail(g, RLX_ERR_PEER_LOST, r, UINT64_MAX, why);
    }
  }
}
