/* Datasets: Fashion-MNIST's IDX files (gzip through zlib, or plain), a
 * seeded synthetic stand-in, the per-epoch shuffle and batch gathering. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>
#include "compute/backend.h"
#include "base/internal.h"

#define IDX_IMAGES 0x00000803u
#define IDX_LABELS 0x00000801u
#define MAX_EXAMPLES (1u << 24)

static uint32_t be32(const unsigned char *b) {
  return (uint32_t)b[0] << 24 | (uint32_t)b[1] << 16 | (uint32_t)b[2] << 8 | b[3];
}

/* Open <dir>/<name>.gz, else <dir>/<name>; path gets the one opened. */
static gzFile open_idx(const char *dir, const char *name, char *path, size_t len) {
  snprintf(path, len, "%s/%s.gz", dir, name);
  gzFile f = gzopen(path, "rb");
  if (!f) {
    snprintf(path, len, "%s/%s", dir, name);
    f = gzopen(path, "rb"); /* zlib reads uncompressed files as they are */
  }
  return f;
}

/* Read exactly n bytes or say what went wrong. */
static int read_all(gzFile f, const char *path, void *buf, size_t n, const char *what) {
  size_t got = 0;
  while (got < n) {
    unsigned chunk = n - got > (1u << 30) ? (1u << 30) : (unsigned)(n - got);
    int r = gzread(f, (char *)buf + got, chunk);
    if (r < 0) {
      int zerr;
      const char *msg = gzerror(f, &zerr);
      return rlx__err(RLX_ERR_SYS, "%s: cannot read %s: %s", path, what, msg);
    }
    if (r == 0)
      return rlx__err(RLX_ERR_SYS, "%s is truncated: %s take %zu bytes, it ends after %zu",
                      path, what, n, got);
    got += (size_t)r;
  }
  return RLX_OK;
}

/* Open <dir>/<split>-<what>-ubyte[.gz] and read its header (hlen bytes,
 * magic first). *f is NULL when it could not be opened; otherwise the
 * caller closes it, whatever the returned status. */
static int open_with_header(const char *dir, const char *split, const char *what, uint32_t magic,
                            const char *kind, unsigned char *h, size_t hlen, gzFile *f,
                            char *path, size_t plen) {
  char name[64];
  snprintf(name, sizeof name, "%s-%s-ubyte", split, what);
  if ((*f = open_idx(dir, name, path, plen)) == NULL)
    return rlx__err(RLX_ERR_SYS, "cannot open %s/%s.gz (or without .gz): %s", dir, name,
                    strerror(errno ? errno : ENOENT));
  int rc = read_all(*f, path, h, hlen, "the IDX header");
  if (rc == RLX_OK && be32(h) != magic)
    rc = rlx__err(RLX_ERR_ARG, "%s is not an IDX %s file (magic 0x%08x, want 0x%08x)", path, kind,
                  be32(h), magic);
  return rc;
}

static int load_images(const char *dir, const char *split, rlx_dataset_t *d) {
  char path[sizeof d->origin];
  unsigned char h[16];
  gzFile f;
  int rc = open_with_header(dir, split, "images-idx3", IDX_IMAGES, "image", h, sizeof h, &f, path,
                            sizeof path);
  if (f == NULL)
    return rc;
  uint32_t n = be32(h + 4), rows = be32(h + 8), cols = be32(h + 12);
  if (rc == RLX_OK && (n == 0 || n > MAX_EXAMPLES || rows == 0 || cols == 0 ||
                       rows > 4096 || cols > 4096 || (uint64_t)rows * cols > 65536))
    rc = rlx__err(RLX_ERR_ARG, "%s: implausible shape %u x %u x %u", path, n, rows, cols);
  if (rc == RLX_OK) {
    d->count = n;
    d->dim = (int)(rows * cols);
    if (!(d->pixels = malloc((size_t)n * d->dim)))
      rc = rlx__err(RLX_ERR_NOMEM, "out of memory for %u images", n);
    else
      rc = read_all(f, path, d->pixels, (size_t)n * d->dim, "the pixels");
  }
  gzclose(f);
  if (rc == RLX_OK)
    snprintf(d->origin, sizeof d->origin, "%s", path);
  return rc;
}

static int load_labels(const char *dir, const char *split, rlx_dataset_t *d) {
  char path[sizeof d->origin];
  unsigned char h[8];
  gzFile f;
  int rc = open_with_header(dir, split, "labels-idx1", IDX_LABELS, "label", h, sizeof h, &f, path,
                            sizeof path);
  if (f == NULL)
    return rc;
  if (rc == RLX_OK && be32(h + 4) != d->count)
    rc = rlx__err(RLX_ERR_ARG, "%s has %u labels for %zu images", path, be32(h + 4), d->count);
  if (rc == RLX_OK && !(d->labels = malloc(d->count)))
    rc = rlx__err(RLX_ERR_NOMEM, "out of memory for %zu labels", d->count);
  if (rc == RLX_OK)
    rc = read_all(f, path, d->labels, d->count, "the labels");
  gzclose(f);
  int maxl = -1;
  for (size_t i = 0; rc == RLX_OK && i < d->count; i++)
    if (d->labels[i] > maxl)
      maxl = d->labels[i];
  d->classes = maxl + 1;
  if (rc == RLX_OK && d->classes < 2)
    rc = rlx__err(RLX_ERR_ARG, "%s: every label is %d; a classifier needs two classes", path, maxl);
  return rc;
}

