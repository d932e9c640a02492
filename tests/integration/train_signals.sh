#!/bin/sh
# SIGHUP to the leader with --lr-file: every rank switches learning rate at
# the same step. SIGINT (through rlxrun): every rank stops after the same
# step and the job exits 0.
. "$(dirname "$0")/lib.sh"
echo 0.05 >"$TMP/lr"
timeout 120 "$RLXRUN" -n 3 "$TRAIN" --backend cpu --epochs 100000 --train-limit 3072 \
  --hidden 32 --lr-file "$TMP/lr" >"$TMP/out" 2>&1 &
job=$!
# wait_for PATTERN: until the output has it (30 s at most).
wait_for() {
  i=0
  until grep -q "$1" "$TMP/out"; do
    i=$((i + 1))
    [ $i -lt 300 ] || { cat "$TMP/out"; kill -KILL $job; fail "never saw '$1'"; }
    sleep 0.1
  done
}
wait_for "epoch 2/"
pid=$(sed -n 's/.*leader rank [0-9]* (pid \([0-9]*\)).*/\1/p' "$TMP/out")
[ -n "$pid" ] || { cat "$TMP/out"; fail "no leader pid"; }
echo 0.01 >"$TMP/lr"
kill -HUP "$pid"
wait_for "learning rate 0.05 -> 0.01 (from $TMP/lr); every rank switches now"
wait_for "rank 2 uses learning rate 0.01"
sleep 0.5
steps=$(sed -n 's/.*uses learning rate 0.01 from step \([0-9]*\) on/\1/p' "$TMP/out" | sort -u)
[ "$(grep -c 'uses learning rate 0.01' "$TMP/out")" = 3 ] || { cat "$TMP/out"; fail "not every rank switched"; }
[ "$(echo "$steps" | wc -l)" = 1 ] || { cat "$TMP/out"; fail "ranks switched at different steps: $steps"; }

# A file without a number: the leader says so and keeps the rate.
echo banana >"$TMP/lr"
kill -HUP "$pid"
wait_for "holds no learning rate from 0 to 1000; keeping 0.01"

kill -INT $job
wait $job
rc=$?
cat "$TMP/out" | tail -8
[ $rc = 0 ] || fail "interrupted job exited $rc, want 0"
[ "$(grep -c 'stopped after step' "$TMP/out")" -ge 3 ] || fail "not every rank reported its stop"
n=$(sed -n 's/.*rank [0-9] stopped after step \([0-9]*\)$/\1/p' "$TMP/out" | sort -u | wc -l)
[ "$n" = 1 ] || { cat "$TMP/out"; fail "ranks stopped after different steps"; }
grep -q "interrupted; every rank stopped after this step" "$TMP/out" || fail "leader did not say why"
echo "train signals: ok"
