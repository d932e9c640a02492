/* rlx_comm_create_group: every non-empty subset of the ranks (n <= 6),
 * in one order on every rank, made by its members alone with its own
 * tag; on each, an allreduce, an allgather and messages checked, and its
 * members' order is the list's; then every subset again at once, a
 * thread each on every rank, started in orders that differ by rank, each
 * with its own tag; the same list made twice gives two
 * communicators that do not mix; a rank not in the list, a rank listed
 * twice and a negative tag are refused; members that pass different
 * lists fail with RLX_ERR_MISMATCH.
 *   group_check            (the whole check)
 * Prints "group_check: N ranks: F failures in all". */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <rlxcoll/rlxcoll.h>

static _Atomic int failures; /* (threads count theirs too) */
static int me, np;

#define CHECK(cond, ...)                                                                           \
  do {                                                                                             \
    if (!(cond)) {                                                                                 \
      failures++;                                                                                  \
      printf("group_check: rank %d: FAILED line %d: ", me, __LINE__);                             \
      printf(__VA_ARGS__);                                                                         \
      printf(" [%s]\n", rlx_errmsg());                                                             \
    }                                                                                              \
  } while (0)

/* The subset's members, highest first (the list's order is the group's). */
static int members(unsigned mask, int *ranks) {
  int n = 0;
  for (int r = np - 1; r >= 0; r--)
    if (mask >> r & 1)
      ranks[n++] = r;
  return n;
}

static void use_group(rlx_comm_t *g, const int *ranks, int n, unsigned mask) {
  int gr = rlx_comm_rank(g);
  CHECK(rlx_comm_size(g) == n && ranks[gr] == me, "mask %x: rank %d of %d", mask, gr,
        rlx_comm_size(g));
  long v[2] = {me, 1}, sum_world = 0;
  for (int i = 0; i < n; i++)
    sum_world += ranks[i];
  CHECK(rlx_allreduce(RLX_IN_PLACE, v, 2, RLX_INT64, RLX_SUM, g) == RLX_OK && v[0] == sum_world &&
            v[1] == n,
        "mask %x: allreduce %ld %ld", mask, v[0], v[1]);
  int *all = calloc((size_t)n, sizeof(int));
  CHECK(rlx_allgather(&me, all, 1, RLX_INT32, g) == RLX_OK, "mask %x: allgather", mask);
  for (int i = 0; i < n; i++)
    CHECK(all[i] == ranks[i], "mask %x: allgather[%d] = %d, want %d", mask, i, all[i], ranks[i]);
  free(all);
  int to = (gr + 1) % n, from = (gr + n - 1) % n, got = -1;
  CHECK(rlx_sendrecv(&me, 1, to, 5, &got, 1, from, 5, RLX_INT32, g, NULL) == RLX_OK &&
            got == ranks[from],
        "mask %x: sendrecv got %d, want %d", mask, got, ranks[from]);
}

/* One subset's group made and used on a thread of its own. */
static void *one_group(void *arg) {
  unsigned mask = (unsigned)(uintptr_t)arg;
  int ranks[64], n = members(mask, ranks);
  rlx_comm_t *g = NULL;
  int rc = rlx_comm_create_group(rlx_comm_world(), n, ranks, 1000 + (int)mask, &g);
  CHECK(rc == RLX_OK && g != NULL, "thread: create_group mask %x: %s", mask, rlx_strerror(rc));
  if (g != NULL) {
    use_group(g, ranks, n, mask);
    CHECK(rlx_comm_free(&g) == RLX_OK, "thread: free");
  }
  return NULL;
}

/* Every subset with this rank in it at once, a thread each, started in
 * an order that differs by rank (odd ranks from the last): no member may
 * wait for another's order. */
