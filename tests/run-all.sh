#!/bin/sh
# Run every test through `make check` in the current build directory, then
# print each test's log (Check's "100%: Checks: N" lines live there) and a
# one-line summary. Exits non-zero if any test failed. TESTS="a b" runs
# only those (CI's sanitizer phase).
set -u
make -j2 all >/dev/null || exit 1
make -j2 check TESTS= >/dev/null || exit 1 # build the test programs in parallel
start=$(date +%s)
if [ -n "${TESTS:-}" ]; then
  rm -f tests/unit/*.log tests/unit/*.trs tests/integration/*.log tests/integration/*.trs tests/*.log tests/*.trs
  make check TESTS="$TESTS" >/dev/null 2>&1
else
  make check >/dev/null 2>&1
fi
status=$?
for f in tests/unit/*.log tests/integration/*.log tests/*.log; do
  [ -f "$f" ] || continue
  echo "===== $f"
  cat "$f"
done
pass=$(cat tests/unit/*.trs tests/integration/*.trs tests/*.trs 2>/dev/null | grep -c '^:test-result: PASS')
failed=$(cat tests/unit/*.trs tests/integration/*.trs tests/*.trs 2>/dev/null | grep -c '^:test-result: \(FAIL\|ERROR\|XPASS\)')
echo "test time: $(( $(date +%s) - start )) s"
echo "$pass passed, $failed failed"
[ "$status" -eq 0 ] && [ "$failed" -eq 0 ]
