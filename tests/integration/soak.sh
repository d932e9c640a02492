#!/bin/sh
# 100,000 allreduces of mixed sizes on 4 ranks: every result right, resident
# memory flat (no leak on the hot path); then valgrind --leak-check=full on
# a short job finds no definite leak.
. "$(dirname "$0")/lib.sh"
SOAK="$top_builddir/tests/integration/soak"
n=${SOAK_N:-100000}
grep -q "fsanitize=address" "$top_builddir/Makefile" && n=20000 # ASan is several times slower
start=$(date +%s)
timeout 600 "$RLXRUN" -n 4 --timeout 580 "$SOAK" $n >"$TMP/out" 2>&1 || { cat "$TMP/out"; fail "soak"; }
cat "$TMP/out"
[ "$(grep -c 'soak: rank [0-9]: .*: PASS' "$TMP/out")" = 4 ] || fail "soak: not every rank passed"
echo "soak: $n allreduces on 4 ranks in $(( $(date +%s) - start )) s"
if grep -q "fsanitize=address" "$top_builddir/Makefile"; then
  echo "valgrind part skipped under ASan"
  exit 0
fi
command -v valgrind >/dev/null || fail "valgrind missing: apt-get install valgrind"
bin="$top_builddir/tests/integration/.libs/soak"
[ -x "$bin" ] || bin="$SOAK"
LD_LIBRARY_PATH="$top_builddir/lib/.libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" timeout 300 \
  "$RLXRUN" -n 2 --timeout 280 valgrind --quiet --leak-check=full --errors-for-leak-kinds=definite \
  --error-exitcode=3 "$bin" 300 >"$TMP/out" 2>&1 || { cat "$TMP/out"; fail "valgrind found errors or leaks"; }
grep -q "definitely lost: [1-9]" "$TMP/out" && { cat "$TMP/out"; fail "valgrind: definite leak"; }
[ "$(grep -c 'soak: rank [0-9]: .*: PASS' "$TMP/out")" = 2 ] || { cat "$TMP/out"; fail "valgrind run"; }
echo "valgrind --leak-check=full: clean"
