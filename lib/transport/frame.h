/* The wire format: a fixed 64-byte little-endian frame header (what the
 * sender called, where the payload belongs, CRC32C of header and payload),
 * and the codec that encodes and strictly validates it. */
#ifndef RLX_FRAME_H
#define RLX_FRAME_H

#include <stddef.h>
#include <stdint.h>

#define RLX__FRAME_MAGIC 0x464c5852u /* "RXLF" read as little-endian bytes R X L F */
#define RLX__FRAME_VERSION 1
#define RLX__FRAME_HDR_SIZE 64
/* A frame payload is at most 1 GiB; bigger transfers are split by the caller. */
#define RLX__FRAME_MAX_PAYLOAD (1ull << 30)

enum rlx__frame_type {
  RLX__FT_DATA = 1,  /* a piece of a collective */
  RLX__FT_ABORT = 2, /* the sender failed this operation; payload is the reason */
  RLX__FT_ACK = 3,   /* a DATA frame sent by reference was taken (or not: NACK) */
  RLX__FT_PING = 4,  /* heartbeat on an idle connection; no payload */
  RLX__FT_MAX = 4
};

/* Frame flags. */
#define RLX__FF_CMA 0x01  /* DATA: the payload on the wire is a descriptor (address,
                             pid) and the receiver copies payload_len bytes out of
                             the sender's memory with process_vm_readv; payload_crc
                             is the descriptor's CRC32C */
#define RLX__FF_NACK 0x02 /* ACK: the copy failed; send the payload on the socket */
#define RLX__CMA_DESC_SIZE 16

/* Collective kinds, as carried on the wire. */
enum rlx__coll_kind {
  RLX__CK_ALLREDUCE = 1,
  RLX__CK_BCAST = 2,
  RLX__CK_BARRIER = 3,
  RLX__CK_FINALIZE = 4,
  RLX__CK_REDUCE = 5,
  RLX__CK_ALLGATHER = 6,
  RLX__CK_REDUCE_SCATTER = 7,
  RLX__CK_COMM = 8, /* communicator management (split's exchange) */
  RLX__CK_MAX = 8
};

struct rlx__frame_hdr {
  uint8_t type;
  uint8_t kind;  /* enum rlx__coll_kind */
  uint8_t dtype; /* rlx_dtype_t */
  uint8_t op;    /* rlx_op_t */
  uint8_t flags;
  uint32_t comm_id;
  int32_t root;
  uint32_t segment;
  uint32_t src;  /* sender's world rank */
  uint64_t seq;  /* operation sequence number on the communicator */
  uint64_t count;
  uint64_t payload_len;
  uint32_t payload_crc;
};

enum rlx__frame_status {
  RLX__FRAME_OK = 0,
  RLX__FRAME_BAD_MAGIC = -1,
  RLX__FRAME_BAD_VERSION = -2,
  RLX__FRAME_BAD_CRC = -3,
  RLX__FRAME_BAD_FIELD = -4,
  RLX__FRAME_SHORT = -5
};

/* Encode h (payload_crc must be set) into out[RLX__FRAME_HDR_SIZE]. */
void rlx__frame_encode(const struct rlx__frame_hdr *h, unsigned char *out);
/* Decode and validate n bytes; RLX__FRAME_OK or a negative status. */
int rlx__frame_decode(const unsigned char *in, size_t n, struct rlx__frame_hdr *h);
const char *rlx__frame_strstatus(int status);

uint32_t rlx__crc32c(const void *data, size_t n);
uint32_t rlx__crc32c_update(uint32_t crc, const void *data, size_t n);
uint32_t rlx__crc32c_sw(const void *data, size_t n); /* the table path, for tests */

#endif
