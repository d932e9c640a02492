/* CRC32C (Castagnoli), the checksum of every frame header and payload:
 * ISA-L's when the build has it (the library does); else, as in the fuzz
 * targets, SSE4.2's crc32 instruction when the CPU has it (chosen at run
 * time, the build stays generic), or a slice-by-8 table. */
#include <stdint.h>
#include <string.h>
#ifdef RLX_HAVE_ISAL
#include <isa-l/crc.h>
#endif
#include "frame.h"

static uint32_t table[8][256];

static void build_table(void) {
  for (uint32_t i = 0; i < 256; i++) {
    uint32_t c = i;
    for (int k = 0; k < 8; k++)
      c = (c & 1) ? (c >> 1) ^ 0x82F63B78u : c >> 1;
    table[0][i] = c;
  }
  for (uint32_t i = 0; i < 256; i++)
    for (int t = 1; t < 8; t++)
      table[t][i] = (table[t - 1][i] >> 8) ^ table[0][table[t - 1][i] & 0xff];
}

static uint32_t crc_sw(uint32_t crc, const unsigned char *p, size_t n) {
  while (n > 0 && ((uintptr_t)p & 7) != 0) {
    crc = (crc >> 8) ^ table[0][(crc ^ *p++) & 0xff];
    n--;
  }
  while (n >= 8) {
    uint64_t w;
    memcpy(&w, p, 8);
    w ^= crc;
    crc = table[7][w & 0xff] ^ table[6][(w >> 8) & 0xff] ^ table[5][(w >> 16) & 0xff] ^
          table[4][(w >> 24) & 0xff] ^ table[3][(w >> 32) & 0xff] ^
          table[2][(w >> 40) & 0xff] ^ table[1][(w >> 48) & 0xff] ^ table[0][w >> 56];
    p += 8;
    n -= 8;
  }
  while (n-- > 0)
    crc = (crc >> 8) ^ table[0][(crc ^ *p++) & 0xff];
  return crc;
}

#if defined(__x86_64__)
/* The crc32 instruction has a 3-cycle latency and a 1-cycle throughput, so
 * one dependent chain runs at a third of the speed the core allows. As in
 * Mark Adler's crc32c.c, three independent chains run over three adjacent
 * blocks, and their CRCs are joined by "shifting" the earlier ones over
 * the later blocks: a linear map (multiplication by x^(8n) mod P) applied
 * through four 256-entry tables built once. */
#define LONG_BLOCK 8192
#define SHORT_BLOCK 256

static uint32_t long_shift[4][256], short_shift[4][256];

static uint32_t gf2_times(const uint32_t *mat, uint32_t vec) {
  uint32_t sum = 0;
  while (vec) {
    if (vec & 1)
      sum ^= *mat;
    vec >>= 1;
    mat++;
  }
  return sum;
}

static void gf2_square(uint32_t *square, const uint32_t *mat) {
  for (int n = 0; n < 32; n++)
    square[n] = gf2_times(mat, mat[n]);
}

/* The operator that appends len zero bytes to a CRC register. */
static void zeros_op(uint32_t *even, size_t len) {
  uint32_t odd[32], row = 1;
  odd[0] = 0x82F63B78u; /* one zero bit */
  for (int n = 1; n < 32; n++) {
    odd[n] = row;
    row <<= 1;
  }
  gf2_square(even, odd); /* two zero bits */
  gf2_square(odd, even); /* four zero bits */
  /* odd now appends one zero byte; square it up through the bits of len */
  do {
    gf2_square(even, odd);
    len >>= 1;
    if (len == 0)
      return;
    gf2_square(odd, even);
    len >>= 1;
  } while (len);
  memcpy(even, odd, sizeof(odd));
}

static void build_shift(uint32_t t[4][256], size_t len) {
  uint32_t op[32];
  zeros_op(op, len);
  for (uint32_t n = 0; n < 256; n++) {
    t[0][n] = gf2_times(op, n);
    t[1][n] = gf2_times(op, n << 8);
    t[2][n] = gf2_times(op, n << 16);
    t[3][n] = gf2_times(op, n << 24);
  }
}

static uint32_t shift(uint32_t t[4][256], uint32_t crc) {
  return t[0][crc & 0xff] ^ t[1][(crc >> 8) & 0xff] ^ t[2][(crc >> 16) & 0xff] ^ t[3][crc >> 24];
}

