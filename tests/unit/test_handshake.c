/* The authenticated handshake: the right key passes; a wrong key, a
 * tampered message, a misaddressed hello or a replayed proof fail. */
#include <check.h>
#include "suite.h"
#include <string.h>
#include "bootstrap/handshake.h"

struct pair {
  struct rlx__hs cli, srv;
  uint8_t hello[RLX__HS_HELLO_SIZE], chal[RLX__HS_CHALLENGE_SIZE], proof[RLX__HS_PROOF_SIZE];
};

static void start(struct pair *p, const char *ckey, const char *skey) {
  rlx__hs_init(&p->cli, ckey, 3, RLX__HS_DATA);
  rlx__hs_init(&p->srv, skey, 1, RLX__HS_DATA);
  rlx__hs_client_hello(&p->cli, 1, p->hello);
}

START_TEST(good_key) {
  struct pair p;
  start(&p, "job-key", "job-key");
  ck_assert_int_eq(rlx__hs_server_hello(&p.srv, p.hello, p.chal), RLX__HS_OK);
  ck_assert_uint_eq(p.srv.peer, 3);
  ck_assert_int_eq(rlx__hs_client_challenge(&p.cli, p.chal, p.proof), RLX__HS_OK);
  ck_assert_int_eq(rlx__hs_server_proof(&p.srv, p.proof), RLX__HS_OK);
}
END_TEST

/* A proof that says a descriptor came with it verifies and says so; its
 * label is under the MAC, so neither proof passes as the other. */
START_TEST(attached_proof) {
  struct pair p;
  start(&p, "job-key", "job-key");
  ck_assert_int_eq(rlx__hs_server_hello(&p.srv, p.hello, p.chal), RLX__HS_OK);
  ck_assert_int_eq(rlx__hs_client_challenge(&p.cli, p.chal, p.proof), RLX__HS_OK);
  uint8_t plain[RLX__HS_PROOF_SIZE];
  memcpy(plain, p.proof, sizeof plain);
  ck_assert_int_eq(rlx__hs_server_proof(&p.srv, plain), RLX__HS_OK);
  ck_assert_int_eq(p.srv.attached, 0);
  rlx__hs_proof_attach(&p.cli, p.proof);
  ck_assert_int_eq(memcmp(p.proof, "RLXA", 4), 0);
  ck_assert_int_eq(rlx__hs_server_proof(&p.srv, p.proof), RLX__HS_OK);
  ck_assert_int_eq(p.srv.attached, 1);
  p.proof[3] = 'P'; /* the attached MAC under the plain label */
  ck_assert_int_eq(rlx__hs_server_proof(&p.srv, p.proof), RLX__HS_BAD_MAC);
  plain[3] = 'A';
  ck_assert_int_eq(rlx__hs_server_proof(&p.srv, plain), RLX__HS_BAD_MAC);
}
END_TEST

START_TEST(wrong_key) {
  struct pair p;
  start(&p, "job-key", "other-key");
  ck_assert_int_eq(rlx__hs_server_hello(&p.srv, p.hello, p.chal), RLX__HS_OK);
  /* the client sees the server cannot prove the key */
  ck_assert_int_eq(rlx__hs_client_challenge(&p.cli, p.chal, p.proof), RLX__HS_BAD_MAC);
  /* and a client with the wrong key cannot prove it to the server */
  start(&p, "wrong", "job-key");
  ck_assert_int_eq(rlx__hs_server_hello(&p.srv, p.hello, p.chal), RLX__HS_OK);
  struct rlx__hs liar = p.cli;
  memcpy(p.proof, "RLXP", 4);
  memset(p.proof + 4, 0xab, 32);
  (void)liar;
  ck_assert_int_eq(rlx__hs_server_proof(&p.srv, p.proof), RLX__HS_BAD_MAC);
}
END_TEST

START_TEST(tampering_detected) {
  for (int bit = 0; bit < RLX__HS_CHALLENGE_SIZE * 8; bit++) {
    struct pair p;
    start(&p, "k", "k");
    ck_assert_int_eq(rlx__hs_server_hello(&p.srv, p.hello, p.chal), RLX__HS_OK);
    p.chal[bit / 8] ^= (uint8_t)(1u << (bit % 8));
    ck_assert_int_ne(rlx__hs_client_challenge(&p.cli, p.chal, p.proof), RLX__HS_OK);
  }
  for (int bit = 0; bit < RLX__HS_PROOF_SIZE * 8; bit++) {
    struct pair p;
    start(&p, "k", "k");
    rlx__hs_server_hello(&p.srv, p.hello, p.chal);
    rlx__hs_client_challenge(&p.cli, p.chal, p.proof);
    p.proof[bit / 8] ^= (uint8_t)(1u << (bit % 8));
    ck_assert_int_ne(rlx__hs_server_proof(&p.srv, p.proof), RLX__HS_OK);
  }
}
END_TEST

START_TEST(misaddressed_or_garbage_hello) {
  struct pair p;
  rlx__hs_init(&p.cli, "k", 3, RLX__HS_DATA);
  rlx__hs_init(&p.srv, "k", 1, RLX__HS_DATA);
  rlx__hs_client_hello(&p.cli, 2, p.hello); /* meant for rank 2 */
  ck_assert_int_eq(rlx__hs_server_hello(&p.srv, p.hello, p.chal), RLX__HS_BAD_PEER);
  rlx__hs_init(&p.cli, "k", 3, RLX__HS_RENDEZVOUS); /* wrong channel */
  rlx__hs_client_hello(&p.cli, 1, p.hello);
  ck_assert_int_eq(rlx__hs_server_hello(&p.srv, p.hello, p.chal), RLX__HS_BAD_PEER);
  memset(p.hello, 0x41, sizeof(p.hello));
  ck_assert_int_eq(rlx__hs_server_hello(&p.srv, p.hello, p.chal), RLX__HS_BAD_MAGIC);
}
END_TEST

START_TEST(replayed_proof_fails) {
  struct pair p, q;
  start(&p, "k", "k");
  rlx__hs_server_hello(&p.srv, p.hello, p.chal);
  rlx__hs_client_challenge(&p.cli, p.chal, p.proof);
  ck_assert_int_eq(rlx__hs_server_proof(&p.srv, p.proof), RLX__HS_OK);
  /* an eavesdropper replays HELLO and PROOF to a new server session */
  rlx__hs_init(&q.srv, "k", 1, RLX__HS_DATA);
  ck_assert_int_eq(rlx__hs_server_hello(&q.srv, p.hello, q.chal), RLX__HS_OK);
  ck_assert_int_eq(rlx__hs_server_proof(&q.srv, p.proof), RLX__HS_BAD_MAC);
}
END_TEST

int main(void) {
  Suite *s = suite_create("handshake");
  TCase *tc = tcase_create("hmac");
  tcase_set_timeout(tc, 60); /* Check's default 4 s is too short under the sanitizers */
  tcase_add_test(tc, good_key);
  tcase_add_test(tc, attached_proof);
  tcase_add_test(tc, wrong_key);
  tcase_add_test(tc, tampering_detected);
  tcase_add_test(tc, misaddressed_or_garbage_hello);
  tcase_add_test(tc, replayed_proof_fails);
  suite_add_tcase(s, tc);
  return rlx_run_suite(s);
}
