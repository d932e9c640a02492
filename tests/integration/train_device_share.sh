#!/bin/sh
# Ranks sharing one OpenCL device (RLX_DEVICE_SHARE=1 on PoCL's device):
# the first rank to take it serves it, the others compute in its process
# through their socket, and train averages their gradients there
# (rlx_model_step_shared) instead of on the host. It ends with the same
# parameters, bit for bit, and the same loss and accuracy lines as with a
# context per rank (RLX_DEVICE_SHARE=0) at 2 ranks, with the data on the
# device (the default) and on the host, and through the host's paths with
# 16-bit gradients and buckets; at 3 ranks (a sum divided by 3 on the
# device, not on the host) within 1e-6. With gemm_tiles' products
# (RLX_GEMM=tiles) two ranks' every shared step is joint, one pass over
# both batches (RLX_COMPUTE_PROFILE=host counts them), and still bit for
# bit a context per rank. n-1 ranks say they compute through
# the server's pid. A bad RLX_DEVICE_SHARE, or
# RLX_DEVICE_SHARE=1 outside rlxrun (no RLX_RUNDIR), is named in the
# fallback's reason. Killing the serving rank ends the job with an
# error, not a hang.
. "$(dirname "$0")/lib.sh"
export TMPDIR="$TMP"
common="--backend opencl --epochs 2 --train-limit 1536 --batch 32 --hidden 24"
run() { # NAME RANKS SHARE ARGS...: train, its output in $TMP/NAME.out, parameters in $TMP/NAME
  _name=$1 _n=$2 _share=$3
  shift 3
  RLX_DEVICE_SHARE=$_share timeout 300 "$RLXRUN" -n "$_n" --timeout 290 "$TRAIN" "$@" \
    --dump-params "$TMP/$_name" >"$TMP/$_name.out" 2>&1 || { cat "$TMP/$_name.out"; fail "$_name: train $*"; }
}
lines() { # the epochs' loss and accuracy
  sed -n 's/.*\(epoch [0-9]*\/[0-9]*: loss [0-9.]*, train [0-9.]*%, test loss [0-9.]*, test [0-9.]*%\).*/\1/p' "$1"
}
run probe 1 0 $common --steps 1
grep -q "computes on opencl" "$TMP/probe.out" || { cat "$TMP/probe.out"; echo "skipped: no OpenCL device"; exit 77; }
for n in 2 3; do
  [ $n = 2 ] && extras="plain tiles --data-on-device=0 --grad-precision=bf16 --bucket-kb=1" || extras=plain
  for extra in $extras; do
    extra=$(echo "$extra" | sed 's/^plain$//; s/=/ /')
    tiles=
    [ "$extra" = tiles ] && tiles=1 extra= && export RLX_GEMM=tiles RLX_COMPUTE_PROFILE=host
    run own $n 0 $common $extra
    run shared $n 1 $common $extra
    case "$extra" in
    *precision* | *bucket*) on_device=0 ;;
    *) on_device=1 ;;
    esac
    [ "$(grep -c "gradients averaged on the device" "$TMP/shared.out")" = $on_device ] ||
      { cat "$TMP/shared.out"; fail "n=$n $extra: averaged on the device: want $on_device"; }
    grep -q "averaged on the device" "$TMP/own.out" && fail "n=$n: a context each, averaged on a device"
    if [ $n = 3 ]; then
      params_rel "$TMP/own" "$TMP/shared" 1e-6 || fail "n=$n $extra: parameters differ with the device shared"
    else
      cmp -s "$TMP/own" "$TMP/shared" || fail "n=$n $extra: parameters differ with the device shared"
      lines "$TMP/own.out" >"$TMP/own.lines"
      lines "$TMP/shared.out" >"$TMP/shared.lines"
      [ -s "$TMP/shared.lines" ] && cmp -s "$TMP/own.lines" "$TMP/shared.lines" ||
        { cat "$TMP/own.out" "$TMP/shared.out"; fail "n=$n $extra: the epochs' numbers differ"; }
    fi
    if [ -n "$tiles" ]; then
      unset RLX_GEMM RLX_COMPUTE_PROFILE
      grep -q "shared steps: 48;.*; 48 joint" "$TMP/shared.out" ||
        { cat "$TMP/shared.out"; fail "n=$n RLX_GEMM=tiles: not every shared step joint"; }
      extra="RLX_GEMM=tiles, joint"
    fi
    through=$(grep -c "computes on opencl: .*, through pid" "$TMP/shared.out")
    [ "$through" = $((n - 1)) ] || { cat "$TMP/shared.out"; fail "n=$n: $through ranks computed through another, want $((n - 1))"; }
    grep -q "through pid" "$TMP/own.out" && fail "n=$n: RLX_DEVICE_SHARE=0 shared"
    echo "n=$n ${extra:-(plain)}: the same parameters and epoch numbers, $through rank(s) through another"
  done
done

# (as for every bad OpenCL setting: train falls back to C and says why)
RLX_DEVICE_SHARE=sometimes timeout 120 "$RLXRUN" -n 1 "$TRAIN" $common --steps 2 >"$TMP/out" 2>&1
grep -q 'computes on cpu; fallback: opencl: RLX_DEVICE_SHARE="sometimes": expected auto, 0 or 1' "$TMP/out" ||
  { cat "$TMP/out"; fail "bad RLX_DEVICE_SHARE not named"; }
RLX_DEVICE_SHARE=1 RLX_DEVICE=opencl timeout 120 "$TRAIN" $common --steps 2 >"$TMP/out" 2>&1
grep -q "RLX_DEVICE_SHARE=1, but RLX_RUNDIR is not set" "$TMP/out" || { cat "$TMP/out"; fail "no RLX_RUNDIR: not said"; }

# a rank killed, the serving one or the other: the job ends with an
# error naming what was lost, in bounded time (the one left is waiting in
# the device's average, or in a request to a process that is gone)
for victim in server client; do
  RLX_DEVICE_SHARE=1 timeout 200 "$RLXRUN" -n 2 --timeout 150 "$TRAIN" --backend opencl --epochs 50 \
    --train-limit 4096 --batch 32 --hidden 24 >"$TMP/job" 2>&1 &
  job=$!
  wait_for "$TMP/job" "epoch 1/50" 1 120
  server=$(sed -n 's/.*train: rank [0-9]* (pid \([0-9]*\)) computes on opencl: [^,]*$/\1/p' "$TMP/job" | head -1)
  client=$(sed -n 's/.*train: rank [0-9]* (pid \([0-9]*\)) computes on opencl: .*, through pid.*/\1/p' "$TMP/job" | head -1)
  [ -n "$server" ] && [ -n "$client" ] || { cat "$TMP/job"; fail "no pids"; }
  eval pid=\$$victim
  kill -9 "$pid"
  wait $job
  rc=$?
  [ $rc != 0 ] && [ $rc != 124 ] || { cat "$TMP/job"; fail "the job exited $rc with its $victim ($pid) killed"; }
  grep -q -E "\(pid $pid\) is gone|peer lost|rank [0-9]* .*lost" "$TMP/job" ||
    { cat "$TMP/job"; fail "$victim killed: the survivor did not say what it lost"; }
  echo "the $victim killed: the job ended ($rc), naming it"
done
echo "train device share: ok"