__attribute__((target("sse4.2"))) static uint32_t crc_hw(uint32_t crc, const unsigned char *p,
                                                         size_t n) {
  uint64_t c0 = crc, c1, c2, w0, w1, w2;
  while (n > 0 && ((uintptr_t)p & 7) != 0) {
    c0 = __builtin_ia32_crc32qi((uint32_t)c0, *p++);
    n--;
  }
  static const size_t blocks[2] = {LONG_BLOCK, SHORT_BLOCK};
  for (int b = 0; b < 2; b++) {
    size_t blk = blocks[b];
    while (n >= 3 * blk) {
      c1 = c2 = 0;
      const unsigned char *end = p + blk;
      do {
        memcpy(&w0, p, 8);
        memcpy(&w1, p + blk, 8);
        memcpy(&w2, p + 2 * blk, 8);
        c0 = __builtin_ia32_crc32di(c0, w0);
        c1 = __builtin_ia32_crc32di(c1, w1);
        c2 = __builtin_ia32_crc32di(c2, w2);
        p += 8;
      } while (p < end);
      uint32_t (*t)[256] = b == 0 ? long_shift : short_shift;
      c0 = shift(t, (uint32_t)c0) ^ (uint32_t)c1;
      c0 = shift(t, (uint32_t)c0) ^ (uint32_t)c2;
      p += 2 * blk;
      n -= 3 * blk;
    }
  }
  while (n >= 8) {
    memcpy(&w0, p, 8);
    c0 = __builtin_ia32_crc32di(c0, w0);
    p += 8;
    n -= 8;
  }
  while (n-- > 0)
    c0 = __builtin_ia32_crc32qi((uint32_t)c0, *p++);
  return (uint32_t)c0;
}
#endif

typedef uint32_t (*crc_fn)(uint32_t, const unsigned char *, size_t);
static crc_fn impl;

static crc_fn choose(void) {
  build_table();
#if defined(__x86_64__)
  __builtin_cpu_init();
  if (__builtin_cpu_supports("sse4.2")) {
    build_shift(long_shift, LONG_BLOCK);
    build_shift(short_shift, SHORT_BLOCK);
    return crc_hw;
  }
#endif
  return crc_sw;
}

static uint32_t crc_native(uint32_t crc, const void *data, size_t n) {
  crc_fn f = __atomic_load_n(&impl, __ATOMIC_ACQUIRE);
  if (f == NULL) {
    f = choose();
    __atomic_store_n(&impl, f, __ATOMIC_RELEASE);
  }
  return ~f(~crc, (const unsigned char *)data, n);
}

/* Below this, the crc32-instruction loop even where ISA-L is there. */
#define RLX__CRC_ISAL_FROM (8u * 1024u)

uint32_t rlx__crc32c_update(uint32_t crc, const void *data, size_t n) {
#ifdef RLX_HAVE_ISAL
  /* ISA-L's crc32_iscsi folds with PCLMULQDQ (VPCLMULQDQ on AVX-512),
   * chosen at run time: 57 GB/s here against 32 for the crc32-instruction
   * loop, which matters where every payload on a socket is checksummed on
   * both sides. Same polynomial and register. But its AVX-512 path (from
   * 256 bytes) is slow when called a few microseconds apart, as a socket
   * path calls it (most likely the 512-bit units waking up): a 256-byte
   * allreduce on 2 ranks over TCP spent 6 times the samples of a 128-byte
   * one there, and took 5.8 us instead of 5.1 with the loop below (2
   * cores, bench/ab_builds.sh); the loop wins up to 8 KiB. */
  if (n < RLX__CRC_ISAL_FROM)
    return crc_native(crc, data, n);
  uint32_t reg = ~crc;
  const unsigned char *p = data;
  while (n > 0) {
    int k = n > (1u << 30) ? (1 << 30) : (int)n;
    reg = crc32_iscsi((unsigned char *)p, k, reg);
    p += k;
    n -= (size_t)k;
  }
  return ~reg;
#else
  return crc_native(crc, data, n);
#endif
}

uint32_t rlx__crc32c(const void *data, size_t n) { return rlx__crc32c_update(0, data, n); }

uint32_t rlx__crc32c_sw(const void *data, size_t n) {
  if (__atomic_load_n(&impl, __ATOMIC_ACQUIRE) == NULL)
    __atomic_store_n(&impl, choose(), __ATOMIC_RELEASE); /* builds the table */
  return ~crc_sw(~0u, (const unsigned char *)data, n);
}
