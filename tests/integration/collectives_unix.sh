#!/bin/sh
# Every collective (allreduce, reduce, allgather, reduce_scatter, bcast,
# iallreduce, ibcast, barrier; every dtype x op; counts 0,1,7,1023,1M+3),
# n = 1..8, over Unix sockets: results equal the reference and are bitwise
# equal on every rank. Also checks the library chose Unix sockets.
. "$(dirname "$0")/lib.sh"
for n in 1 2 3 4 5 6 7 8; do
  start=$(date +%s)
  RLX_LOG=debug timeout 300 "$RLXRUN" -n $n --timeout 280 "$CHECK" --random --big-all \
    >"$TMP/out" 2>"$TMP/err" || { cat "$TMP/out" "$TMP/err" | tail -30; fail "n=$n over unix"; }
  grep -q "0 failures in all" "$TMP/out" || fail "n=$n: no summary"
  if [ $n -gt 1 ]; then
    grep -q "over unix" "$TMP/err" || fail "n=$n: no connection over unix"
    ! grep -q "over tcp" "$TMP/err" || fail "n=$n: a local peer used tcp"
  fi
  echo "n=$n unix: $(grep 'coll_check:' "$TMP/out" | sed 's/^\[0\] //') ($(( $(date +%s) - start )) s)"
done
