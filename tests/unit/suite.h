/* Run one Check suite and turn its outcome into an exit status. */
#ifndef RLX_TEST_SUITE_H
#define RLX_TEST_SUITE_H

#include <check.h>

static inline int rlx_run_suite(Suite *s) {
  SRunner *sr = srunner_create(s);
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? 1 : 0;
}

#endif
