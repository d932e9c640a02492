/* Frame codec, call signatures and CRC32C: round trips, published CRC
 * vectors, and every truncated or bit-flipped header rejected without a
 * crash. */
#include <check.h>
#include "suite.h"
#include <stdlib.h>
#include <string.h>
#include <rlxcoll/rlxcoll.h>
#include "coll/call.h"
#include "transport/frame.h"

static struct rlx__frame_hdr sample(void) {
  struct rlx__frame_hdr h;
  memset(&h, 0, sizeof(h));
  h.type = RLX__FT_DATA;
  h.flags = 0;
  h.comm_id = 7;
  h.segment = 12345;
  h.src = 3;
  h.seq = 0x0102030405060708ull;
  struct rlx__call c = {RLX__CK_ALLREDUCE, RLX_FLOAT32, RLX_SUM, -1, 1048579};
  rlx__call_encode(&c, h.sig);
  h.payload_len = 4096;
  h.payload_crc = 0xdeadbeef;
  return h;
}

START_TEST(round_trip) {
  struct rlx__frame_hdr h = sample(), d;
  unsigned char buf[RLX__FRAME_HDR_SIZE];
  rlx__frame_encode(&h, buf);
  ck_assert_int_eq(rlx__frame_decode(buf, sizeof(buf), &d), RLX__FRAME_OK);
  ck_assert_int_eq(d.type, h.type);
  ck_assert_int_eq(d.comm_id, h.comm_id);
  ck_assert_uint_eq(d.segment, h.segment);
  ck_assert_uint_eq(d.src, h.src);
  ck_assert_uint_eq(d.seq, h.seq);
  ck_assert_mem_eq(d.sig, h.sig, RLX__SIG_SIZE);
  ck_assert_uint_eq(d.payload_len, h.payload_len);
  ck_assert_uint_eq(d.payload_crc, h.payload_crc);
  /* little-endian on the wire, whatever the host */
  ck_assert_int_eq(buf[16], 0x08);
  ck_assert_int_eq(buf[23], 0x01);
}
END_TEST

/* The packed form of a small MSG (shared memory): what packs, round
 * trip, and a packed header that is not one of ours refused. */
START_TEST(packed_round_trip) {
  struct rlx__frame_hdr h = {0}, back;
  h.type = RLX__FT_MSG;
  h.comm_id = 0x01020304u;
  h.segment = 77;
  h.seq = RLX__SEQ_MSG | 123456789u;
  h.sig[0] = 9;
  h.src = 3;
  h.payload_len = 8;
  ck_assert(rlx__frame_packs(&h));
  unsigned char rec[RLX__FRAME_PACKED_SIZE + 8];
  rlx__frame_pack(&h, rec);
  memset(rec + RLX__FRAME_PACKED_SIZE, 0x5a, 8);
  ck_assert_int_eq(rlx__frame_unpack(rec, sizeof rec, 3, &back), RLX__FRAME_OK);
  ck_assert_mem_eq(&back, &h, sizeof h);
  ck_assert_int_eq(rlx__frame_unpack(rec, RLX__FRAME_PACKED_SIZE, 3, &back), RLX__FRAME_OK);
  ck_assert_uint_eq(back.payload_len, 0);
  ck_assert_int_eq(rlx__frame_unpack(rec, RLX__FRAME_PACKED_SIZE - 1, 3, &back), RLX__FRAME_SHORT);
  for (int at = 0; at < 4; at++) { /* the type, and the reserved bytes */
    unsigned char bad[sizeof rec];
    memcpy(bad, rec, sizeof rec);
    bad[at == 0 ? 0 : at == 1 ? 2 : at == 2 ? 3 : 13] ^= 0x10;
    ck_assert_int_eq(rlx__frame_unpack(bad, sizeof bad, 3, &back), RLX__FRAME_BAD_FIELD);
  }
  struct rlx__frame_hdr no = h; /* what does not pack */
  no.flags = RLX__FF_CMA;
  ck_assert(!rlx__frame_packs(&no));
  no = h;
  no.sig[5] = 1;
  ck_assert(!rlx__frame_packs(&no));
  no = h;
  no.type = RLX__FT_DATA;
  ck_assert(!rlx__frame_packs(&no));
}
END_TEST

