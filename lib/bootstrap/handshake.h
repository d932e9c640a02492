/* The authenticated handshake every connection starts with: both sides
 * prove they hold the job key by an HMAC-SHA-256 (libsodium) over fresh
 * nonces from both, so a stranger or a replayed handshake fails.
 *
 *   client -> server  HELLO     magic "RLXH", version, channel, from, to, nonce_c
 *   server -> client  CHALLENGE magic "RLXC", from, nonce_s, HMAC(key, "S" | HELLO | nonce_s)
 *   client -> server  PROOF     magic "RLXP", HMAC(key, "C" | HELLO | nonce_s)
 *                     or        magic "RLXA", HMAC(key, "A" | HELLO | nonce_s):
 *                               a descriptor comes with these bytes (shm's
 *                               segment); the server answers it with one byte
 *                               (conn.c), since the kernel drops a descriptor
 *                               a process out of them cannot take, silently
 *
 * Pure functions over byte buffers: the libuv and blocking-socket callers
 * share them, and the fuzz target calls them directly. */
#ifndef RLX_HANDSHAKE_H
#define RLX_HANDSHAKE_H

#include <stdint.h>

#define RLX__HS_KEY_SIZE 32
#define RLX__HS_NONCE_SIZE 32
#define RLX__HS_HELLO_SIZE 48
#define RLX__HS_CHALLENGE_SIZE 72
#define RLX__HS_PROOF_SIZE 36
#define RLX__HS_ANY 0xffffffffu /* "to" for the rendezvous server */

enum rlx__hs_channel { RLX__HS_DATA = 1, RLX__HS_RENDEZVOUS = 2 };

enum rlx__hs_status {
  RLX__HS_OK = 0,
  RLX__HS_BAD_MAGIC = -1,
  RLX__HS_BAD_VERSION = -2,
  RLX__HS_BAD_PEER = -3, /* wrong channel, or not addressed to us */
  RLX__HS_BAD_MAC = -4   /* does not hold the job key */
};

struct rlx__hs {
  uint8_t key[RLX__HS_KEY_SIZE];
  uint8_t hello[RLX__HS_HELLO_SIZE];
  uint8_t nonce_s[RLX__HS_NONCE_SIZE];
  uint32_t self, peer;
  uint8_t channel;
  uint8_t attached; /* server: the proof said a descriptor came with it */
};

/* Derive the 32-byte key from the job key string (BLAKE2b, libsodium). */
int rlx__hs_init(struct rlx__hs *hs, const char *job_key, uint32_t self, uint8_t channel);
void rlx__hs_client_hello(struct rlx__hs *hs, uint32_t to, uint8_t out[RLX__HS_HELLO_SIZE]);
/* Server: check HELLO (addressed to hs->self, right channel), learn hs->peer,
 * write the CHALLENGE. */
int rlx__hs_server_hello(struct rlx__hs *hs, const uint8_t in[RLX__HS_HELLO_SIZE],
                         uint8_t out[RLX__HS_CHALLENGE_SIZE]);
/* Client: verify the server's MAC and write the PROOF. */
int rlx__hs_client_challenge(struct rlx__hs *hs, const uint8_t in[RLX__HS_CHALLENGE_SIZE],
                             uint8_t out[RLX__HS_PROOF_SIZE]);
/* Client: make the PROOF out say a descriptor goes with it ("RLXA"). */
void rlx__hs_proof_attach(const struct rlx__hs *hs, uint8_t out[RLX__HS_PROOF_SIZE]);
/* Server: verify the client's MAC; hs->attached tells which PROOF it was. */
int rlx__hs_server_proof(struct rlx__hs *hs, const uint8_t in[RLX__HS_PROOF_SIZE]);
const char *rlx__hs_strstatus(int status);

#endif
