#!/bin/sh
# train --prefetch 1 (the default): each step's next batch is read and
# moved to the device (rlx_model_prefetch) while the step runs. Over two
# epochs (their ends drop what was moved ahead: evaluation reuses the
# buffer) the final parameters are bit for bit those of --prefetch 0, on
# C and OpenCL (PoCL here), 1 and 2 ranks, with the one-rank fused step,
# the one-allreduce step, gradient buckets and 16-bit gradients; and with
# --steps ending mid-epoch.
. "$(dirname "$0")/lib.sh"
for be in cpu opencl; do
  for n in 1 2; do
    for extra in "" "--bucket-kb 16" "--grad-precision bf16" "--steps 21"; do
      for pf in 0 1; do
        timeout 300 "$RLXRUN" -n $n --timeout 290 "$TRAIN" --backend $be --epochs 2 --train-limit 2048 \
          --batch 48 --prefetch $pf $extra --dump-params "$TMP/p$pf" >"$TMP/out" 2>&1 ||
          { cat "$TMP/out"; fail "$be n=$n $extra --prefetch $pf"; }
        if [ $be = opencl ] && ! grep -q "computes on opencl" "$TMP/out"; then
          echo "skipped OpenCL: no device"; break 3
        fi
      done
      cmp -s "$TMP/p0" "$TMP/p1" || fail "$be n=$n $extra: parameters differ with --prefetch 1"
      echo "$be n=$n ${extra:-(plain)}: the same parameters"
    done
  done
done
"$TRAIN" --prefetch 2 >"$TMP/out" 2>&1 && fail "--prefetch 2 accepted"
grep -q "train: --prefetch '2': want 0 or 1" "$TMP/out" || { cat "$TMP/out"; fail "bad --prefetch not named"; }
echo "train prefetch: ok"
