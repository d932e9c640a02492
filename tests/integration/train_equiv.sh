#!/bin/sh
# Data parallelism is exact: 1 rank at batch 4B and 4 ranks at batch B take
# the same 20 steps to the same parameters (within 1e-5 relative), on the
# C backend and on OpenCL (PoCL here).
. "$(dirname "$0")/lib.sh"
common="--steps 20 --train-limit 4096 --hidden 64,32 --lr 0.05 --seed 5"
for be in cpu opencl; do
  timeout 120 "$TRAIN" --backend $be --batch 32 $common --dump-params "$TMP/one.$be" \
    >"$TMP/one.out" 2>&1 || { cat "$TMP/one.out"; fail "$be: 1 rank"; }
  timeout 180 "$RLXRUN" -n 4 --timeout 170 "$TRAIN" --backend $be --batch 8 $common \
    --dump-params "$TMP/four.$be" >"$TMP/four.out" 2>&1 || { cat "$TMP/four.out"; fail "$be: 4 ranks"; }
  grep -q "computes on $be" "$TMP/one.out" || { cat "$TMP/one.out"; fail "$be not in use (1 rank)"; }
  [ "$(grep -c "computes on $be" "$TMP/four.out")" = 4 ] || { cat "$TMP/four.out"; fail "$be not in use (4 ranks)"; }
  grep -q "stopped after step 20 (--steps)" "$TMP/four.out" || { cat "$TMP/four.out"; fail "$be: 20 steps"; }
  printf '%s: ' $be
  params_rel "$TMP/four.$be" "$TMP/one.$be" 1e-5 || fail "parameters differ: four.$be one.$be"
done
# And the two backends agree with each other.
printf 'cpu vs opencl: '
params_rel "$TMP/one.cpu" "$TMP/one.opencl" 1e-4 || fail "cpu and opencl disagree"
echo "train equivalence: ok"
