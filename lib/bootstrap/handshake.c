/* Handshake messages and their MACs; see handshake.h for the exchange. */
#include <string.h>
#include <sodium.h>
#include "base/byteorder.h"
#include "handshake.h"

#define HS_VERSION 1


int rlx__hs_init(struct rlx__hs *hs, const char *job_key, uint32_t self, uint8_t channel) {
  if (sodium_init() < 0)
    return -1;
  memset(hs, 0, sizeof(*hs));
  crypto_generichash(hs->key, sizeof(hs->key), (const unsigned char *)job_key, strlen(job_key),
                     (const unsigned char *)"rlxcoll-job-key", 15);
  hs->self = self;
  hs->channel = channel;
  return 0;
}

/* HMAC(key, label | HELLO | nonce_s) */
static void mac(const struct rlx__hs *hs, char label, uint8_t out[32]) {
  crypto_auth_hmacsha256_state st;
  crypto_auth_hmacsha256_init(&st, hs->key, sizeof(hs->key));
  crypto_auth_hmacsha256_update(&st, (const unsigned char *)&label, 1);
  crypto_auth_hmacsha256_update(&st, hs->hello, sizeof(hs->hello));
  crypto_auth_hmacsha256_update(&st, hs->nonce_s, sizeof(hs->nonce_s));
  crypto_auth_hmacsha256_final(&st, out);
}

void rlx__hs_client_hello(struct rlx__hs *hs, uint32_t to, uint8_t out[RLX__HS_HELLO_SIZE]) {
  memset(out, 0, RLX__HS_HELLO_SIZE);
  memcpy(out, "RLXH", 4);
  out[4] = HS_VERSION;
  out[5] = hs->channel;
  rlx__put32(out + 8, hs->self);
  rlx__put32(out + 12, to);
  randombytes_buf(out + 16, RLX__HS_NONCE_SIZE);
  memcpy(hs->hello, out, RLX__HS_HELLO_SIZE);
  hs->peer = to;
}

int rlx__hs_server_hello(struct rlx__hs *hs, const uint8_t in[RLX__HS_HELLO_SIZE],
                         uint8_t out[RLX__HS_CHALLENGE_SIZE]) {
  if (memcmp(in, "RLXH", 4) != 0)
    return RLX__HS_BAD_MAGIC;
  if (in[4] != HS_VERSION)
    return RLX__HS_BAD_VERSION;
  if (in[5] != hs->channel || rlx__get32(in + 12) != hs->self || in[6] != 0 || in[7] != 0)
    return RLX__HS_BAD_PEER;
  memcpy(hs->hello, in, RLX__HS_HELLO_SIZE);
  hs->peer = rlx__get32(in + 8);
  randombytes_buf(hs->nonce_s, sizeof(hs->nonce_s));
  memcpy(out, "RLXC", 4);
  rlx__put32(out + 4, hs->self);
  memcpy(out + 8, hs->nonce_s, RLX__HS_NONCE_SIZE);
  mac(hs, 'S', out + 40);
  return RLX__HS_OK;
}

int rlx__hs_client_challenge(struct rlx__hs *hs, const uint8_t in[RLX__HS_CHALLENGE_SIZE],
                             uint8_t out[RLX__HS_PROOF_SIZE]) {
  uint8_t want[32];
  if (memcmp(in, "RLXC", 4) != 0)
    return RLX__HS_BAD_MAGIC;
  if (rlx__get32(in + 4) != hs->peer)
    return RLX__HS_BAD_PEER;
  memcpy(hs->nonce_s, in + 8, RLX__HS_NONCE_SIZE);
  mac(hs, 'S', want);
  if (crypto_verify_32(want, in + 40) != 0)
    return RLX__HS_BAD_MAC;
  memcpy(out, "RLXP", 4);
  mac(hs, 'C', out + 4);
  return RLX__HS_OK;
}

void rlx__hs_proof_attach(const struct rlx__hs *hs, uint8_t out[RLX__HS_PROOF_SIZE]) {
  memcpy(out, "RLXA", 4);
  mac(hs, 'A', out + 4);
}

int rlx__hs_server_proof(struct rlx__hs *hs, const uint8_t in[RLX__HS_PROOF_SIZE]) {
  uint8_t want[32];
  if (memcmp(in, "RLXP", 4) != 0 && memcmp(in, "RLXA", 4) != 0)
    return RLX__HS_BAD_MAGIC;
  /* the label is under the MAC: nobody without the key turns one into the other */
  hs->attached = in[3] == 'A';
  mac(hs, hs->attached ? 'A' : 'C', want);
  if (crypto_verify_32(want, in + 4) != 0)
    return RLX__HS_BAD_MAC;
  return RLX__HS_OK;
}

const char *rlx__hs_strstatus(int status) {
  switch (status) {
  case RLX__HS_OK: return "ok";
  case RLX__HS_BAD_MAGIC: return "not an rlxcoll handshake";
  case RLX__HS_BAD_VERSION: return "unsupported handshake version";
  case RLX__HS_BAD_PEER: return "handshake not addressed to this rank";
  case RLX__HS_BAD_MAC: return "wrong job key";
  default: return "unknown handshake status";
  }
}
