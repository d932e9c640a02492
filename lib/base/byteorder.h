/* Little-endian encoding of fixed-width integers, the byte order of
 * everything rlxcoll puts on a wire (frame headers, call signatures,
 * handshakes, by-reference descriptors, ABORT payloads): one set of
 * helpers for every codec. */
#ifndef RLX_BYTEORDER_H
#define RLX_BYTEORDER_H

#include <stdint.h>
#include <string.h>

/* memcpy of the value in little-endian order: one load or store (the
 * byte-by-byte forms were 58 of the 130 instructions encoding a call's
 * signature) */
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
#define RLX__LE16(v) __builtin_bswap16(v)
#define RLX__LE32(v) __builtin_bswap32(v)
#define RLX__LE64(v) __builtin_bswap64(v)
#else
#define RLX__LE16(v) (v)
#define RLX__LE32(v) (v)
#define RLX__LE64(v) (v)
#endif

static inline void rlx__put16(uint8_t *p, uint16_t v) {
  v = RLX__LE16(v);
  memcpy(p, &v, sizeof(v));
}
static inline void rlx__put32(uint8_t *p, uint32_t v) {
  v = RLX__LE32(v);
  memcpy(p, &v, sizeof(v));
}
static inline void rlx__put64(uint8_t *p, uint64_t v) {
  v = RLX__LE64(v);
  memcpy(p, &v, sizeof(v));
}
static inline uint16_t rlx__get16(const uint8_t *p) {
  uint16_t v;
  memcpy(&v, p, sizeof(v));
  return RLX__LE16(v);
}
static inline uint32_t rlx__get32(const uint8_t *p) {
  uint32_t v;
  memcpy(&v, p, sizeof(v));
  return RLX__LE32(v);
}
static inline uint64_t rlx__get64(const uint8_t *p) {
  uint64_t v;
  memcpy(&v, p, sizeof(v));
  return RLX__LE64(v);
}

#endif
