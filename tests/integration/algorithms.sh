#!/bin/sh
# Every algorithm, forced through RLX_*_ALGO, gives the reference result on
# rank counts that are and are not powers of two: the point-to-point ones
# with the shared segment off (so rlx_reduce, rlx_reduce_scatter and
# rlx_barrier run theirs too), the shared-memory ones forced on sizes the
# automatic choice gives to others (2 ranks, 100003 elements). One dtype of each
# element size: the algorithms split and exchange bytes by element size and
# never look at the type (the reductions themselves are test_reduce's and
# the collectives tests').
. "$(dirname "$0")/lib.sh"
for n in 3 5 8; do
  for v in "RLX_ALLREDUCE_ALGO=rd RLX_BCAST_ALGO=scatter-allgather RLX_ALLGATHER_ALGO=rd" \
           "RLX_ALLREDUCE_ALGO=rabenseifner RLX_BCAST_ALGO=binomial RLX_ALLGATHER_ALGO=ring" \
           "RLX_ALLREDUCE_ALGO=ring RLX_BCAST_ALGO=scatter-allgather RLX_ALLGATHER_ALGO=bruck"; do
    env RLX_SHM_COLL=off $v timeout 200 "$RLXRUN" -n $n --timeout 180 "$CHECK" --random \
      --counts 0,1,7,1023,100003 \
      --dtypes int8,bfloat16,float32,float64 \
      >"$TMP/out" 2>&1 || { tail -20 "$TMP/out"; fail "n=$n $v"; }
    grep -q "0 failures in all" "$TMP/out" || fail "n=$n $v: no summary"
    echo "n=$n $v: ok"
  done
done
for n in 2 3; do
  RLX_ALLREDUCE_ALGO=shm RLX_BCAST_ALGO=shm RLX_ALLGATHER_ALGO=shm timeout 200 "$RLXRUN" -n $n \
    --timeout 180 "$CHECK" --random --counts 0,1,7,1023,100003 --dtypes int8,bfloat16,float32,float64 \
    >"$TMP/out" 2>&1 || { tail -20 "$TMP/out"; fail "n=$n shm forced"; }
  grep -q "0 failures in all" "$TMP/out" || fail "n=$n shm forced: no summary"
  echo "n=$n RLX_*_ALGO=shm: ok"
done
# The chosen algorithm is visible at RLX_LOG=info.
RLX_LOG=info timeout 60 "$RLXRUN" -n 2 "$CHECK" --counts 1,100003 >"$TMP/out" 2>&1 || fail "info run"
grep -q "rlx_allreduce: .* bytes on 2 ranks: shm" "$TMP/out" || fail "no algorithm report"
grep -q "rlx_allreduce: .* bytes on 2 ranks: ring" "$TMP/out" || fail "no ring report"
RLX_SHM_COLL=off RLX_LOG=info timeout 60 "$RLXRUN" -n 2 "$CHECK" --counts 1 >"$TMP/out" 2>&1 ||
  fail "info run, RLX_SHM_COLL=off"
grep -q "rlx_allreduce: .* bytes on 2 ranks: recursive-doubling" "$TMP/out" || fail "no rd report"
RLX_ALLREDUCE_ALGO=nonsense timeout 20 "$HELLO" >"$TMP/out" 2>&1 && fail "a bad algorithm name was accepted"
grep -q RLX_ALLREDUCE_ALGO "$TMP/out" || fail "bad algorithm name not named"
