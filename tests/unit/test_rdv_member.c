/* A member's standing connection to the rendezvous, against a socketpair
 * playing the rendezvous: counts and answers read without blocking, in
 * pieces and interleaved; an ask given back drops its late answer; bytes
 * out of turn or a closed rendezvous lose it, never block. And the
 * rendezvous as a partition's witness (a real server): the first side to
 * claim a shrink has it, again and again; another side is refused; keys
 * are apart; a wrong job key or no rendezvous is an error, in bounded time. */
#include <check.h>
#include "suite.h"
#include <errno.h>
#include <string.h>
#include <stdlib.h>
#include <stdio.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <unistd.h>
#include "bootstrap/bootstrap.h"
#include "base/byteorder.h"

static struct rlx__rdv_member m;
static int peer; /* the rendezvous's end */

static void start(void) {
  int sv[2];
  ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
  ck_assert_int_eq(rlx__rdv_member_start(&m, sv[0]), 0);
  peer = sv[1];
  char g;
  ck_assert_int_eq(read(peer, &g, 1), 1);
  ck_assert_int_eq(g, 'G');
}

static void stop(void) {
  rlx__rdv_member_close(&m);
  close(peer);
}

static void tell(const void *b, size_t n) { ck_assert_int_eq(write(peer, b, n), (ssize_t)n); }

static void count(uint32_t n) {
  uint8_t j[5] = {'J'};
  rlx__put32(j + 1, n);
  tell(j, 5);
}

/* 'a' k gen, then k cards whose first byte is 0x40 + i */
static uint8_t *answer_msg(uint32_t k, uint32_t gen, size_t *len) {
  *len = 9 + (size_t)k * RLX__CARD_SIZE;
  uint8_t *a = calloc(1, *len);
  a[0] = 'a';
  rlx__put32(a + 1, k);
  rlx__put32(a + 5, gen);
  for (uint32_t i = 0; i < k; i++)
    a[9 + (size_t)i * RLX__CARD_SIZE] = (uint8_t)(0x40 + i);
  return a;
}

static void expect_ask(uint32_t max) {
  uint8_t q[5];
  ck_assert_int_eq(read(peer, q, 5), 5);
  ck_assert_int_eq(q[0], 'A');
  ck_assert_uint_eq(rlx__get32(q + 1), max);
}

START_TEST(answer_in_pieces) {
  start();
  count(3);
  ck_assert_int_eq(rlx__rdv_member_joiners(&m), 3);
  ck_assert_int_eq(rlx__rdv_member_ask(&m, 2), 0);
  ck_assert_int_eq(rlx__rdv_member_ask(&m, 2), -EBUSY); /* one at a time */
  expect_ask(2);
  uint32_t gen = 0;
  uint8_t *cards;
  int n = -1;
  ck_assert_int_eq(rlx__rdv_member_answer(&m, &gen, &cards, &n), 0); /* not yet */
  size_t len;
  uint8_t *a = answer_msg(2, 7, &len);
  count(1); /* a count first, then the answer in three pieces */
  tell(a, 4);
  ck_assert_int_eq(rlx__rdv_member_answer(&m, &gen, &cards, &n), 0);
  ck_assert_int_eq(rlx__rdv_member_joiners(&m), 1);
  tell(a + 4, 300);
  ck_assert_int_eq(rlx__rdv_member_answer(&m, &gen, &cards, &n), 0);
  tell(a + 304, len - 304);
  count(0);
  ck_assert_int_eq(rlx__rdv_member_answer(&m, &gen, &cards, &n), 1);
  ck_assert_int_eq(n, 2);
  ck_assert_uint_eq(gen, 7);
  ck_assert_int_eq(memcmp(cards, a + 9, len - 9), 0);
  ck_assert_int_eq(rlx__rdv_member_joiners(&m), 0); /* the count after it */
  free(cards);
  free(a);
  ck_assert_int_eq(rlx__rdv_member_answer(&m, &gen, &cards, &n), 0); /* taken once */
  ck_assert_int_eq(n, 0);
  ck_assert_int_eq(rlx__rdv_member_ask(&m, 1), 0); /* and a new ask may go */
  stop();
}
END_TEST

START_TEST(ask_given_back) {
  start();
  ck_assert_int_eq(rlx__rdv_member_ask(&m, 1), 0);
  ck_assert_int_eq(rlx__rdv_member_release(&m), 0);
  expect_ask(1);
  char r;
  ck_assert_int_eq(read(peer, &r, 1), 1);
  ck_assert_int_eq(r, 'R');
  size_t len;
  uint8_t *a = answer_msg(1, 3, &len);
  tell(a, len); /* the answer to the ask given back: dropped, not lost */
  count(2);
  ck_assert_int_eq(rlx__rdv_member_joiners(&m), 2);
  uint32_t gen;
  uint8_t *cards;
  int n;
  ck_assert_int_eq(rlx__rdv_member_answer(&m, &gen, &cards, &n), 0);
  ck_assert_int_eq(m.lost, 0);
  /* asked again: this answer is the one */
  ck_assert_int_eq(rlx__rdv_member_ask(&m, 2), 0);
  tell(a, len);
  ck_assert_int_eq(rlx__rdv_member_answer(&m, &gen, &cards, &n), 1);
  ck_assert_int_eq(n, 1);
  free(cards);
  free(a);
  stop();
}
END_TEST

