/* The wire format: a fixed 64-byte little-endian frame header (where the
 * payload belongs, the sender's call signature as opaque bytes, CRC32C of
 * header and payload), and the codec that encodes and strictly validates
 * it. The transport knows no collective: lib/coll/call.c encodes and
 * reads the signature. */
#ifndef RLX_FRAME_H
#define RLX_FRAME_H

#include <stddef.h>
#include <stdint.h>

#define RLX__FRAME_MAGIC 0x464c5852u /* "RXLF" read as little-endian bytes R X L F */
#define RLX__FRAME_VERSION 2
#define RLX__FRAME_HDR_SIZE 64
/* A frame payload is at most 1 GiB; bigger transfers are split by the caller. */
#define RLX__FRAME_MAX_PAYLOAD (1ull << 30)

enum rlx__frame_type {
  RLX__FT_DATA = 1,  /* a piece of a collective */
  RLX__FT_ABORT = 2, /* the sender failed this operation; payload is the reason */
  RLX__FT_ACK = 3,   /* a DATA frame sent by reference was taken (or not: NACK) */
  RLX__FT_PING = 4,  /* heartbeat on an idle connection; no payload */
  RLX__FT_MSG = 5,   /* a point-to-point message (rlx_send): segment is its tag,
                        seq the sender's count of messages to this peer with
                        RLX__SEQ_MSG set; matched by (comm_id, src, tag) in
                        the order frames arrive, not by key */
  RLX__FT_MAX = 5
};

/* In a MSG frame's seq: keeps its key (comm_id, seq, segment), which an ACK
 * echoes, apart from every collective's. */
#define RLX__SEQ_MSG (1ull << 62)

/* Frame flags. */
#define RLX__FF_CMA 0x01  /* DATA, MSG: the payload on the wire is a descriptor (address,
                             pid) and the receiver copies payload_len bytes out of
                             the sender's memory with process_vm_readv; payload_crc
                             is the descriptor's CRC32C */
#define RLX__FF_NACK 0x02 /* ACK: the copy failed; send the payload on the socket */
/* ACK (receiver to sender) of a big MSG sent by reference: copy your part
 * yourself, bytes [payload_len, the message's length) into my buffer at
 * the same offset with process_vm_writev, while I read the rest; sig's
 * first 8 bytes are my buffer's address, the next 4 my pid. */
#define RLX__FF_SPLIT 0x04
/* ACK (sender to receiver): my part of a split copy is written (with
 * NACK: it was refused; read it yourself). */
#define RLX__FF_PUSHED 0x08
#define RLX__CMA_DESC_SIZE 16

/* The call signature: what the sender called, encoded by lib/coll, compared
 * byte for byte against what the receiver called. */
#define RLX__SIG_SIZE 16

/* A frame is addressed by (comm_id, seq, segment): the communicator, the
 * operation's sequence number on it, and the transfer within the
 * operation. */
struct rlx__frame_hdr {
  uint8_t type;
  uint8_t flags;
  uint32_t comm_id;
  uint32_t segment;
  uint32_t src; /* sender's world rank */
  uint64_t seq;
  uint8_t sig[RLX__SIG_SIZE];
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

/* A small MSG frame packed for shared memory (shm.c puts it in a ring as
 * one whole record; the ring's word gives its length and the connection
 * its sender): type, the signature's first byte (the dtype), comm_id,
 * segment (the tag) and seq, in 24 bytes instead of 64, without the
 * CRCs that memory needs no more than the 64-byte header does there. Only
 * a MSG whose flags are 0 and whose signature's other bytes are 0 packs. */
#define RLX__FRAME_PACKED_SIZE 24
int rlx__frame_packs(const struct rlx__frame_hdr *h);
void rlx__frame_pack(const struct rlx__frame_hdr *h, unsigned char *out);
/* The packed header of a message frame (a rlx_send's) from its fields. */
void rlx__frame_pack_msg(uint8_t dtype, uint32_t comm_id, uint32_t tag, uint64_t seq,
                         unsigned char *out);
/* Unpack and validate a packed frame of n bytes (header and payload)
 * from src: RLX__FRAME_OK (h filled, payload_len n - 24) or a negative
 * status. */
int rlx__frame_unpack(const unsigned char *in, size_t n, uint32_t src, struct rlx__frame_hdr *h);

uint32_t rlx__crc32c(const void *data, size_t n);
uint32_t rlx__crc32c_update(uint32_t crc, const void *data, size_t n);
uint32_t rlx__crc32c_sw(const void *data, size_t n); /* the table path, for tests */

#endif