static int concurrently(void) {
  pthread_t t[64];
  unsigned masks[64];
  int k = 0;
  for (unsigned mask = 1; np <= 6 && mask < (1u << np); mask++)
    if (mask >> me & 1)
      masks[k++] = mask;
  for (int i = 0; i < k; i++) {
    unsigned mask = masks[me % 2 ? k - 1 - i : i];
    if (pthread_create(&t[i], NULL, one_group, (void *)(uintptr_t)mask) != 0) {
      CHECK(0, "pthread_create");
      return i;
    }
  }
  for (int i = 0; i < k; i++)
    pthread_join(t[i], NULL);
  return k;
}

int main(int argc, char **argv) {
  if (rlx_init(&argc, &argv) != RLX_OK) {
    fprintf(stderr, "group_check: rlx_init: %s\n", rlx_errmsg());
    return 2;
  }
  rlx_comm_t *w = rlx_comm_world();
  me = rlx_comm_rank(w);
  np = rlx_comm_size(w);
  int ranks[64], made = 0;
  /* every subset with this rank in it, in the order of its mask */
  for (unsigned mask = 1; np <= 6 && mask < (1u << np); mask++) {
    if (!(mask >> me & 1))
      continue;
    int n = members(mask, ranks);
    rlx_comm_t *g = NULL;
    int rc = rlx_comm_create_group(w, n, ranks, (int)mask, &g);
    CHECK(rc == RLX_OK && g != NULL, "create_group mask %x: %s", mask, rlx_strerror(rc));
    if (g != NULL) {
      use_group(g, ranks, n, mask);
      CHECK(rlx_comm_free(&g) == RLX_OK, "free");
      made++;
    }
  }
  made += concurrently();
  /* the same list and tag twice: two communicators, their calls apart */
  int everyone[64];
  for (int r = 0; r < np; r++)
    everyone[r] = r;
  rlx_comm_t *a = NULL, *b = NULL;
  CHECK(rlx_comm_create_group(w, np, everyone, 7, &a) == RLX_OK &&
            rlx_comm_create_group(w, np, everyone, 7, &b) == RLX_OK,
        "the same group twice");
  if (a && b) {
    rlx_request_t *ra, *rb;
    int xa = 1, xb = 10;
    CHECK(rlx_iallreduce(RLX_IN_PLACE, &xb, 1, RLX_INT32, RLX_SUM, b, &rb) == RLX_OK &&
              rlx_iallreduce(RLX_IN_PLACE, &xa, 1, RLX_INT32, RLX_SUM, a, &ra) == RLX_OK &&
              rlx_wait(&ra) == RLX_OK && rlx_wait(&rb) == RLX_OK && xa == np && xb == 10 * np,
          "two groups of one list: %d %d", xa, xb);
  }
  if (a)
    rlx_comm_free(&a);
  if (b)
    rlx_comm_free(&b);
  /* refused */
  int other = (me + 1) % np, twice[2] = {me, me};
  rlx_comm_t *g = NULL;
  CHECK(np == 1 || rlx_comm_create_group(w, 1, &other, 0, &g) == RLX_ERR_ARG, "not in the list");
  CHECK(rlx_comm_create_group(w, 2, twice, 0, &g) == RLX_ERR_ARG, "listed twice");
  CHECK(rlx_comm_create_group(w, 1, &me, -1, &g) == RLX_ERR_ARG, "negative tag");
  CHECK(rlx_comm_create_group(w, 1, &me, 0, NULL) == RLX_ERR_ARG, "out NULL");
  /* members that pass different tags: every one of them learns it */
  if (np > 1) {
    int rc = rlx_comm_create_group(w, np, everyone, me == 0 ? 1 : 2, &g);
    CHECK(rc == RLX_ERR_MISMATCH, "different tags: %s", rlx_strerror(rc));
    if (g)
      rlx_comm_free(&g);
  }
  int total = 0, mine = failures;
  CHECK(rlx_allreduce(&mine, &total, 1, RLX_INT32, RLX_SUM, w) == RLX_OK, "the last sum");
  if (me == 0)
    printf("group_check: %d ranks, %d groups on rank 0: %d failures in all\n", np, made, total);
  rlx_finalize();
  return total != 0;
}