START_TEST(out_of_turn) {
  start();
  size_t len;
  uint8_t *a = answer_msg(0, 1, &len);
  tell(a, len); /* an answer nobody asked for */
  ck_assert_int_eq(rlx__rdv_member_joiners(&m), 0);
  ck_assert_int_eq(m.lost, 1);
  ck_assert_int_eq(rlx__rdv_member_ask(&m, 1), -EPIPE);
  free(a);
  stop();
  start();
  tell("Zzzzz", 5); /* garbage */
  ck_assert_int_eq(rlx__rdv_member_joiners(&m), 0);
  ck_assert_int_eq(m.lost, 1);
  stop();
}
END_TEST

START_TEST(rendezvous_gone) {
  start();
  count(2);
  ck_assert_int_eq(rlx__rdv_member_ask(&m, 2), 0);
  close(peer);
  uint32_t gen;
  uint8_t *cards;
  int n;
  ck_assert_int_eq(rlx__rdv_member_answer(&m, &gen, &cards, &n), -EPIPE);
  ck_assert_int_eq(rlx__rdv_member_joiners(&m), 0);
  rlx__rdv_member_close(&m);
}
END_TEST

/* rlx__sock_connect_within (rlx_comm_shrink's probe): a host that does not
 * answer costs the timeout, not the kernel's two minutes of SYN retries;
 * nobody listening is a refusal at once. A listener whose accept queue is
 * full drops new SYNs, as a cut link does. */
START_TEST(dial_within) {
  int l = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  socklen_t len = sizeof(a);
  ck_assert_int_eq(bind(l, (struct sockaddr *)&a, sizeof(a)), 0);
  ck_assert_int_eq(listen(l, 0), 0);
  ck_assert_int_eq(getsockname(l, (struct sockaddr *)&a, &len), 0);
  char where[64];
  snprintf(where, sizeof where, "127.0.0.1:%d", ntohs(a.sin_port));
  int fd = -1, fill[4];
  ck_assert_int_eq(rlx__sock_connect_within(where, 1000, &fd), 0); /* answered */
  close(fd);
  for (int i = 0; i < 4; i++) { /* the queue full (not accepted) */
    fill[i] = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
    connect(fill[i], (struct sockaddr *)&a, sizeof(a));
  }
  usleep(100000);
  uint64_t t0 = rlx__bs_now_ns();
  int rc = rlx__sock_connect_within(where, 300, &fd);
  double took = (double)(rlx__bs_now_ns() - t0) / 1e9;
  ck_assert_msg(rc == -ETIMEDOUT && fd == -1 && took >= 0.25 && took < 2.0,
                "a silent listener: rc %d after %.2f s", rc, took);
  close(l);
  for (int i = 0; i < 4; i++)
    close(fill[i]);
  t0 = rlx__bs_now_ns();
  rc = rlx__sock_connect_within(where, 300, &fd);
  took = (double)(rlx__bs_now_ns() - t0) / 1e9;
  ck_assert_msg(rc == -ECONNREFUSED && took < 0.2, "nobody listening: rc %d after %.2f s", rc,
                took);
}
END_TEST

START_TEST(witness) {
  struct rlx__rdv_server *s = NULL;
  char where[128], why[256];
  ck_assert_int_eq(rlx__rdv_server_start("127.0.0.1:0", "key-k", 4, 0, NULL, &s, where,
                                         sizeof where), 0);
  ck_assert_int_eq(rlx__rdv_claim(where, "key-k", 7, 0xaaaa, 0, 2000, why, sizeof why), 1);
  ck_assert_int_eq(rlx__rdv_claim(where, "key-k", 7, 0xaaaa, 1, 2000, why, sizeof why), 1);
  ck_assert_int_eq(rlx__rdv_claim(where, "key-k", 7, 0xbbbb, 2, 2000, why, sizeof why), 0);
  ck_assert_int_eq(rlx__rdv_claim(where, "key-k", 7, 0xbbbb, 3, 2000, why, sizeof why), 0);
  ck_assert_int_eq(rlx__rdv_claim(where, "key-k", 8, 0xbbbb, 3, 2000, why, sizeof why), 1);
  ck_assert_int_eq(rlx__rdv_claim(where, "key-k", 7, 0xaaaa, 1, 2000, why, sizeof why), 1);
  /* more keys than the ring holds: the newest are kept */
  for (uint32_t k = 100; k < 200; k++)
    ck_assert_int_eq(rlx__rdv_claim(where, "key-k", k, k, 0, 2000, why, sizeof why), 1);
  ck_assert_int_eq(rlx__rdv_claim(where, "key-k", 199, 5, 0, 2000, why, sizeof why), 0);
  int rc = rlx__rdv_claim(where, "other-key", 9, 1, 0, 2000, why, sizeof why);
  ck_assert_msg(rc < 0, "a wrong job key was answered: %d", rc);
  rlx__rdv_server_stop(s);
  uint64_t t0 = rlx__bs_now_ns();
  rc = rlx__rdv_claim(where, "key-k", 7, 0xaaaa, 0, 300, why, sizeof why);
  ck_assert_msg(rc < 0 && strstr(why, "cannot reach the rendezvous") != NULL &&
                    rlx__bs_now_ns() - t0 < 1000000000ull,
                "no rendezvous: %d (%s)", rc, why);
}
END_TEST

int main(void) {
  Suite *s = suite_create("rdv_member");
  TCase *tc = tcase_create("member");
  tcase_add_test(tc, answer_in_pieces);
  tcase_add_test(tc, ask_given_back);
  tcase_add_test(tc, out_of_turn);
  tcase_add_test(tc, rendezvous_gone);
  tcase_add_test(tc, dial_within);
  tcase_add_test(tc, witness);
  suite_add_tcase(s, tc);
  return rlx_run_suite(s);
}
