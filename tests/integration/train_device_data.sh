#!/bin/sh
# train --data-on-device (rlx_model_data_attach/_order/_batch): the
# training set kept on the OpenCL device (PoCL here), each batch gathered
# there, the loss summed there and read at the epoch's end. Bit for bit
# the parameters of the host path (--data-on-device 0) for the same seed,
# at 1 and 2 ranks, with the one-rank step that never waits, the
# one-allreduce step, gradient buckets, and --steps ending mid-epoch; the
# C backend (host path) agrees within 1e-5; the same loss and accuracy
# lines. A set too big for the device (RLX_DEVICE_DATA_MAX) takes the
# host path under auto and says so, and stops --data-on-device 1 with the
# reason; so does the C backend. --elastic: a job of 2 grows to 3 and
# loses it, every rank on the device's data, and finishes.
. "$(dirname "$0")/lib.sh"
export TMPDIR="$TMP"
common="--backend opencl --epochs 2 --train-limit 2048 --batch 48"
run() { # NAME RANKS ARGS...: train, its output in $TMP/NAME.out, parameters in $TMP/NAME
  _name=$1 _n=$2
  shift 2
  timeout 300 "$RLXRUN" -n "$_n" --timeout 290 "$TRAIN" "$@" --dump-params "$TMP/$_name" \
    >"$TMP/$_name.out" 2>&1 || { cat "$TMP/$_name.out"; fail "$_name: train $*"; }
}
run probe 1 $common --steps 1
grep -q "computes on opencl" "$TMP/probe.out" || { cat "$TMP/probe.out"; echo "skipped: no OpenCL device"; exit 77; }
for n in 1 2; do
  [ $n = 1 ] && extras="plain --steps=21" || extras="plain --bucket-kb=16"
  for extra in $extras; do
    extra=$(echo "$extra" | sed 's/^plain$//; s/=/ /')
    run host $n $common $extra --data-on-device 0
    run dev $n $common $extra --data-on-device 1
    cmp -s "$TMP/host" "$TMP/dev" || fail "n=$n $extra: parameters differ with the data on the device"
    # the same epoch lines (loss and accuracy; the speed and time apart)
    for f in host dev; do
      sed -n 's/.*\(epoch [0-9]*\/[0-9]*: loss [0-9.]*, train [0-9.]*%, test loss [0-9.]*, test [0-9.]*%\).*/\1/p' \
        "$TMP/$f.out" >"$TMP/$f.lines"
    done
    [ -s "$TMP/dev.lines" ] && cmp -s "$TMP/host.lines" "$TMP/dev.lines" ||
      { cat "$TMP/host.out" "$TMP/dev.out"; fail "n=$n $extra: the epochs' numbers differ"; }
    echo "n=$n ${extra:-(plain)}: the same parameters and epoch numbers"
  done
done
run dev 2 $common --steps 20 --hidden 64,32 --lr 0.05 --seed 5 --data-on-device 1
run cpu 2 --backend cpu --epochs 2 --train-limit 2048 --batch 48 --steps 20 --hidden 64,32 --lr 0.05 --seed 5
printf 'cpu (host data) vs opencl (device data): '
params_rel "$TMP/cpu" "$TMP/dev" 1e-5 || fail "parameters differ: cpu dev"

# too big for the device: auto says so and keeps it on the host; 1 stops
RLX_DEVICE_DATA_MAX=100000 run small 1 $common --steps 5 --data-on-device auto
grep -q "keeps the training set on the host (each batch built and uploaded): .*the training set takes .* MB on the device, more than the 0.1 MB it may have there" \
  "$TMP/small.out" || { cat "$TMP/small.out"; fail "auto did not say why the set stays on the host"; }
run dev 1 $common --steps 5 --data-on-device 1
cmp -s "$TMP/small" "$TMP/dev" || fail "the host path's parameters differ"
RLX_DEVICE_DATA_MAX=100000 timeout 120 "$TRAIN" $common --steps 5 --data-on-device 1 >"$TMP/out" 2>&1 &&
  fail "--data-on-device 1 trained without room"
grep -q "train: rank 0: --data-on-device 1: out of memory: .*more than the 0.1 MB" "$TMP/out" ||
  { cat "$TMP/out"; fail "--data-on-device 1 without room: no reason"; }
timeout 120 "$TRAIN" --backend cpu --steps 5 --train-limit 2048 --data-on-device 1 >"$TMP/out" 2>&1 &&
  fail "--data-on-device 1 on the C backend"
grep -q "cpu computes from host memory" "$TMP/out" || { cat "$TMP/out"; fail "the C backend: no reason"; }
RLX_DEVICE_DATA_MAX=lots timeout 120 "$TRAIN" $common --steps 5 >"$TMP/out" 2>&1 &&
  fail "RLX_DEVICE_DATA_MAX=lots accepted"
grep -q 'RLX_DEVICE_DATA_MAX="lots": expected a number of bytes' "$TMP/out" || { cat "$TMP/out"; fail "bad RLX_DEVICE_DATA_MAX not named"; }
"$TRAIN" --data-on-device 2 >"$TMP/out" 2>&1 && fail "--data-on-device 2 accepted"
grep -q "train: --data-on-device '2': want auto, 0 or 1" "$TMP/out" || { cat "$TMP/out"; fail "bad value not named"; }

# --elastic on the device's data: 2 ranks, a joiner (3), one killed (2)
ARGS="--elastic --backend opencl --data-on-device 1 --epochs 8 --train-limit 8192 --batch 32"
timeout 300 "$RLXRUN" -n 2 --enable-recovery --max-np 3 "$TRAIN" $ARGS >"$TMP/job" 2>&1 &
job=$!
wait_for "$TMP/job" "epoch 1/8" 1 120
joinfile=$(join_file "$TMP/job") || exit 1
timeout 300 "$RLXRUN" --join "$joinfile" -n 1 --enable-recovery "$TRAIN" $ARGS >"$TMP/j1" 2>&1 &
wait_for "$TMP/job" "1 rank(s) joined; going on with 3" 1 120
victim=$(sed -n 's/.*train: a joining rank (pid \([0-9]*\)) computes.*/\1/p' "$TMP/j1" | head -1)
[ -n "$victim" ] || { cat "$TMP/j1"; fail "no joiner pid"; }
kill -9 "$victim"
wait_for "$TMP/job" "1 rank(s) lost (.*); going on with 2" 1 120
wait $job || { cat "$TMP/job" "$TMP/j1"; fail "the elastic job exited $?"; }
grep "epoch 8/8" "$TMP/job" || { cat "$TMP/job"; fail "no last epoch"; }
grep -q "keeps the training set on the host" "$TMP/job" "$TMP/j1" && fail "a rank kept the set on the host"
echo "train device data: ok"
