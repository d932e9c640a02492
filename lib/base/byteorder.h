/* Little-endian encoding of fixed-width integers, the byte order of
 * everything rlxcoll puts on a wire (frame headers, call signatures,
 * handshakes, by-reference descriptors, ABORT payloads): one set of
 * helpers for every codec. */
#ifndef RLX_BYTEORDER_H
#define RLX_BYTEORDER_H

#include <stdint.h>

static inline void rlx__put16(uint8_t *p, uint16_t v) {
  p[0] = (uint8_t)v;
  p[1] = (uint8_t)(v >> 8);
}
static inline void rlx__put32(uint8_t *p, uint32_t v) {
  for (int i = 0; i < 4; i++)
    p[i] = (uint8_t)(v >> (8 * i));
}
static inline void rlx__put64(uint8_t *p, uint64_t v) {
  for (int i = 0; i < 8; i++)
    p[i] = (uint8_t)(v >> (8 * i));
}
static inline uint16_t rlx__get16(const uint8_t *p) { return (uint16_t)(p[0] | (p[1] << 8)); }
static inline uint32_t rlx__get32(const uint8_t *p) {
  return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) |
         ((uint32_t)p[3] << 24);
}
static inline uint64_t rlx__get64(const uint8_t *p) {
  return (uint64_t)rlx__get32(p) | ((uint64_t)rlx__get32(p + 4) << 32);
}

#endif