int rlx_dataset_load(const char *dir, const char *split, rlx_dataset_t **out) {
  if (!dir || !split || !out)
    return rlx__err(RLX_ERR_ARG, "rlx_dataset_load: NULL argument");
  if (strcmp(split, "train") && strcmp(split, "t10k"))
    return rlx__err(RLX_ERR_ARG, "split '%s' is neither train nor t10k", split);
  *out = NULL;
  rlx_dataset_t *d = calloc(1, sizeof *d);
  if (!d)
    return rlx__err(RLX_ERR_NOMEM, "out of memory");
  errno = 0;
  int rc = load_images(dir, split, d);
  if (rc == RLX_OK)
    rc = load_labels(dir, split, d);
  if (rc != RLX_OK) {
    rlx_dataset_free(&d);
    return rc;
  }
  *out = d;
  return RLX_OK;
}

int rlx_dataset_synthetic(size_t count, int dim, int classes, uint64_t seed, const char *split,
                          rlx_dataset_t **out) {
  if (!out || !split)
    return rlx__err(RLX_ERR_ARG, "rlx_dataset_synthetic: NULL argument");
  *out = NULL;
  if (strcmp(split, "train") && strcmp(split, "t10k"))
    return rlx__err(RLX_ERR_ARG, "split '%s' is neither train nor t10k", split);
  if (count < 1 || count > MAX_EXAMPLES || dim < 1 || dim > 65536 || classes < 2 ||
      classes > 256)
    return rlx__err(RLX_ERR_ARG,
                    "synthetic set of %zu x %d with %d classes: want 1..%u examples, dim "
                    "1..65536, 2..256 classes", count, dim, classes, MAX_EXAMPLES);
  rlx_dataset_t *d = calloc(1, sizeof *d);
  uint8_t *proto = malloc((size_t)classes * dim);
  if (!d || !proto || !(d->pixels = malloc(count * dim)) || !(d->labels = malloc(count))) {
    free(proto);
    rlx_dataset_free(&d);
    return rlx__err(RLX_ERR_NOMEM, "out of memory for a synthetic set of %zu x %d", count, dim);
  }
  d->count = count;
  d->dim = dim;
  d->classes = classes;
  d->synthetic = 1;
  snprintf(d->origin, sizeof d->origin, "synthetic %s set (seed %llu)", split,
           (unsigned long long)seed);
  uint64_t s = seed ^ 0x73796e7468ULL; /* "synth" */
  /* One pattern shared by every class, each class changing a few pixels of
   * it; each example its class's pattern under heavy noise: learnable, but
   * not at once (a 784-256-10 MLP reaches about 85% test accuracy). */
  for (int j = 0; j < dim; j++)
    proto[j] = rlx__uniform(&s) < 0.3 ? (uint8_t)(128 + rlx__uniform(&s) * 127) : 0;
  for (int c = 1; c < classes; c++)
    memcpy(proto + (size_t)c * dim, proto, (size_t)dim);
  for (size_t i = 0; i < (size_t)classes * dim; i++)
    if (rlx__uniform(&s) < 0.02)
      proto[i] = proto[i] ? 0 : 255;
  s ^= strcmp(split, "train") ? 0x74313073ULL : 0; /* the test split's own examples */
  for (size_t e = 0; e < count; e++) {
    int c = (int)(rlx__uniform(&s) * classes);
    d->labels[e] = (uint8_t)c;
    for (int j = 0; j < dim; j++) {
      double v = proto[(size_t)c * dim + j] + (rlx__uniform(&s) - 0.5) * 700.0;
      d->pixels[e * dim + j] = (uint8_t)(v < 0 ? 0 : v > 255 ? 255 : v);
    }
  }
  free(proto);
  *out = d;
  return RLX_OK;
}

int rlx_dataset_free(rlx_dataset_t **dp) {
  if (!dp)
    return rlx__err(RLX_ERR_ARG, "rlx_dataset_free: NULL");
  if (*dp) {
    free((*dp)->pixels);
    free((*dp)->labels);
    free(*dp);
    *dp = NULL;
  }
  return RLX_OK;
}

int rlx_dataset_batch(const rlx_dataset_t *d, const uint32_t *idx, int n, float *x,
                      int32_t *labels) {
  if (!d || !idx || !x || !labels || n < 0)
    return rlx__err(RLX_ERR_ARG, "rlx_dataset_batch: NULL argument or negative count");
  for (int r = 0; r < n; r++) {
    if (idx[r] >= d->count)
      return rlx__err(RLX_ERR_ARG, "rlx_dataset_batch: index %u past the %zu examples", idx[r],
                      d->count);
    const uint8_t *p = d->pixels + (size_t)idx[r] * d->dim;
    float *xr = x + (size_t)r * d->dim;
    for (int j = 0; j < d->dim; j++)
      xr[j] = rlx__pixel(p[j]);
    labels[r] = d->labels[idx[r]];
  }
  return RLX_OK;
}
