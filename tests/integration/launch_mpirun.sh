#!/bin/sh
# Open MPI's mpirun serves PMIx: a program linked with rlxcoll takes its
# rank, size and peers from it, with no rlxrun.
. "$(dirname "$0")/lib.sh"
MPIRUN=$(command -v mpirun.openmpi) || fail "mpirun.openmpi missing: apt-get install openmpi-bin"
timeout 120 "$MPIRUN" --allow-run-as-root --oversubscribe -n 4 -x RLX_LOG=info "$HELLO" \
  >"$TMP/out" 2>&1 || { cat "$TMP/out"; fail "mpirun -n 4 hello"; }
cat "$TMP/out"
for r in 0 1 2 3; do
  grep -q "hello from rank $r of 4 .*sum of ranks = 6$" "$TMP/out" || fail "rank $r's result"
done
[ "$(grep -c "launched by PMIx: namespace" "$TMP/out")" = 4 ] || fail "not bootstrapped through PMIx"
# train through mpirun for a few steps, on C.
timeout 120 "$MPIRUN" --allow-run-as-root --oversubscribe -n 2 "$TRAIN" --backend cpu --steps 5 \
  --train-limit 2048 --hidden 32 >"$TMP/out" 2>&1 || { cat "$TMP/out"; fail "mpirun train"; }
grep -q "train: 2 rank(s), leader rank" "$TMP/out" || { cat "$TMP/out"; fail "train under mpirun"; }
echo "mpirun (PMIx) launch: ok"
