#!/bin/sh
# A device that compiles, reports success and returns zeros (injected in a
# test build: RLX_FAULT_COMPUTE=zeros) is caught by validation; every rank
# says why, falls back to C, and the run still learns.
. "$(dirname "$0")/lib.sh"
grep -q "define RLX_FAULT_INJECTION 1" "$top_builddir/config.h" ||
  { echo "skipped: build without --enable-fault-injection"; exit 77; }
RLX_FAULT_COMPUTE=zeros timeout 180 "$RLXRUN" -n 2 --timeout 170 "$TRAIN" --backend opencl \
  --epochs 1 --train-limit 4096 --batch 32 >"$TMP/out" 2>&1 || { cat "$TMP/out"; fail "run failed"; }
cat "$TMP/out"
n=$(grep -c "computes on cpu; fallback: opencl: .*: validation failed: probe loss 0 is not finite and near ln(10) = 2.303 — using cpu" "$TMP/out")
[ "$n" = 2 ] || fail "$n of 2 ranks reported the fallback and its reason"
acc=$(sed -n 's/.*epoch 1\/1: .* test \([0-9.]*\)%.*/\1/p' "$TMP/out")
python3 -c "import sys; sys.exit(0 if float('$acc') > 60 else 1)" || fail "did not learn on C: test $acc%"
# Without the fault the same device is trusted.
timeout 180 "$RLXRUN" -n 2 --timeout 170 "$TRAIN" --backend opencl --steps 2 --train-limit 4096 \
  >"$TMP/out" 2>&1 || { cat "$TMP/out"; fail "clean run failed"; }
[ "$(grep -c "computes on opencl: " "$TMP/out")" = 2 ] || { cat "$TMP/out"; fail "device not trusted"; }
echo "train fallback: ok"
