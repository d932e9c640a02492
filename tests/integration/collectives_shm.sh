#!/bin/sh
# Every collective (allreduce, reduce, allgather, reduce_scatter, bcast,
# iallreduce, ibcast, barrier; every dtype x op; counts 0,1,7,1023,1M+3;
# in place and not) on n = 1-8 ranks of this host, which talk through
# shared memory by default: results equal the reference and are bitwise
# equal on every rank. The 1M+3 count goes with every dtype x op on 3
# ranks, with sum for every dtype and every op for float32 elsewhere, and
# is 256K+3 above 4 ranks (coll_flags in lib.sh). Checks that the blocking
# collectives ran in the communicator's shared segment (the "shm"
# algorithms) and the nonblocking ones point to point over the
# shared-memory rings; then the point-to-point algorithms for every
# collective (RLX_SHM_COLL=off, COLL_RANKS_P2P), and payloads by reference
# forced on and off; and 13 ranks (COLL_WIDE, empty: none). COLL_RANKS
# and COLL_FLAGS narrow it (the sanitizer phases in CI).
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
    grep -q "communicator 0: $n ranks, collectives in shared memory" "$TMP/err" ||
      fail "n=$n: no shared segment for the world"
    for call in rlx_allreduce rlx_reduce rlx_bcast rlx_allgather rlx_allgatherv rlx_reduce_scatter rlx_barrier \
      rlx_gatherv rlx_scatterv \
      rlx_alltoallv; do
      grep -q "$call: .* bytes on $n ranks: shm" "$TMP/err" || fail "n=$n: $call not in shared memory"
    done
    grep -q "rlx_iallreduce: .* bytes on $n ranks: recursive-doubling" "$TMP/err" ||
      fail "n=$n: rlx_iallreduce did not run point to point"
  fi
  echo "n=$n shm: $(grep 'coll_check:' "$TMP/out" | sed 's/^\[0\] //') ($(( $(date +%s) - start )) s)"
done
# Scatter's blocks of 128 KiB - 1 MiB in the segment (as scatterv runs:
# each receiver reads its block from the root's buffer), by reference and
# streamed.
for n in 2 3; do
  for cma in on off; do
    RLX_CMA=$cma timeout 120 "$RLXRUN" -n $n "$CHECK" --counts 40000,65537,262147 --dtypes float32 --exchanges \
      >"$TMP/out" 2>&1 || { tail -30 "$TMP/out"; fail "n=$n big scatter (RLX_CMA=$cma)"; }
    grep -q "0 failures in all" "$TMP/out" || { tail -30 "$TMP/out"; fail "n=$n big blocks: no summary"; }
  done
done
echo "scatter's big blocks in the segment, by reference and streamed: right (n = 2, 3)"
# Half precision in the segment: combined in float32, rounded once.
for n in 3 4; do
  timeout 60 "$RLXRUN" -n $n "$CHECK" --half-exact >"$TMP/out" 2>&1 || { cat "$TMP/out"; fail "n=$n half sums"; }
  grep -q "0 failures in all" "$TMP/out" || { cat "$TMP/out"; fail "n=$n half sums: no summary"; }
done
echo "half-precision sums in the segment: exact where the half type holds them (n = 3, 4)"
# 13 ranks (COLL_WIDE): an uneven call's header (8 + 8 n bytes) no
# longer fits the cell's 96 inline bytes, and small calls' headers and
# blocks run on into the spill area (shm_stream.c's post_cell, get_cell).
for n in ${COLL_WIDE-13}; do
  RLX_LOG=info timeout 120 "$RLXRUN" -n $n --timeout 100 "$CHECK" --counts 1,7,40 \
    --dtypes float64,int8 >"$TMP/out" 2>"$TMP/err" || { tail -30 "$TMP/err"; fail "n=$n small calls"; }
  grep -q "0 failures in all" "$TMP/out" || fail "n=$n small calls: no summary"
  grep -q "rlx_scatterv: .* bytes on $n ranks: shm" "$TMP/err" ||
    fail "n=$n: rlx_scatterv not in shared memory"
  echo "n=$n, headers past the cell's inline bytes: $(grep 'coll_check:' "$TMP/out" | sed 's/^\[0\] //')"
done
# A caller polling a nonblocking call with rlx_test sees its data at once
# (coll_check.c, check_polling, says what went wrong before).
for n in 2 3; do
  timeout 60 "$RLXRUN" -n $n "$CHECK" --polling >"$TMP/out" 2>&1 || { cat "$TMP/out"; fail "n=$n polling"; }
  grep -q "0 failures in all" "$TMP/out" || { cat "$TMP/out"; fail "n=$n polling: no summary"; }
done
echo "rlx_test sees a nonblocking call's data as it comes (n = 2, 3)"
# Point to point for every collective, over the shared-memory rings.
for n in ${COLL_RANKS_P2P-2 5}; do
  RLX_SHM_COLL=off RLX_LOG=info timeout 300 "$RLXRUN" -n $n --timeout 280 "$CHECK" \
    $(coll_flags $n) >"$TMP/out" 2>"$TMP/err" || { tail -30 "$TMP/err"; fail "n=$n point to point"; }
  grep -q "0 failures in all" "$TMP/out" || fail "n=$n point to point: no summary"
  ! grep -q "bytes on $n ranks: shm" "$TMP/err" || fail "RLX_SHM_COLL=off still used the segment"
  echo "n=$n point to point: $(grep 'coll_check:' "$TMP/out" | sed 's/^\[0\] //')"
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