START_TEST(every_truncation_rejected) {
  struct rlx__frame_hdr h = sample(), d;
  unsigned char buf[RLX__FRAME_HDR_SIZE];
  rlx__frame_encode(&h, buf);
  for (size_t n = 0; n < RLX__FRAME_HDR_SIZE; n++)
    ck_assert_int_eq(rlx__frame_decode(buf, n, &d), RLX__FRAME_SHORT);
}
END_TEST

START_TEST(every_bit_flip_rejected) {
  struct rlx__frame_hdr h = sample(), d;
  unsigned char buf[RLX__FRAME_HDR_SIZE];
  rlx__frame_encode(&h, buf);
  for (int bit = 0; bit < RLX__FRAME_HDR_SIZE * 8; bit++) {
    unsigned char c[RLX__FRAME_HDR_SIZE];
    memcpy(c, buf, sizeof(c));
    c[bit / 8] ^= (unsigned char)(1u << (bit % 8));
    ck_assert_msg(rlx__frame_decode(c, sizeof(c), &d) != RLX__FRAME_OK, "bit %d accepted", bit);
  }
}
END_TEST

START_TEST(out_of_range_fields_rejected) {
  struct rlx__frame_hdr h = sample(), d;
  unsigned char buf[RLX__FRAME_HDR_SIZE];
  h.flags = 0x80;
  rlx__frame_encode(&h, buf);
  ck_assert_int_eq(rlx__frame_decode(buf, sizeof(buf), &d), RLX__FRAME_BAD_FIELD);
  h = sample();
  h.type = RLX__FT_PING;
  rlx__frame_encode(&h, buf); /* a PING has no payload */
  ck_assert_int_eq(rlx__frame_decode(buf, sizeof(buf), &d), RLX__FRAME_BAD_FIELD);
  h = sample();
  h.payload_len = RLX__FRAME_MAX_PAYLOAD + 1;
  rlx__frame_encode(&h, buf);
  ck_assert_int_eq(rlx__frame_decode(buf, sizeof(buf), &d), RLX__FRAME_BAD_FIELD);
  h = sample();
  h.type = 0;
  rlx__frame_encode(&h, buf);
  ck_assert_int_eq(rlx__frame_decode(buf, sizeof(buf), &d), RLX__FRAME_BAD_FIELD);
  /* a split copy's words: ACKs only; SPLIT names where the sender's part
   * starts (payload_len, not 0) and goes with neither NACK nor PUSHED;
   * PUSHED (with or without NACK) carries no length */
  struct {
    uint8_t type, flags;
    uint64_t len;
    int ok;
  } acks[] = {{RLX__FT_ACK, RLX__FF_SPLIT, 4096, 1},
              {RLX__FT_ACK, RLX__FF_SPLIT, 0, 0},
              {RLX__FT_ACK, RLX__FF_SPLIT | RLX__FF_NACK, 4096, 0},
              {RLX__FT_ACK, RLX__FF_SPLIT | RLX__FF_PUSHED, 4096, 0},
              {RLX__FT_ACK, RLX__FF_PUSHED, 0, 1},
              {RLX__FT_ACK, RLX__FF_PUSHED | RLX__FF_NACK, 0, 1},
              {RLX__FT_ACK, RLX__FF_PUSHED, 4096, 0},
              {RLX__FT_ACK, 0, 4096, 0},
              {RLX__FT_MSG, RLX__FF_SPLIT, 4096, 0},
              {RLX__FT_DATA, RLX__FF_PUSHED, 0, 0}};
  for (size_t i = 0; i < sizeof(acks) / sizeof(acks[0]); i++) {
    h = sample();
    h.type = acks[i].type;
    h.flags = acks[i].flags;
    h.payload_len = acks[i].len;
    rlx__frame_encode(&h, buf);
    ck_assert_msg(rlx__frame_decode(buf, sizeof(buf), &d) ==
                      (acks[i].ok ? RLX__FRAME_OK : RLX__FRAME_BAD_FIELD),
                  "case %zu: type %d flags %#x len %llu", i, acks[i].type, acks[i].flags,
                  (unsigned long long)acks[i].len);
  }
}
END_TEST

