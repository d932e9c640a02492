#!/bin/sh
# RLX_COMPUTE_PROFILE=1: the OpenCL backend times every command of a step
# on the device and prints where the step went when the model is freed:
# one rank's fused step (forward, backward and update on the device) and
# two ranks' steps (each layer's gradient downloaded on the transfer
# queue, the averaged gradient written back). A bad value is refused with
# its reason. With train --prefetch (its default) the batch's upload
# leaves the step: the step waits for a batch moved ahead instead. (PoCL
# here; skipped without an OpenCL device.) With the data on the device,
# the step gathers its batch there and reads no loss. RLX_GEMM chooses the
# products' kernels. Ranks sharing the device also get their shared
# steps' host side (RLX_COMPUTE_PROFILE=host: that alone).
. "$(dirname "$0")/lib.sh"
row() { # row FILE NAME: the row's calls per step (rlxrun tags lines [rank] when n > 1)
  sed -n "s/^\(\[[0-9]*\] \)\{0,1\}  $2  *\([0-9.]*\) .*/\2/p" "$1" | head -n 1
}
for n in 1 2; do
  RLX_COMPUTE_PROFILE=1 timeout 120 "$RLXRUN" -n $n --timeout 110 "$TRAIN" --backend opencl \
    --hidden 64 --steps 6 --train-limit 4096 --prefetch 0 --data-on-device 0 >"$TMP/out" 2>&1 ||
    { cat "$TMP/out"; fail "n=$n: train"; }
  grep -q "computes on opencl" "$TMP/out" || { echo "skipped: no OpenCL device"; exit 77; }
  [ "$(grep -c "compute profile (opencl: .*), [0-9]* steps" "$TMP/out")" = $n ] ||
    { cat "$TMP/out"; fail "n=$n: not every rank printed its profile"; }
  head="$(grep -m1 "compute profile" "$TMP/out")"
  steps=$(echo "$head" | sed -n 's/.*), \([0-9]*\) steps.*/\1/p')
  span=$(echo "$head" | sed -n 's/.* end \([0-9.]*\)$/\1/p')
  [ "$steps" -ge 6 ] || { cat "$TMP/out"; fail "n=$n: $steps steps profiled, not 6 or more"; }
  python3 -c "import sys; sys.exit(0 if float('$span') > 0 else 1)" || fail "n=$n: span $span"
  for r in "write batch" "forward, layer 0" "forward, layer 1" "softmax_xent" \
           "weight gradient, layer 0" "backward, layer 1" "relu_back, layer 1" "sgd"; do
    c=$(row "$TMP/out" "$r")
    [ "$c" = "1.00" ] || { cat "$TMP/out"; fail "n=$n: '$r' $c calls per step, not 1.00"; }
  done
  # two ranks download each layer's gradient and upload the average every step
  c=$(row "$TMP/out" "\[transfer\] read gradient, layer 0")
  w=$(row "$TMP/out" "write gradient")
  if [ $n = 2 ]; then
    [ "$c" = "1.00" ] && [ "$w" = "1.00" ] || { cat "$TMP/out"; fail "n=2: downloads $c, uploads $w per step"; }
  else # one rank: only validation's probe
    python3 -c "import sys; sys.exit(0 if float('${c:-0}') < 0.5 else 1)" ||
      { cat "$TMP/out"; fail "n=1: the fused step downloaded its gradient ($c per step)"; }
  fi
done
RLX_COMPUTE_PROFILE=1 timeout 120 "$TRAIN" --backend opencl --hidden 64 --steps 12 --train-limit 4096 \
  --data-on-device 0 >"$TMP/out" 2>&1 || { cat "$TMP/out"; fail "train --prefetch 1"; }
p=$(row "$TMP/out" "prefetched batch")
w=$(row "$TMP/out" "write batch")
u=$(row "$TMP/out" "\[transfer\] prefetch batch")
python3 -c "import sys; sys.exit(0 if min(float('${p:-0}'), float('${u:-0}')) >= 0.75 and float('${w:-0}') <= 0.25 else 1)" ||
  { cat "$TMP/out"; fail "--prefetch 1: $p steps per step on a batch moved ahead ($u uploads on the transfer queue), $w uploaded in the step"; }
# --data-on-device (auto: here, PoCL has room): each step's batch gathered
# on the device, nothing uploaded in the step, the loss not read back
# (summed on the device); only validation's probe steps write and read.
RLX_COMPUTE_PROFILE=1 timeout 120 "$TRAIN" --backend opencl --hidden 64 --steps 12 --train-limit 4096 \
  >"$TMP/out" 2>&1 || { cat "$TMP/out"; fail "train (data on the device)"; }
