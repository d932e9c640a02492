#!/bin/sh
# Every collective (allreduce, reduce, allgather, reduce_scatter, bcast,
# iallreduce, ibcast, barrier; every dtype x op; counts 0,1,7,1023,1M+3;
# in place and not) on n = 1-8 ranks of this host, which talk through
# shared memory by default: results equal the reference and are bitwise
# equal on every rank. The 1M+3 count goes with every dtype x op on 3
# ranks, with sum for every dtype and every op for float32 elsewhere, and
# is 256K+3 above 4 ranks (coll_flags in lib.sh). Also checks that the
# library chose shared memory, and payloads by reference forced on and off.
# COLL_RANKS and COLL_FLAGS narrow it (the sanitizer phases in CI).
. "$(dirname "$0")/lib.sh"
for n in ${COLL_RANKS:-1 2 3 4 5 6 7 8}; do
  start=$(date +%s)
  RLX_LOG=debug timeout 300 "$RLXRUN" -n $n --timeout 280 "$CHECK" $(coll_flags $n) \
    >"$TMP/out" 2>"$TMP/err" || { cat "$TMP/out" "$TMP/err" | tail -30; fail "n=$n over shm"; }
  grep -q "0 failures in all" "$TMP/out" || fail "n=$n: no summary"
  if [ $n -gt 1 ]; then # (connections are made when first needed: not every pair has one)
    grep -q "connected to rank [0-9]* over shm" "$TMP/err" || fail "n=$n: no connection over shm"
    ! grep "connected to rank [0-9]* over" "$TMP/err" | grep -qv "over shm$" ||
      { grep "connected to" "$TMP/err"; fail "n=$n: a local peer did not use shm"; }
  fi
  echo "n=$n shm: $(grep 'coll_check:' "$TMP/out" | sed 's/^\[0\] //') ($(( $(date +%s) - start )) s)"
done
# Payloads by reference (process_vm_readv) forced on with ranks that
# outnumber the cores here, and forced off.
for v in ${COLL_CMA-"RLX_CMA=on 4" "RLX_CMA=off 2"}; do
  set -- $v
  env "$1" RLX_LOG=info timeout 300 "$RLXRUN" -n "$2" --timeout 280 "$CHECK" --random \
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
