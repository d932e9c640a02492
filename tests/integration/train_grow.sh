#!/bin/sh
# train --elastic grows: a job of 2 (rlxrun --max-np 4) takes 2 joiners
# (rlxrun --join) after its first epoch, loses one of them (kill -9) and
# shrinks to 3, takes one more joiner and goes on with 4; meanwhile a
# joiner with a wrong key is refused and the job trains on. Every example
# is still seen once per epoch (the epoch's rest is re-cut over the new
# ranks), the joiners get the leader's parameters, momentum and position,
# and the run reaches >= 85% on Fashion-MNIST, within 1 point of a 4-rank
# run of the same seed.
. "$(dirname "$0")/lib.sh"
export TMPDIR="$TMP"
ARGS="--elastic --backend cpu --epochs 5 --hidden 512"

timeout 300 "$RLXRUN" -n 2 --enable-recovery --max-np 4 "$TRAIN" $ARGS >"$TMP/job" 2>&1 &
job=$!
wait_for "$TMP/job" "epoch 1/5" 1 60
joinfile=$(join_file "$TMP/job") || exit 1
timeout 300 "$RLXRUN" --join "$joinfile" -n 2 --enable-recovery "$TRAIN" $ARGS >"$TMP/j1" 2>&1 &
wait_for "$TMP/job" "going on with 4" 1 60
# a stranger with the wrong key, while the job trains
RLX_JOIN=1 RLX_RENDEZVOUS=$(head -1 "$joinfile") RLX_JOB_KEY=wrong RLX_INIT_TIMEOUT=5 \
  timeout 30 "$TRAIN" $ARGS >"$TMP/bad" 2>&1 && fail "a joiner with a wrong key trained"
grep -q "rlx_init: authentication failed: joining rank: .*wrong job key" "$TMP/bad" ||
  { cat "$TMP/bad"; fail "the wrong key was not named"; }
wait_for "$TMP/j1" "computes on" 1 60
victim=$(sed -n 's/.*train: a joining rank (pid \([0-9]*\)) computes.*/\1/p' "$TMP/j1" | head -1)
[ -n "$victim" ] || { cat "$TMP/j1"; fail "no joiner pid"; }
kill -9 "$victim"
wait_for "$TMP/job" "1 rank(s) lost (.*); going on with 3" 1 60
timeout 300 "$RLXRUN" --join "$joinfile" -n 1 "$TRAIN" $ARGS >"$TMP/j2" 2>&1 &
wait_for "$TMP/job" "1 rank(s) joined; going on with 4" 1 60
wait $job || { cat "$TMP/job" "$TMP/j1" "$TMP/j2"; fail "the job exited $?"; }
sleep 0.5
cat "$TMP/job" | grep -v "computes on"
grep -q "rendezvous: dropped connection from 127.0.0.1: closed in the handshake" "$TMP/job" ||
  fail "the job's rlxrun did not log the stranger"
acc=$(sed -n 's/.*epoch 5\/5: .* test \([0-9.]*\)%.*/\1/p' "$TMP/job")
[ -n "$acc" ] || fail "no fifth epoch"
timeout 300 "$RLXRUN" -n 4 "$TRAIN" --backend cpu --epochs 5 --hidden 512 >"$TMP/fixed" 2>&1 ||
  { cat "$TMP/fixed"; fail "the fixed-size run failed"; }
ref=$(sed -n 's/.*epoch 5\/5: .* test \([0-9.]*\)%.*/\1/p' "$TMP/fixed")
python3 -c "import sys; a, r = float('$acc'), float('$ref'); sys.exit(0 if a >= 85 and abs(a - r) <= 1.0 else 1)" ||
  fail "test accuracy $acc% (a fixed run of 4: $ref%)"
echo "2 -> 4 -> 3 -> 4 ranks: $acc% (a fixed run of 4 ranks, same seed: $ref%)"
echo "train grows: ok"