START_TEST(random_garbage_never_crashes) {
  struct rlx__frame_hdr d;
  unsigned char buf[RLX__FRAME_HDR_SIZE];
  srand(42);
  for (int i = 0; i < 100000; i++) {
    for (size_t k = 0; k < sizeof(buf); k++)
      buf[k] = (unsigned char)rand();
    ck_assert_int_ne(rlx__frame_decode(buf, sizeof(buf), &d), RLX__FRAME_OK);
  }
}
END_TEST

/* RFC 3720 appendix B.4 and the common check value. */
START_TEST(crc32c_vectors) {
  unsigned char b[32];
  ck_assert_uint_eq(rlx__crc32c("123456789", 9), 0xE3069283u);
  ck_assert_uint_eq(rlx__crc32c_sw("123456789", 9), 0xE3069283u);
  memset(b, 0, 32);
  ck_assert_uint_eq(rlx__crc32c(b, 32), 0x8A9136AAu);
  memset(b, 0xff, 32);
  ck_assert_uint_eq(rlx__crc32c(b, 32), 0x62A8AB43u);
  for (int i = 0; i < 32; i++)
    b[i] = (unsigned char)i;
  ck_assert_uint_eq(rlx__crc32c(b, 32), 0x46DD794Eu);
  ck_assert_uint_eq(rlx__crc32c_sw(b, 32), 0x46DD794Eu);
  for (int i = 0; i < 32; i++)
    b[i] = (unsigned char)(31 - i);
  ck_assert_uint_eq(rlx__crc32c(b, 32), 0x113FDB5Cu);
  ck_assert_uint_eq(rlx__crc32c(NULL, 0), 0u);
}
END_TEST

START_TEST(crc32c_paths_agree) {
  /* lengths around the 3-way block sizes (3 x 256, 3 x 8192) too */
  static const size_t big[] = {767, 768, 769, 1000, 4096, 24575, 24576, 24577, 50000, 100003};
  unsigned char *b = malloc(100020);
  srand(7);
  for (int i = 0; i < 100020; i++)
    b[i] = (unsigned char)rand();
  for (size_t off = 0; off < 9; off++) {
    for (size_t n = 0; n < 300; n += 7)
      ck_assert_uint_eq(rlx__crc32c(b + off, n), rlx__crc32c_sw(b + off, n));
    for (size_t i = 0; i < sizeof(big) / sizeof(big[0]); i++)
      ck_assert_uint_eq(rlx__crc32c(b + off, big[i]), rlx__crc32c_sw(b + off, big[i]));
  }
  /* incremental == one shot */
  uint32_t c = rlx__crc32c_update(0, b, 1234);
  c = rlx__crc32c_update(c, b + 1234, 5000 - 1234);
  ck_assert_uint_eq(c, rlx__crc32c(b, 5000));
  free(b);
}
END_TEST

START_TEST(payload_bit_flip_changes_crc) {
  unsigned char b[256];
  for (int i = 0; i < 256; i++)
    b[i] = (unsigned char)(i * 13);
  uint32_t good = rlx__crc32c(b, sizeof(b));
  for (int bit = 0; bit < 256 * 8; bit++) {
    b[bit / 8] ^= (unsigned char)(1u << (bit % 8));
    ck_assert_uint_ne(rlx__crc32c(b, sizeof(b)), good);
    b[bit / 8] ^= (unsigned char)(1u << (bit % 8));
  }
}
END_TEST

/* The signature is opaque to the codec: any bytes travel unchanged (the
 * frame no longer validates what a rank called), and lib/coll reads back
 * exactly what it wrote. */
