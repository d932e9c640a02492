/* libFuzzer target: the handshake parsers. The input is cut into what a
 * stranger could send a server (HELLO, then PROOF) and a client (a
 * CHALLENGE); every one must be refused or accepted cleanly, and nothing
 * without the key may pass the MAC checks. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "bootstrap/handshake.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  struct rlx__hs srv, cli;
  uint8_t hello[RLX__HS_HELLO_SIZE] = {0}, chal[RLX__HS_CHALLENGE_SIZE] = {0},
          proof[RLX__HS_PROOF_SIZE] = {0}, out[RLX__HS_CHALLENGE_SIZE];
  size_t off = 0;
#define TAKE(buf)                                                              \
  do {                                                                         \
    size_t n_ = size - off < sizeof(buf) ? size - off : sizeof(buf);           \
    memcpy(buf, data + off, n_);                                               \
    off += n_;                                                                 \
  } while (0)
  TAKE(hello);
  TAKE(proof);
  TAKE(chal);
  rlx__hs_init(&srv, "the job key", 1, RLX__HS_DATA);
  rlx__hs_init(&cli, "the job key", 2, RLX__HS_DATA);
  int st = rlx__hs_server_hello(&srv, hello, out);
  (void)rlx__hs_strstatus(st);
  if (st == RLX__HS_OK && rlx__hs_server_proof(&srv, proof) == RLX__HS_OK)
    abort(); /* a proof made without the key passed */
  uint8_t myhello[RLX__HS_HELLO_SIZE], myproof[RLX__HS_PROOF_SIZE];
  rlx__hs_client_hello(&cli, 1, myhello);
  if (rlx__hs_client_challenge(&cli, chal, myproof) == RLX__HS_OK)
    abort(); /* a challenge made without the key passed */
  return 0;
}
