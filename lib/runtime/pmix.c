/* Launch by a PMIx server (srun --mpi=pmix, Open MPI's mpirun, prterun):
 * rank, size and local placement come from PMIx, and the business cards
 * travel through its key-value store (Put, Commit, a collecting Fence,
 * Get) instead of our rendezvous. Rank 0 draws the job key and shares it
 * the same way: the store is private to the job. */
#include <pmix.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sodium.h>
#include "runtime/runtime.h"

static pmix_proc_t me;
static int up;

#define KEY_JOBKEY "rlx.job_key"
#define KEY_CARD "rlx.card"

int rlx__pmix_present(void) {
  /* Every PMIx server gives its clients these; without them PMIx_Init
   * would only say PMIX_ERR_UNREACH after trying. */
  return getenv("PMIX_NAMESPACE") != NULL && getenv("PMIX_RANK") != NULL;
}

static int get_u32(const pmix_proc_t *p, const char *key, uint32_t *out) {
  pmix_value_t *v = NULL;
  if (PMIx_Get(p, key, NULL, 0, &v) != PMIX_SUCCESS || v == NULL)
    return -1;
  int rc = 0;
  switch (v->type) {
  case PMIX_UINT32: *out = v->data.uint32; break;
  case PMIX_UINT16: *out = v->data.uint16; break;
  case PMIX_INT: *out = (uint32_t)v->data.integer; break;
  case PMIX_PROC_RANK: *out = v->data.rank; break;
  default: rc = -1;
  }
  PMIX_VALUE_RELEASE(v);
  return rc;
}

/* A collecting fence over the whole namespace, bounded by timeout_s. */
static int fence(double timeout_s, const char *what) {
  pmix_info_t info[2];
  bool collect = true;
  int tmo = timeout_s > 0 ? (int)(timeout_s + 0.999) : 0, n = 1;
  PMIX_INFO_LOAD(&info[0], PMIX_COLLECT_DATA, &collect, PMIX_BOOL);
  if (tmo > 0)
    PMIX_INFO_LOAD(&info[n++], PMIX_TIMEOUT, &tmo, PMIX_INT);
  pmix_status_t st = PMIx_Fence(NULL, 0, info, (size_t)n);
  for (int i = 0; i < n; i++)
    PMIX_INFO_DESTRUCT(&info[i]);
  if (st != PMIX_SUCCESS)
    return rlx__err(st == PMIX_ERR_TIMEOUT ? RLX_ERR_TIMEOUT : RLX_ERR_BOOTSTRAP,
                    "rank %u: PMIx_Fence (%s) failed: %s", me.rank, what, PMIx_Error_string(st));
  return RLX_OK;
}

static int put_bytes(const char *key, const void *buf, size_t n) {
  pmix_value_t v;
  PMIX_VALUE_CONSTRUCT(&v);
  v.type = PMIX_BYTE_OBJECT;
  v.data.bo.bytes = (char *)buf;
  v.data.bo.size = n;
  pmix_status_t st = PMIx_Put(PMIX_GLOBAL, key, &v);
  if (st == PMIX_SUCCESS)
    st = PMIx_Commit();
  if (st != PMIX_SUCCESS)
    return rlx__err(RLX_ERR_BOOTSTRAP, "rank %u: PMIx_Put(%s): %s", me.rank, key,
                    PMIx_Error_string(st));
  return RLX_OK;
}

static int get_bytes(uint32_t rank, const char *key, void *buf, size_t n) {
  pmix_proc_t p;
  pmix_value_t *v = NULL;
  PMIX_LOAD_PROCID(&p, me.nspace, rank);
  pmix_status_t st = PMIx_Get(&p, key, NULL, 0, &v);
  if (st != PMIX_SUCCESS || v == NULL)
    return rlx__err(RLX_ERR_BOOTSTRAP, "rank %u: PMIx_Get(%s of rank %u): %s", me.rank, key,
                    rank, PMIx_Error_string(st));
  int rc = RLX_OK;
  if (v->type != PMIX_BYTE_OBJECT || v->data.bo.size != n)
    rc = rlx__err(RLX_ERR_BOOTSTRAP, "rank %u: %s of rank %u is not %zu bytes", me.rank, key,
                  rank, n);
  else
    memcpy(buf, v->data.bo.bytes, n);
  PMIX_VALUE_RELEASE(v);
  return rc;
}

