/* RLX_* environment parsing: defaults, good values, and bad values that
 * must fail with RLX_ERR_ARG and a message naming the variable. */
#include <check.h>
#include "suite.h"
#include <stdlib.h>
#include <string.h>
#include "base/internal.h"

static const char *vars[] = {"RLX_TIMEOUT", "RLX_INIT_TIMEOUT", "RLX_TRANSPORT", "RLX_ALLREDUCE_ALGO", "RLX_LOG",
                             "RLX_SPIN_US", "RLX_PROGRESS_BIND", "RLX_WIRE", "RLX_CMA", "RLX_SHM_COLL", "RLX_BCAST_ALGO", "RLX_ALLGATHER_ALGO", "RLX_IFACE", "RLX_RANK", "RLX_SIZE",
                             "RLX_LOCAL_RANK", "RLX_LOCAL_SIZE", "RLX_RENDEZVOUS", "RLX_JOB_KEY",
                             "RLX_TRACE", "RLX_FLIGHT", "RLX_FLIGHT_DUMP", "RLX_STATS"};

static void clear(void) {
  for (size_t i = 0; i < sizeof(vars) / sizeof(vars[0]); i++)
    unsetenv(vars[i]);
}

START_TEST(defaults) {
  struct rlx__config c;
  clear();
  ck_assert_int_eq(rlx__config_load(&c), RLX_OK);
  ck_assert(c.timeout_s == 300.0);
  ck_assert(c.init_timeout_s == 300.0);
  ck_assert_str_eq(c.transport, "");
  ck_assert_int_eq(c.shm_coll, 1); /* collectives in shared memory where they can be */
  ck_assert_int_eq(c.has_launch, 0);
  ck_assert_int_eq(c.rank, 0);
  ck_assert_int_eq(c.size, 1);
  ck_assert_int_eq(c.log_level, RLX__LOG_OFF);
  ck_assert_int_eq(c.spin_us, -1);
  ck_assert_int_eq(c.progress_spare, 0);
  ck_assert_str_eq(c.trace, "");
  ck_assert_int_eq(c.flight, 256);
  ck_assert_int_eq(c.flight_dump, 0);
  ck_assert_int_eq(c.stats, 0);
}
END_TEST

START_TEST(observe_values) {
  struct rlx__config c;
  clear();
  setenv("RLX_TRACE", "/tmp/t.json", 1);
  setenv("RLX_FLIGHT", "0", 1);
  setenv("RLX_FLIGHT_DUMP", "error", 1);
  setenv("RLX_STATS", "on", 1);
  ck_assert_int_eq(rlx__config_load(&c), RLX_OK);
  ck_assert_str_eq(c.trace, "/tmp/t.json");
  ck_assert_int_eq(c.flight, 0);
  ck_assert_int_eq(c.flight_dump, 1);
  ck_assert_int_eq(c.stats, 1);
  setenv("RLX_STATS", "0", 1);
  ck_assert_int_eq(rlx__config_load(&c), RLX_OK);
  ck_assert_int_eq(c.stats, 0);
  clear();
}
END_TEST

START_TEST(good_values) {
  struct rlx__config c;
  clear();
  setenv("RLX_TIMEOUT", "2.5", 1);
  setenv("RLX_TRANSPORT", "tcp", 1);
  setenv("RLX_ALLREDUCE_ALGO", "ring", 1);
  setenv("RLX_BCAST_ALGO", "scatter-allgather", 1);
  setenv("RLX_SHM_COLL", "off", 1);
  setenv("RLX_WIRE", "bf16", 1);
  setenv("RLX_LOG", "debug", 1);
  setenv("RLX_SPIN_US", "150", 1);
  setenv("RLX_PROGRESS_BIND", "spare", 1);
  setenv("RLX_RANK", "2", 1);
  setenv("RLX_SIZE", "4", 1);
  setenv("RLX_RENDEZVOUS", "127.0.0.1:29500", 1);
  setenv("RLX_JOB_KEY", "secret", 1);
  ck_assert_int_eq(rlx__config_load(&c), RLX_OK);
  ck_assert(c.timeout_s == 2.5);
  ck_assert(c.init_timeout_s == 60.0); /* a short RLX_TIMEOUT does not rush the bootstrap */
  setenv("RLX_INIT_TIMEOUT", "4", 1);
  ck_assert_int_eq(rlx__config_load(&c), RLX_OK);
  ck_assert(c.init_timeout_s == 4.0);
  setenv("RLX_TIMEOUT", "0", 1);
  unsetenv("RLX_INIT_TIMEOUT");
  ck_assert_int_eq(rlx__config_load(&c), RLX_OK);
  ck_assert(c.init_timeout_s == 0.0);
  setenv("RLX_TIMEOUT", "2.5", 1);
  ck_assert_str_eq(c.transport, "tcp");
  ck_assert_str_eq(c.allreduce_algo, "ring");
  ck_assert_int_eq(c.log_level, RLX__LOG_DEBUG);
  ck_assert_str_eq(c.bcast_algo, "scatter-allgather");
  ck_assert_int_eq(c.wire, RLX__WIRE_BF16);
  ck_assert_int_eq(c.shm_coll, 0);
  ck_assert_int_eq(c.spin_us, 150);
  ck_assert_int_eq(c.progress_spare, 1);
  ck_assert_int_eq(c.rank, 2);
  ck_assert_int_eq(c.size, 4);
  ck_assert_str_eq(c.rendezvous, "127.0.0.1:29500");
  clear();
}
END_TEST

