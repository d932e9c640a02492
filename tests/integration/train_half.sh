#!/bin/sh
# train --grad-precision f16|bf16: 16-bit gradients, rounded where they are
# computed (on the device with OpenCL), allreduced as RLX_FLOAT16 or
# RLX_BFLOAT16 (half the bytes on the wire) and widened where applied.
# Fashion-MNIST on 4 ranks still reaches 85% in 3 epochs in both formats
# (C backend), and the OpenCL path (PoCL here) trains on 2 ranks.
. "$(dirname "$0")/lib.sh"
for gp in f16 bf16; do
  timeout 600 "$RLXRUN" -n 4 "$TRAIN" --backend cpu --epochs 3 --grad-precision $gp >"$TMP/out" 2>&1 ||
    { cat "$TMP/out"; fail "$gp: train failed"; }
  acc=$(sed -n 's/.*epoch 3\/3: .* test \([0-9.]*\)%.*/\1/p' "$TMP/out")
  python3 -c "import sys; sys.exit(0 if float('${acc:-0}') >= 85 else 1)" || { cat "$TMP/out"; fail "$gp: test accuracy ${acc:-none}"; }
  echo "--grad-precision $gp, 4 ranks, C backend: $acc% after 3 epochs"
done
timeout 600 "$RLXRUN" -n 2 "$TRAIN" --backend opencl --grad-precision bf16 --epochs 1 --train-limit 4096 \
  --hidden 64 >"$TMP/out" 2>&1 || { cat "$TMP/out"; fail "opencl: train failed"; }
grep -q "computes on opencl" "$TMP/out" || { echo "skipped the OpenCL part: no OpenCL device"; exit 0; }
acc=$(sed -n 's/.*epoch 1\/1: .* test \([0-9.]*\)%.*/\1/p' "$TMP/out")
python3 -c "import sys; sys.exit(0 if float('${acc:-0}') >= 60 else 1)" || { cat "$TMP/out"; fail "opencl bf16: test accuracy ${acc:-none}"; }
echo "--grad-precision bf16 on OpenCL (rounded on the device), 2 ranks, 4096 examples: $acc%"
echo "train half gradients: ok"