int rlx__pmix_init(struct rlx__config *cfg) {
  pmix_status_t st = PMIx_Init(&me, NULL, 0);
  if (st != PMIX_SUCCESS)
    return rlx__err(RLX_ERR_BOOTSTRAP, "PMIx_Init: %s (PMIX_* variables are set, but no PMIx "
                    "server answered)", PMIx_Error_string(st));
  up = 1;
  pmix_proc_t wild;
  uint32_t size = 0, lrank = 0, lsize = 0;
  PMIX_LOAD_PROCID(&wild, me.nspace, PMIX_RANK_WILDCARD);
  if (get_u32(&wild, PMIX_JOB_SIZE, &size) != 0 || size == 0 || me.rank >= size)
    return rlx__err(RLX_ERR_BOOTSTRAP, "PMIx gave no job size for namespace %s", me.nspace);
  if (get_u32(&me, PMIX_LOCAL_RANK, &lrank) != 0)
    lrank = (uint32_t)-1;
  if (get_u32(&wild, PMIX_LOCAL_SIZE, &lsize) != 0)
    lsize = 0;
  cfg->has_launch = 1;
  cfg->rank = (int)me.rank;
  cfg->size = (int)size;
  cfg->local_rank = lrank == (uint32_t)-1 ? -1 : (int)lrank;
  cfg->local_size = (int)lsize;
  /* The job key: rank 0 draws it, everyone reads it after a fence. */
  char key[sizeof cfg->job_key];
  memset(key, 0, sizeof key);
  if (me.rank == 0) {
    unsigned char raw[32];
    randombytes_buf(raw, sizeof raw);
    sodium_bin2hex(key, sizeof key, raw, sizeof raw);
    int rc = put_bytes(KEY_JOBKEY, key, sizeof key);
    if (rc != RLX_OK)
      return rc;
  }
  int rc = fence(cfg->init_timeout_s, "job key");
  if (rc == RLX_OK)
    rc = get_bytes(0, KEY_JOBKEY, key, sizeof key);
  if (rc != RLX_OK)
    return rc;
  key[sizeof key - 1] = '\0';
  snprintf(cfg->job_key, sizeof cfg->job_key, "%s", key);
  sodium_memzero(key, sizeof key);
  rlx__info("launched by PMIx: namespace %s, rank %u of %u, local rank %d of %u", me.nspace,
            me.rank, size, cfg->local_rank, lsize);
  return RLX_OK;
}

int rlx__pmix_exchange(const struct rlx__card *mine, struct rlx__card *cards, int size,
                       double timeout_s) {
  uint8_t buf[RLX__CARD_SIZE];
  rlx__card_encode(mine, buf);
  int rc = put_bytes(KEY_CARD, buf, sizeof buf);
  if (rc == RLX_OK)
    rc = fence(timeout_s, "business cards");
  for (int r = 0; rc == RLX_OK && r < size; r++) {
    rc = get_bytes((uint32_t)r, KEY_CARD, buf, sizeof buf);
    if (rc == RLX_OK && (rlx__card_decode(buf, &cards[r]) != 0 || cards[r].rank != (uint32_t)r))
      rc = rlx__err(RLX_ERR_BOOTSTRAP, "rank %u: rank %d's card from PMIx is malformed",
                    me.rank, r);
  }
  return rc;
}

void rlx__pmix_finalize(void) {
  if (up)
    PMIx_Finalize(NULL, 0);
  up = 0;
}
