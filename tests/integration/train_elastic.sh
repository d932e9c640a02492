#!/bin/sh
# train --elastic under rlxrun --enable-recovery: a rank killed mid-training
# (another rank, then the leader itself) leaves the survivors to shrink,
# take the new leader's parameters, re-shard and keep learning; the leader
# says what happened, and the job exits 0.
. "$(dirname "$0")/lib.sh"
for victim in other leader; do
  : >"$TMP/out" # (now: the job's own redirection may come after the first grep below)
  timeout 120 "$RLXRUN" -n 4 --enable-recovery "$TRAIN" --elastic --backend cpu --epochs 3 \
    --train-limit 16384 >"$TMP/out" 2>&1 &
  job=$!
  i=0
  until grep -q "epoch 1/3" "$TMP/out"; do
    i=$((i + 1))
    [ $i -lt 300 ] || { kill $job; cat "$TMP/out"; fail "no first epoch"; }
    sleep 0.1
  done
  leader=$(sed -n 's/.*rank(s), leader rank \([0-9]*\) (pid.*/\1/p' "$TMP/out")
  v=$leader
  [ $victim = other ] && v=$(( (leader + 2) % 4 ))
  pid=$(sed -n "s/^\[$v\] train: rank $v (pid \([0-9]*\)) computes.*/\1/p" "$TMP/out")
  [ -n "$pid" ] || { cat "$TMP/out"; fail "no pid for rank $v"; }
  kill -9 "$pid"
  wait $job
  rc=$?
  cat "$TMP/out" | grep -v "computes on"
  [ $rc = 0 ] || fail "$victim: rlxrun exited $rc"
  grep -q "train: step [0-9]*: 1 rank(s) lost (.*lost rank $v during rlx_i\?allreduce.*); going on with 3" "$TMP/out" ||
    fail "$victim: the leader did not say what happened"
  acc=$(sed -n 's/.*epoch 3\/3: .* test \([0-9.]*\)%.*/\1/p' "$TMP/out")
  [ -n "$acc" ] || fail "$victim: no third epoch"
  python3 -c "import sys; sys.exit(0 if float('$acc') > 75 else 1)" || fail "$victim: test accuracy $acc%"
  echo "killed the $victim (rank $v): 3 ranks went on to $acc%"
done
echo "train --elastic: ok"
