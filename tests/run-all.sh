#!/bin/sh
# Run every test through `make check` in the current build directory:
# one line per test as it ends (PASS/FAIL/SKIP and its seconds), then the
# unit tests' Check summaries, the logs of the tests that failed (all logs
# stay in tests/*/*.log), and the totals ("N passed, N failed"). Exits
# non-zero if any test failed. TESTS="a b" runs only those (CI's sanitizer
# phase).
set -u
make -j2 all >/dev/null || exit 1
make -j2 check TESTS= >/dev/null || exit 1 # build the test programs in parallel
rm -f tests/unit/*.log tests/unit/*.trs tests/integration/*.log tests/integration/*.trs \
  tests/*.log tests/*.trs
status_file=$(mktemp)
start=$(date +%s)
# make check runs the tests one after another and names each as it ends.
{
  if [ -n "${TESTS:-}" ]; then make check TESTS="$TESTS" 2>&1; else make check 2>&1; fi
  echo "make-status: $?"
} | {
  last=$start
  while IFS= read -r line; do
    case $line in
    PASS:* | FAIL:* | SKIP:* | ERROR:* | XFAIL:* | XPASS:*)
      now=$(date +%s)
      printf '%-5s %5s s  %s\n' "${line%%:*}" $((now - last)) "${line#*: }"
      last=$now
      ;;
    make-status:*) echo "${line#make-status: }" >"$status_file" ;;
    esac
  done
}
status=$(cat "$status_file")
rm -f "$status_file"
grep -h "^[0-9]*%: Checks:" tests/unit/*.log 2>/dev/null | sed 's/^/check: /'
for t in tests/unit/*.trs tests/integration/*.trs tests/*.trs; do
  [ -f "$t" ] || continue
  grep -q '^:test-result: \(FAIL\|ERROR\|XPASS\)' "$t" || continue
  echo "===== ${t%.trs}.log"
  cat "${t%.trs}.log"
done
pass=$(cat tests/unit/*.trs tests/integration/*.trs tests/*.trs 2>/dev/null | grep -c '^:test-result: PASS')
skip=$(cat tests/unit/*.trs tests/integration/*.trs tests/*.trs 2>/dev/null | grep -c '^:test-result: SKIP')
failed=$(cat tests/unit/*.trs tests/integration/*.trs tests/*.trs 2>/dev/null | grep -c '^:test-result: \(FAIL\|ERROR\|XPASS\)')
echo "test time: $(($(date +%s) - start)) s; every test's log: tests/unit/*.log, tests/integration/*.log"
echo "$pass passed, $failed failed, $skip skipped"
[ "${status:-1}" -eq 0 ] && [ "$failed" -eq 0 ]
