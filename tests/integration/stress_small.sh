#!/bin/sh
# 2,000 back-to-back 8-byte allreduces, each result checked, on 2 and 4
# ranks (4 oversubscribes this 2-core machine: the yielding path).
. "$(dirname "$0")/lib.sh"
for n in 2 4; do
  for tr in shm unix tcp; do
    start=$(date +%s)
    RLX_TRANSPORT=$tr timeout 120 "$RLXRUN" -n $n --timeout 100 "$CHECK" --stress 2000 >"$TMP/out" 2>&1 ||
      { tail -20 "$TMP/out"; fail "stress n=$n $tr"; }
    grep -q "0 failures in all" "$TMP/out" || fail "stress n=$n $tr: no summary"
    echo "n=$n $tr: $(grep 'coll_check:' "$TMP/out" | sed 's/^\[0\] //') ($(( $(date +%s) - start )) s)"
  done
done
