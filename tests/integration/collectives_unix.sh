#!/bin/sh
# Every collective (allreduce, reduce, allgather, reduce_scatter, bcast,
# iallreduce, ibcast, barrier; every dtype x op; counts 0,1,7,1023,1M+3),
# n = 1-5 and 8 (the 1M+3 count for every dtype x op up to 4 ranks, 256K+3
# above: coll_flags in lib.sh), over Unix sockets: results equal the reference and
# are bitwise equal on every rank. Also checks the library chose Unix sockets.
# COLL_RANKS and COLL_FLAGS narrow it (the ThreadSanitizer run in CI).
. "$(dirname "$0")/lib.sh"
for n in ${COLL_RANKS:-1 2 3 4 5 8}; do
  start=$(date +%s)
  RLX_LOG=debug timeout 300 "$RLXRUN" -n $n --timeout 280 "$CHECK" $(coll_flags $n) \
    >"$TMP/out" 2>"$TMP/err" || { cat "$TMP/out" "$TMP/err" | tail -30; fail "n=$n over unix"; }
  grep -q "0 failures in all" "$TMP/out" || fail "n=$n: no summary"
  if [ $n -gt 1 ]; then
    grep -q "over unix" "$TMP/err" || fail "n=$n: no connection over unix"
    ! grep -q "over tcp" "$TMP/err" || fail "n=$n: a local peer used tcp"
  fi
  echo "n=$n unix: $(grep 'coll_check:' "$TMP/out" | sed 's/^\[0\] //') ($(( $(date +%s) - start )) s)"
done
# Payloads by reference (process_vm_readv) forced on with ranks that
# outnumber the cores here, and forced off.
for v in ${COLL_CMA-"RLX_CMA=on 4" "RLX_CMA=off 2"}; do
  set -- $v
  env "$1" RLX_LOG=info timeout 300 "$RLXRUN" -n "$2" --timeout 280 "$CHECK" --random --big-all \
    >"$TMP/out" 2>"$TMP/err" || { tail -30 "$TMP/err"; fail "$v"; }
  grep -q "0 failures in all" "$TMP/out" || fail "$v: no summary"
  refs=$(sed -n 's/.*copied by reference: \([0-9]*\).*/\1/p' "$TMP/err" | sort -n | tail -1)
  if [ "$1" = RLX_CMA=on ]; then
    [ "${refs:-0}" -gt 0 ] || fail "RLX_CMA=on copied nothing by reference"
  else
    [ "${refs:-0}" -eq 0 ] || fail "RLX_CMA=off still copied by reference"
  fi
  echo "$v ranks: ok, $refs payloads by reference on the busiest rank"
done
