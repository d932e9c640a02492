/* CRC32C (Castagnoli), the checksum of every frame header and payload.
 * SSE4.2's crc32 instruction when the CPU has it (chosen at run time, the
 * build stays generic), else a slice-by-8 table. */
#include <stdint.h>
#include <string.h>
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
__attribute__((target("sse4.2"))) static uint32_t crc_hw(uint32_t crc, const unsigned char *p,
                                                         size_t n) {
  uint64_t c = crc;
  while (n > 0 && ((uintptr_t)p & 7) != 0) {
    c = __builtin_ia32_crc32qi((uint32_t)c, *p++);
    n--;
  }
  while (n >= 8) {
    uint64_t w;
    memcpy(&w, p, 8);
    c = __builtin_ia32_crc32di(c, w);
    p += 8;
    n -= 8;
  }
  while (n-- > 0)
    c = __builtin_ia32_crc32qi((uint32_t)c, *p++);
  return (uint32_t)c;
}
#endif

typedef uint32_t (*crc_fn)(uint32_t, const unsigned char *, size_t);
static crc_fn impl;

static crc_fn choose(void) {
  build_table();
#if defined(__x86_64__)
  __builtin_cpu_init();
  if (__builtin_cpu_supports("sse4.2"))
    return crc_hw;
#endif
  return crc_sw;
}

uint32_t rlx__crc32c_update(uint32_t crc, const void *data, size_t n) {
  crc_fn f = __atomic_load_n(&impl, __ATOMIC_ACQUIRE);
  if (f == NULL) {
    f = choose();
    __atomic_store_n(&impl, f, __ATOMIC_RELEASE);
  }
  return ~f(~crc, (const unsigned char *)data, n);
}

uint32_t rlx__crc32c(const void *data, size_t n) { return rlx__crc32c_update(0, data, n); }

uint32_t rlx__crc32c_sw(const void *data, size_t n) {
  if (__atomic_load_n(&impl, __ATOMIC_ACQUIRE) == NULL)
    (void)rlx__crc32c(NULL, 0);
  return ~crc_sw(~0u, (const unsigned char *)data, n);
}