g=$(row "$TMP/out" "gather_batch")
t=$(row "$TMP/out" "batch_stats")
w=$(row "$TMP/out" "write batch")
l=$(row "$TMP/out" "read loss")
python3 -c "import sys; sys.exit(0 if min(float('${g:-0}'), float('${t:-0}')) >= 0.75 and max(float('${w:-0}'), float('${l:-0}')) <= 0.25 else 1)" ||
  { cat "$TMP/out"; fail "data on the device: $g gathers, $t sums of the loss (into the totals), $w uploads, $l loss reads per step"; }
# RLX_GEMM: the products by CLBlast (the forward's bias and ReLU then a
# kernel of their own) or by gemm_tiles (folded in); the same parameters
# within 1e-5 after 20 steps; a bad value is named.
for g in clblast tiles; do
  RLX_GEMM=$g RLX_COMPUTE_PROFILE=1 timeout 120 "$TRAIN" --backend opencl --hidden 64 --steps 20 \
    --train-limit 4096 --dump-params "$TMP/p.$g" >"$TMP/out.$g" 2>&1 || { cat "$TMP/out.$g"; fail "RLX_GEMM=$g"; }
done
[ -n "$(row "$TMP/out.clblast" "bias_act, layer 0")" ] && [ -z "$(row "$TMP/out.tiles" "bias_act, layer 0")" ] ||
  { cat "$TMP/out.clblast" "$TMP/out.tiles"; fail "RLX_GEMM did not choose the products' kernels"; }
d=$(params_close "$TMP/p.clblast" "$TMP/p.tiles") || fail "RLX_GEMM clblast and tiles differ by $d"
RLX_GEMM=fast timeout 60 "$TRAIN" --backend opencl --steps 1 --train-limit 1024 >"$TMP/out" 2>&1
grep -q 'RLX_GEMM="fast": expected auto, tiles or clblast' "$TMP/out" || { cat "$TMP/out"; fail "bad RLX_GEMM not named"; }
for v in 8x4x16 4x4x16x12 3x4x16x16 4x4x16x16/0 4x4x16x16/; do
  RLX_GEMM_SHAPE=$v timeout 60 "$TRAIN" --backend opencl --steps 1 --train-limit 1024 >"$TMP/out" 2>&1
  grep -q "RLX_GEMM_SHAPE=\"$v\": expected RMxRNxWYxCHUNK" "$TMP/out" || { cat "$TMP/out"; fail "bad RLX_GEMM_SHAPE $v not named"; }
done
# Two ranks sharing the device (one context, rlx_model_step_shared): the
# host's side of their steps, with the device's tables (1) or alone
# (host: no events); the served rank times its requests.
for v in 1 host; do
  RLX_DEVICE_SHARE=1 RLX_COMPUTE_PROFILE=$v timeout 120 "$RLXRUN" -n 2 --timeout 110 "$TRAIN" \
    --backend opencl --hidden 32 --steps 9 --train-limit 4096 >"$TMP/out" 2>&1 ||
    { cat "$TMP/out"; fail "RLX_COMPUTE_PROFILE=$v, shared: train"; }
  s=$(sed -n 's/.*rlx: shared steps: \([0-9]*\); the first member waited [0-9.]* us .* arrived last: member 0 \([0-9]*\) member 1 \([0-9]*\)$/\1 \2 \3/p' "$TMP/out")
  r=$(sed -n 's/.*rlx: opencl: .*: \([0-9]*\) shared steps through pid [0-9]*: [0-9.]* us (mean; max [0-9.]*) from a request to its reply, [0-9.]* us here .*/\1/p' "$TMP/out")
  t=$(grep -c "compute profile (opencl" "$TMP/out")
  [ $v = 1 ] && want=2 || want=0
  echo "$s" | awk -v r="$r" '{ exit !($1 >= 9 && $2 + $3 == $1 && r + 1 >= $1) }' && [ "$t" = $want ] ||
    { cat "$TMP/out"; fail "RLX_COMPUTE_PROFILE=$v, shared: steps, who arrived last, requests '$s' '$r'; $t device tables, want $want"; }
done
RLX_COMPUTE_PROFILE=yes RLX_DEVICE=opencl timeout 60 "$TRAIN" --backend opencl --steps 1 \
  --train-limit 1024 >"$TMP/out" 2>&1
grep -q 'RLX_COMPUTE_PROFILE="yes": expected 0, 1 or host' "$TMP/out" || { cat "$TMP/out"; fail "bad value not named"; }
echo "compute profile: ok"
