#!/bin/sh
# train --bucket-kb: the gradient's buckets (whole layers, the last first)
# are allreduced while backward runs and applied as they arrive, the step's
# control riding in the first. After 20 steps the parameters equal the
# serial step's (within 1e-5 relative) on 1 and 4 ranks, C and OpenCL
# (PoCL here), with a bucket per layer and with odd-sized buckets of two
# layers; a rank killed while buckets fly fails every survivor, which
# shrink and go on (--elastic), within 2 s.
. "$(dirname "$0")/lib.sh"
for be in cpu opencl; do
  for n in 1 4; do
    for case in "256 1" "100,30 13"; do
      set -- $case
      run() {
        timeout 300 "$RLXRUN" -n $n "$TRAIN" --backend $be --hidden $1 --steps 20 --train-limit 8192 \
          --bucket-kb $2 --dump-params "$TMP/p.$2" >"$TMP/out" 2>&1 || { cat "$TMP/out"; fail "$be n=$n: train"; }
      }
      run $1 0
      if [ $be = opencl ] && ! grep -q "computes on opencl" "$TMP/out"; then
        echo "skipped OpenCL: no device"; break 2
      fi
      run $1 $2
      d=$(params_close "$TMP/p.0" "$TMP/p.$2") || fail "$be n=$n hidden $1: buckets and the serial step differ by $d"
      echo "$be, $n rank(s), hidden $1, --bucket-kb $2: parameters within $d of the serial step's"
    done
  done
done
timeout 120 "$RLXRUN" -n 4 --enable-recovery "$TRAIN" --backend cpu --elastic --bucket-kb 1 --epochs 2 \
  --hidden 512 >"$TMP/out" 2>&1 &
job=$!
wait_for "$TMP/out" "computes on" 4
sleep 1
pid=$(sed -n 's/^\[2\] train: rank 2 (pid \([0-9]*\)) computes.*/\1/p' "$TMP/out")
t0=$(date +%s.%N)
kill -9 "$pid"
until grep -q "1 rank(s) lost" "$TMP/out"; do
  python3 -c "import sys; sys.exit(0 if $(date +%s.%N) - $t0 < 20 else 1)" || { cat "$TMP/out"; fail "kill: nobody noticed"; }
  sleep 0.05
done
t=$(python3 -c "print('%.2f' % ($(date +%s.%N) - $t0))")
wait $job || { cat "$TMP/out"; fail "kill: the job exited $?"; }
python3 -c "import sys; sys.exit(0 if $t <= 2.0 * float('${RLX_TEST_TIME_SCALE:-1}') else 1)" || fail "kill: the survivors took $t s"
echo "a rank killed while buckets fly: the survivors went on with 3 after $t s ($(grep -o 'lost rank 2 during [a-z_]*' "$TMP/out" | head -1))"
echo "train buckets: ok"
