/* Frame header codec. Decoding is strict: magic, version, header CRC, and
 * every enumerated field range are checked, so a corrupt or hostile header
 * is rejected before any length in it is trusted. */
#include <string.h>
#include "base/byteorder.h"
#include "frame.h"

/* Layout (offsets in bytes):
 *  0 magic u32 | 4 version u8 | 5 type u8 | 6 flags u8 | 7 reserved u8 |
 *  8 comm_id u32 | 12 segment u32 | 16 seq u64 | 24 signature (16 bytes) |
 * 40 payload_len u64 | 48 src u32 | 52 payload_crc u32 | 56 reserved u32 |
 * 60 header_crc u32 (over bytes 0-59) */
void rlx__frame_encode(const struct rlx__frame_hdr *h, unsigned char *out) {
  memset(out, 0, RLX__FRAME_HDR_SIZE);
  rlx__put32(out + 0, RLX__FRAME_MAGIC);
  out[4] = RLX__FRAME_VERSION;
  out[5] = h->type;
  out[6] = h->flags;
  rlx__put32(out + 8, h->comm_id);
  rlx__put32(out + 12, h->segment);
  rlx__put64(out + 16, h->seq);
  memcpy(out + 24, h->sig, RLX__SIG_SIZE);
  rlx__put64(out + 40, h->payload_len);
  rlx__put32(out + 48, h->src);
  rlx__put32(out + 52, h->payload_crc);
  rlx__put32(out + 60, rlx__crc32c(out, 60));
}

int rlx__frame_decode(const unsigned char *in, size_t n, struct rlx__frame_hdr *h) {
  if (n < RLX__FRAME_HDR_SIZE)
    return RLX__FRAME_SHORT;
  if (rlx__get32(in) != RLX__FRAME_MAGIC)
    return RLX__FRAME_BAD_MAGIC;
  if (rlx__get32(in + 60) != rlx__crc32c(in, 60))
    return RLX__FRAME_BAD_CRC;
  if (in[4] != RLX__FRAME_VERSION)
    return RLX__FRAME_BAD_VERSION;
  memset(h, 0, sizeof(*h));
  h->type = in[5];
  h->flags = in[6];
  h->comm_id = rlx__get32(in + 8);
  h->segment = rlx__get32(in + 12);
  h->seq = rlx__get64(in + 16);
  memcpy(h->sig, in + 24, RLX__SIG_SIZE); /* opaque here: compared, never interpreted */
  h->payload_len = rlx__get64(in + 40);
  h->src = rlx__get32(in + 48);
  h->payload_crc = rlx__get32(in + 52);
  if (h->type < 1 || h->type > RLX__FT_MAX || in[7] != 0 || rlx__get32(in + 56) != 0 ||
      (h->flags & ~(RLX__FF_CMA | RLX__FF_NACK | RLX__FF_SPLIT | RLX__FF_PUSHED)) != 0 ||
      ((h->flags & RLX__FF_CMA) && h->type != RLX__FT_DATA && h->type != RLX__FT_MSG) ||
      ((h->flags & (RLX__FF_NACK | RLX__FF_SPLIT | RLX__FF_PUSHED)) && h->type != RLX__FT_ACK) ||
      ((h->flags & RLX__FF_SPLIT) && (h->flags & (RLX__FF_NACK | RLX__FF_PUSHED))) ||
      (h->type == RLX__FT_ACK && (h->flags & RLX__FF_SPLIT) == 0 && h->payload_len != 0) ||
      ((h->flags & RLX__FF_SPLIT) && h->payload_len == 0) ||
      (h->type == RLX__FT_PING && h->payload_len != 0) ||
      h->payload_len > RLX__FRAME_MAX_PAYLOAD)
    return RLX__FRAME_BAD_FIELD;
  return RLX__FRAME_OK;
}

/* Packed layout: 0 type u8 | 1 sig[0] u8 | 2 reserved u16 | 4 comm_id u32 |
 * 8 segment u32 | 12 reserved u32 | 16 seq u64 */
int rlx__frame_packs(const struct rlx__frame_hdr *h) {
  if (h->type != RLX__FT_MSG || h->flags != 0)
    return 0;
  for (int i = 1; i < RLX__SIG_SIZE; i++)
    if (h->sig[i] != 0)
      return 0;
  return 1;
}

void rlx__frame_pack_msg(uint8_t dtype, uint32_t comm_id, uint32_t tag, uint64_t seq,
                         unsigned char *out) {
  out[0] = RLX__FT_MSG;
  out[1] = dtype;
  out[2] = out[3] = 0;
  rlx__put32(out + 4, comm_id);
  rlx__put32(out + 8, tag);
  rlx__put32(out + 12, 0);
  rlx__put64(out + 16, seq);
}

void rlx__frame_pack(const struct rlx__frame_hdr *h, unsigned char *out) {
  rlx__frame_pack_msg(h->sig[0], h->comm_id, h->segment, h->seq, out);
}

int rlx__frame_unpack(const unsigned char *in, size_t n, uint32_t src, struct rlx__frame_hdr *h) {
  if (n < RLX__FRAME_PACKED_SIZE)
    return RLX__FRAME_SHORT;
  if (in[0] != RLX__FT_MSG || in[2] != 0 || in[3] != 0 || rlx__get32(in + 12) != 0)
    return RLX__FRAME_BAD_FIELD;
  memset(h, 0, sizeof(*h));
  h->type = RLX__FT_MSG;
  h->sig[0] = in[1];
  h->comm_id = rlx__get32(in + 4);
  h->segment = rlx__get32(in + 8);
  h->seq = rlx__get64(in + 16);
  h->src = src;
  h->payload_len = n - RLX__FRAME_PACKED_SIZE;
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