/* Each bad value: rlx__config_load fails with RLX_ERR_ARG and names it. */
static void expect_bad(const char *var, const char *val, const char *named) {
  struct rlx__config c;
  clear();
  setenv(var, val, 1);
  if (strncmp(var, "RLX_RANK", 8) == 0 || strcmp(var, "RLX_RENDEZVOUS") == 0 ||
      strcmp(var, "RLX_LOCAL_RANK") == 0) {
    if (strcmp(var, "RLX_RANK") != 0)
      setenv("RLX_RANK", "0", 1);
    setenv("RLX_SIZE", "2", 1);
    if (strcmp(var, "RLX_RENDEZVOUS") != 0)
      setenv("RLX_RENDEZVOUS", "127.0.0.1:1", 1);
    setenv("RLX_JOB_KEY", "k", 1);
  }
  ck_assert_int_eq(rlx__config_load(&c), RLX_ERR_ARG);
  ck_assert_msg(strstr(rlx_errmsg(), named) != NULL, "%s=%s: message \"%s\" does not name %s",
                var, val, rlx_errmsg(), named);
  clear();
}

START_TEST(bad_values) {
  expect_bad("RLX_TIMEOUT", "abc", "RLX_TIMEOUT");
  expect_bad("RLX_TIMEOUT", "-1", "RLX_TIMEOUT");
  expect_bad("RLX_TIMEOUT", "5s", "RLX_TIMEOUT");
  expect_bad("RLX_TIMEOUT", "nan", "RLX_TIMEOUT");
  expect_bad("RLX_INIT_TIMEOUT", "-1", "RLX_INIT_TIMEOUT");
  expect_bad("RLX_TRANSPORT", "udp", "RLX_TRANSPORT");
  expect_bad("RLX_TRANSPORT", "", "RLX_TRANSPORT");
  expect_bad("RLX_ALLREDUCE_ALGO", "", "RLX_ALLREDUCE_ALGO"); /* (names: test_algos, bad_env.sh) */
  expect_bad("RLX_LOG", "loud", "RLX_LOG");
  expect_bad("RLX_SPIN_US", "-5", "RLX_SPIN_US");
  expect_bad("RLX_SPIN_US", "1e3", "RLX_SPIN_US");
  expect_bad("RLX_PROGRESS_BIND", "core", "RLX_PROGRESS_BIND");
  expect_bad("RLX_WIRE", "f8", "RLX_WIRE");
  expect_bad("RLX_CMA", "maybe", "RLX_CMA");
  expect_bad("RLX_SHM_COLL", "on", "RLX_SHM_COLL");
  expect_bad("RLX_BCAST_ALGO", "a-name-longer-than-any-algorithm", "RLX_BCAST_ALGO");
  expect_bad("RLX_IFACE", "", "RLX_IFACE");
  expect_bad("RLX_RANK", "x", "RLX_RANK");
  expect_bad("RLX_RANK", "2", "RLX_RANK"); /* size is 2 */
  expect_bad("RLX_SIZE", "0", "RLX_SIZE");
  expect_bad("RLX_RENDEZVOUS", "nohostport", "RLX_RENDEZVOUS");
  expect_bad("RLX_RENDEZVOUS", "host:99999", "RLX_RENDEZVOUS");
  expect_bad("RLX_LOCAL_RANK", "-1", "RLX_LOCAL_RANK");
  expect_bad("RLX_TRACE", "", "RLX_TRACE");
  expect_bad("RLX_FLIGHT", "-1", "RLX_FLIGHT");
  expect_bad("RLX_FLIGHT", "many", "RLX_FLIGHT");
  expect_bad("RLX_FLIGHT_DUMP", "always", "RLX_FLIGHT_DUMP");
  expect_bad("RLX_STATS", "yes please", "RLX_STATS");
}
END_TEST

START_TEST(launch_needs_key) {
  struct rlx__config c;
  clear();
  setenv("RLX_RANK", "0", 1);
  setenv("RLX_SIZE", "2", 1);
  setenv("RLX_RENDEZVOUS", "127.0.0.1:29500", 1);
  ck_assert_int_eq(rlx__config_load(&c), RLX_ERR_ARG);
  ck_assert(strstr(rlx_errmsg(), "RLX_JOB_KEY") != NULL);
  unsetenv("RLX_SIZE");
  ck_assert_int_eq(rlx__config_load(&c), RLX_ERR_ARG);
  ck_assert(strstr(rlx_errmsg(), "RLX_SIZE") != NULL);
  clear();
}
END_TEST

int main(void) {
  Suite *s = suite_create("config");
  TCase *tc = tcase_create("env");
  tcase_set_timeout(tc, 60); /* Check's default 4 s is too short under the sanitizers */
  tcase_add_test(tc, defaults);
  tcase_add_test(tc, good_values);
  tcase_add_test(tc, observe_values);
  tcase_add_test(tc, bad_values);
  tcase_add_test(tc, launch_needs_key);
  suite_add_tcase(s, tc);
  return rlx_run_suite(s);
}
