#!/bin/sh
# Split (colors, keys, RLX_UNDEFINED), dup, two threads on two
# communicators at once, a 16 MiB iallreduce completing while the caller sleeps,
# and RLX_WIRE=f16/bf16 error bounds.
. "$(dirname "$0")/lib.sh"
COMM="$top_builddir/tests/integration/comm_check"
for n in 1 2 3 5; do
  timeout 120 "$RLXRUN" -n $n --timeout 100 "$COMM" >"$TMP/out" 2>&1 || { cat "$TMP/out"; fail "n=$n"; }
  grep -q "0 failures in all" "$TMP/out" || fail "n=$n: no summary"
  grep "comm_check:" "$TMP/out"
done
RLX_TRANSPORT=tcp timeout 120 "$RLXRUN" -n 3 "$COMM" >"$TMP/out" 2>&1 || { cat "$TMP/out"; fail "tcp"; }
for w in f16 bf16; do
  for n in 3; do
    RLX_WIRE=$w timeout 120 "$RLXRUN" -n $n "$COMM" --wire >"$TMP/out" 2>&1 || { cat "$TMP/out"; fail "wire $w n=$n"; }
    grep "RLX_WIRE" "$TMP/out"
  done
done