START_TEST(signature_round_trip) {
  struct rlx__frame_hdr h = sample(), d;
  unsigned char buf[RLX__FRAME_HDR_SIZE];
  for (int i = 0; i < RLX__SIG_SIZE; i++)
    h.sig[i] = (uint8_t)(0xff - i);
  rlx__frame_encode(&h, buf);
  ck_assert_int_eq(rlx__frame_decode(buf, sizeof(buf), &d), RLX__FRAME_OK);
  ck_assert_mem_eq(d.sig, h.sig, RLX__SIG_SIZE);
  struct rlx__call c = {RLX__CK_REDUCE, RLX_INT64, RLX_MAX, 5, 0x123456789abull}, e;
  uint8_t sig[RLX__SIG_SIZE], sig2[RLX__SIG_SIZE];
  rlx__call_encode(&c, sig);
  rlx__call_decode(sig, &e);
  ck_assert_int_eq(e.kind, c.kind);
  ck_assert_int_eq(e.dtype, c.dtype);
  ck_assert_int_eq(e.op, c.op);
  ck_assert_int_eq(e.root, c.root);
  ck_assert_uint_eq(e.count, c.count);
  /* any argument that differs gives other bytes */
  struct rlx__call v[5] = {c, c, c, c, c};
  v[0].kind = RLX__CK_ALLREDUCE;
  v[1].dtype = RLX_UINT64;
  v[2].op = RLX_MIN;
  v[3].root = 4;
  v[4].count++;
  for (int i = 0; i < 5; i++) {
    rlx__call_encode(&v[i], sig2);
    ck_assert_msg(memcmp(sig, sig2, RLX__SIG_SIZE) != 0, "variant %d encodes the same", i);
  }
}
END_TEST

START_TEST(calls_described) {
  char buf[160];
  struct rlx__call c = {RLX__CK_REDUCE, RLX_FLOAT32, RLX_SUM, 2, 1000};
  rlx__call_describe(buf, sizeof(buf), NULL, &c);
  ck_assert_str_eq(buf, "rlx_reduce(count=1000, float32, sum, root=2)");
  c = (struct rlx__call){RLX__CK_ALLREDUCE, RLX_FLOAT32, RLX_AVG, 0, 8};
  rlx__call_describe(buf, sizeof(buf), "rlx_iallreduce", &c);
  ck_assert_str_eq(buf, "rlx_iallreduce(count=8, float32, avg)");
  c = (struct rlx__call){RLX__CK_REDUCE_SCATTER, RLX_INT32, RLX_MAX, 0, 3};
  rlx__call_describe(buf, sizeof(buf), NULL, &c);
  ck_assert_str_eq(buf, "rlx_reduce_scatter(recvcount=3, int32, max)");
  c = (struct rlx__call){RLX__CK_BARRIER, 0, 0, 0, 0};
  rlx__call_describe(buf, sizeof(buf), NULL, &c);
  ck_assert_str_eq(buf, "rlx_barrier()");
  c = (struct rlx__call){RLX__CK_BCAST, 99, 77, 1, 4}; /* a peer's garbage */
  rlx__call_describe(buf, sizeof(buf), NULL, &c);
  ck_assert_str_eq(buf, "rlx_bcast(count=4, ?, root=1)");
  c.kind = 200;
  rlx__call_describe(buf, sizeof(buf), NULL, &c);
  ck_assert_str_eq(buf, "an unknown collective (kind 200)");
  ck_assert_str_eq(rlx__call_name(RLX__CK_ALLGATHER), "rlx_allgather");
  ck_assert_str_eq(rlx__call_name(0), "?");
  rlx__call_describe(buf, 8, NULL, &(struct rlx__call){RLX__CK_REDUCE, 0, 0, 0, 1});
  ck_assert_uint_eq(strlen(buf), 7); /* truncated, still terminated */
}
END_TEST

int main(void) {
  Suite *s = suite_create("frame");
  TCase *tc = tcase_create("codec");
  tcase_add_test(tc, round_trip);
  tcase_add_test(tc, packed_round_trip);
  tcase_add_test(tc, every_truncation_rejected);
  tcase_add_test(tc, every_bit_flip_rejected);
  tcase_add_test(tc, out_of_range_fields_rejected);
  tcase_add_test(tc, random_garbage_never_crashes);
  tcase_add_test(tc, signature_round_trip);
  tcase_add_test(tc, calls_described);
  tcase_add_test(tc, crc32c_vectors);
  tcase_add_test(tc, crc32c_paths_agree);
  tcase_add_test(tc, payload_bit_flip_changes_crc);
  tcase_set_timeout(tc, 60);
  suite_add_tcase(s, tc);
  return rlx_run_suite(s);
}
