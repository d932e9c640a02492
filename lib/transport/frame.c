/* Frame header codec. Decoding is strict: magic, version, header CRC, and
 * every enumerated field range are checked, so a corrupt or hostile header
 * is rejected before any length in it is trusted. */
#include <string.h>
#include "frame.h"

static void put16(unsigned char *p, uint16_t v) {
  p[0] = (unsigned char)v;
  p[1] = (unsigned char)(v >> 8);
}
static void put32(unsigned char *p, uint32_t v) {
  for (int i = 0; i < 4; i++)
    p[i] = (unsigned char)(v >> (8 * i));
}
static void put64(unsigned char *p, uint64_t v) {
  for (int i = 0; i < 8; i++)
    p[i] = (unsigned char)(v >> (8 * i));
}
static uint16_t get16(const unsigned char *p) { return (uint16_t)(p[0] | (p[1] << 8)); }
static uint32_t get32(const unsigned char *p) {
  uint32_t v = 0;
  for (int i = 3; i >= 0; i--)
    v = (v << 8) | p[i];
  return v;
}
static uint64_t get64(const unsigned char *p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; i--)
    v = (v << 8) | p[i];
  return v;
}

/* Layout (offsets in bytes):
 *  0 magic u32 | 4 version u8 | 5 type u8 | 6 kind u8 | 7 dtype u8 | 8 op u8 |
 *  9 flags u8 | 10 reserved u16 | 12 comm_id u32 | 16 root i32 | 20 segment u32 |
 * 24 seq u64 | 32 count u64 | 40 payload_len u64 | 48 src u32 |
 * 52 payload_crc u32 | 56 reserved u32 | 60 header_crc u32 (over bytes 0-59) */
void rlx__frame_encode(const struct rlx__frame_hdr *h, unsigned char *out) {
  memset(out, 0, RLX__FRAME_HDR_SIZE);
  put32(out + 0, RLX__FRAME_MAGIC);
  out[4] = RLX__FRAME_VERSION;
  out[5] = h->type;
  out[6] = h->kind;
  out[7] = h->dtype;
  out[8] = h->op;
  out[9] = h->flags;
  put16(out + 10, 0);
  put32(out + 12, h->comm_id);
  put32(out + 16, (uint32_t)h->root);
  put32(out + 20, h->segment);
  put64(out + 24, h->seq);
  put64(out + 32, h->count);
  put64(out + 40, h->payload_len);
  put32(out + 48, h->src);
  put32(out + 52, h->payload_crc);
  put32(out + 60, rlx__crc32c(out, 60));
}

int rlx__frame_decode(const unsigned char *in, size_t n, struct rlx__frame_hdr *h) {
  if (n < RLX__FRAME_HDR_SIZE)
    return RLX__FRAME_SHORT;
  if (get32(in) != RLX__FRAME_MAGIC)
    return RLX__FRAME_BAD_MAGIC;
  if (get32(in + 60) != rlx__crc32c(in, 60))
    return RLX__FRAME_BAD_CRC;
  if (in[4] != RLX__FRAME_VERSION)
    return RLX__FRAME_BAD_VERSION;
  memset(h, 0, sizeof(*h));
  h->type = in[5];
  h->kind = in[6];
  h->dtype = in[7];
  h->op = in[8];
  h->flags = in[9];
  h->comm_id = get32(in + 12);
  h->root = (int32_t)get32(in + 16);
  h->segment = get32(in + 20);
  h->seq = get64(in + 24);
  h->count = get64(in + 32);
  h->payload_len = get64(in + 40);
  h->src = get32(in + 48);
  h->payload_crc = get32(in + 52);
  if (h->type < 1 || h->type > RLX__FT_MAX || h->kind < 1 || h->kind > RLX__CK_MAX ||
      h->dtype >= 10 || h->op >= 5 || get16(in + 10) != 0 || get32(in + 56) != 0 ||
      (h->flags & ~(RLX__FF_CMA | RLX__FF_NACK)) != 0 ||
      ((h->flags & RLX__FF_CMA) && h->type != RLX__FT_DATA) ||
      ((h->flags & RLX__FF_NACK) && h->type != RLX__FT_ACK) ||
      (h->type == RLX__FT_ACK && h->payload_len != 0) ||
      h->payload_len > RLX__FRAME_MAX_PAYLOAD)
    return RLX__FRAME_BAD_FIELD;
  return RLX__FRAME_OK;
}

const char *rlx__frame_strstatus(int status) {
  switch (status) {
  case RLX__FRAME_OK:
    return "ok";
  case RLX__FRAME_BAD_MAGIC:
    return "bad magic (not an rlxcoll frame)";
  case RLX__FRAME_BAD_VERSION:
    return "unsupported frame version";
  case RLX__FRAME_BAD_CRC:
    return "header CRC32C mismatch";
  case RLX__FRAME_BAD_FIELD:
    return "field out of range";
  case RLX__FRAME_SHORT:
    return "truncated header";
  default:
    return "unknown frame status";
  }
}
