#!/bin/sh
# Strangers on a rank's TCP port (no key, random bytes, a wrong key) are
# dropped and logged, and the job still finishes with correct results.
. "$(dirname "$0")/lib.sh"
: >"$TMP/err"
: >"$TMP/strangers"
RLX_TRANSPORT=tcp RLX_LOG=info timeout 120 "$RLXRUN" -n 3 --timeout 100 "$CHECK" --pause 4 \
  --counts 1,1023,100000 >"$TMP/out" 2>"$TMP/err" &
job=$!
# Wait (bounded) for every rank to announce its listener.
i=0
while [ "$(grep -c 'listening on tcp' "$TMP/err")" -lt 3 ]; do
  i=$((i + 1))
  [ $i -lt 100 ] || { kill $job; fail "ranks did not start"; }
  sleep 0.1
done
for addr in $(sed -n 's/.*listening on tcp \([0-9.:]*\) .*/\1/p' "$TMP/err"); do
  for mode in silent random wrongkey; do
    timeout 10 "$STRANGER" "$addr" $mode >>"$TMP/strangers" 2>&1 &
  done
done
wait $job || { cat "$TMP/out" "$TMP/err" | tail -30; fail "the job failed with strangers about"; }
wait
cat "$TMP/strangers"
grep -q "0 failures in all" "$TMP/out" || fail "no correct summary"
dropped=$(grep -c "dropped connection from" "$TMP/err")
echo "ranks logged $dropped dropped strangers"
[ "$dropped" -ge 6 ] || fail "expected the random and wrong-key strangers to be logged (6), got $dropped"
[ "$(grep -c 'random: dropped' "$TMP/strangers")" -eq 3 ] || fail "random-bytes strangers not dropped"
[ "$(grep -c 'wrongkey: dropped' "$TMP/strangers")" -eq 3 ] || fail "wrong-key strangers not dropped"
grep -q "verified?!" "$TMP/strangers" && fail "a rank proved a key the stranger does not hold"
exit 0
