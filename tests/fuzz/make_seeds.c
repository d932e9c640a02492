/* Writes the seed corpora (valid frames and handshake messages) that
 * tests/fuzz/corpus_* hold: make_seeds DIR. */
#include <stdio.h>
#include <string.h>
#include "transport/frame.h"
#include "bootstrap/handshake.h"

static void put(const char *dir, const char *name, const void *a, size_t n, const void *b,
                size_t m) {
  char path[512];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  FILE *f = fopen(path, "wb");
  if (!f)
    return;
  fwrite(a, 1, n, f);
  if (b)
    fwrite(b, 1, m, f);
  fclose(f);
}

int main(int argc, char **argv) {
  if (argc < 3)
    return 2;
  const char *fd = argv[1], *hd = argv[2];
  struct rlx__frame_hdr h;
  unsigned char bytes[RLX__FRAME_HDR_SIZE];
  const char payload[] = "0123456789abcdef";
  for (int type = RLX__FT_DATA; type <= RLX__FT_MAX; type++) {
    memset(&h, 0, sizeof h);
    h.type = (uint8_t)type;
    h.comm_id = 7;
    h.seq = 3;
    h.sig[0] = 1; /* what lib/coll/call.c writes for an allreduce of 4 int8 */
    h.sig[8] = 4;
    h.src = 1;
    int data = type == RLX__FT_DATA || type == RLX__FT_MSG;
    if (type == RLX__FT_MSG) { /* tag 5, the sender's 4th message, 16 int8 */
      h.segment = 5;
      h.seq = RLX__SEQ_MSG | 4;
      memset(h.sig, 0, sizeof h.sig);
    }
    h.payload_len = data ? sizeof payload - 1 : 0;
    h.payload_crc = data ? rlx__crc32c(payload, sizeof payload - 1) : 0;
    rlx__frame_encode(&h, bytes);
    char name[32];
    snprintf(name, sizeof name, "type%d", type);
    put(fd, name, bytes, sizeof bytes, data ? payload : NULL, sizeof payload - 1);
    if (type == RLX__FT_MSG) { /* packed, as shared memory carries a small one */
      unsigned char packed[RLX__FRAME_PACKED_SIZE];
      h.sig[0] = 2; /* (its dtype) */
      rlx__frame_pack(&h, packed);
      put(fd, "type5packed", packed, sizeof packed, payload, 8);
      h.sig[0] = 0;
    }
    if (type == RLX__FT_MSG) { /* and by reference: a descriptor (address, pid) */
      unsigned char desc[RLX__CMA_DESC_SIZE] = {0x00, 0x10, 0, 0, 0, 0, 0, 0, 0x39, 0x30};
      h.flags = RLX__FF_CMA;
      h.payload_crc = rlx__crc32c(desc, sizeof desc);
      rlx__frame_encode(&h, bytes);
      put(fd, "type5cma", bytes, sizeof bytes, desc, sizeof desc);
    }
    if (type == RLX__FT_ACK) { /* a split copy's words: SPLIT (where the sender's
                                * part starts; the receive buffer and pid in sig), PUSHED */
      memset(h.sig, 0, sizeof h.sig);
      h.sig[1] = 0x10, h.sig[8] = 0x39, h.sig[9] = 0x30;
      h.flags = RLX__FF_SPLIT;
      h.payload_len = 1u << 20;
      rlx__frame_encode(&h, bytes);
      put(fd, "type3split", bytes, sizeof bytes, NULL, 0);
      h.flags = RLX__FF_PUSHED;
      h.payload_len = 0;
      rlx__frame_encode(&h, bytes);
      put(fd, "type3pushed", bytes, sizeof bytes, NULL, 0);
    }
  }
  struct rlx__hs cli, srv;
  uint8_t hello[RLX__HS_HELLO_SIZE], chal[RLX__HS_CHALLENGE_SIZE], proof[RLX__HS_PROOF_SIZE];
  rlx__hs_init(&cli, "the job key", 2, RLX__HS_DATA);
  rlx__hs_init(&srv, "the job key", 1, RLX__HS_DATA);
  rlx__hs_client_hello(&cli, 1, hello);
  rlx__hs_server_hello(&srv, hello, chal);
  rlx__hs_client_challenge(&cli, chal, proof);
  put(hd, "hello_proof_challenge", hello, sizeof hello, proof, sizeof proof);
  FILE *f;
  char path[512];
  snprintf(path, sizeof path, "%s/hello_proof_challenge", hd);
  if ((f = fopen(path, "ab")) != NULL) {
    fwrite(chal, 1, sizeof chal, f);
    fclose(f);
  }
  return 0;
}
