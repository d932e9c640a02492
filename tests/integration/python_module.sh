#!/bin/sh
# The rlxcoll Python module through numpy (tests/python/check_numpy.py):
# every dtype x op x count against numpy's reference on 1, 2 and 4 ranks,
# the results bitwise equal on every rank, the other collectives, bad
# arguments; a mismatched count raises Mismatch on every rank (allreduce,
# allgatherv; in gatherv and scatterv on the rank that reads the block,
# the others raising it or finding their next call revoked); a killed
# rank raises PeerLost on every survivor within 2 s; the minority side of
# a partition stops in shrink(); Ctrl-C (SIGINT) at a
# rank stuck in a barrier raises KeyboardInterrupt there and fails the
# others' barrier, naming it.
. "$(dirname "$0")/lib.sh"
py_stage numpy
for n in 1 2 4; do
  timeout 300 "$RLXRUN" -n $n "$PYTHON" "$PYTESTS/check_numpy.py" collectives >"$TMP/out" 2>&1 ||
    { cat "$TMP/out"; fail "collectives on $n rank(s)"; }
  [ "$(grep -c 'check_numpy: rank [0-9]*: PASS' "$TMP/out")" = $n ] || { cat "$TMP/out"; fail "collectives on $n"; }
  echo "n=$n: $(grep -m1 -o '[0-9]* allreduce cases' "$TMP/out") right, and every other collective"
done
for n in 1 3; do
  timeout 120 "$RLXRUN" -n $n "$PYTHON" "$PYTESTS/check_numpy.py" messages >"$TMP/out" 2>&1 ||
    { cat "$TMP/out"; fail "messages on $n rank(s)"; }
  [ "$(grep -c 'check_numpy: rank [0-9]*: PASS' "$TMP/out")" = $n ] || { cat "$TMP/out"; fail "messages on $n"; }
  echo "n=$n: send, recv, isend, irecv (any source) of every dtype; Truncated; bad arguments"
done
timeout 60 "$RLXRUN" -n 3 "$PYTHON" "$PYTESTS/check_numpy.py" mismatch >"$TMP/out" 2>&1
[ "$(grep -c 'check_numpy: rank [0-9]*: PASS' "$TMP/out")" = 3 ] || { cat "$TMP/out"; fail "mismatch"; }
echo "a mismatched count: rlxcoll.Mismatch on all 3 ranks (allreduce, allgatherv; gatherv and scatterv: the reader, the others then)"
timeout 60 "$RLXRUN" -n 3 --enable-recovery "$PYTHON" "$PYTESTS/check_numpy.py" kill >"$TMP/out" 2>&1 ||
  { cat "$TMP/out"; fail "kill: the job failed"; }
[ "$(grep -c 'check_numpy: rank [02]: PASS' "$TMP/out")" = 2 ] || { cat "$TMP/out"; fail "kill"; }
echo "a killed rank: $(grep -m1 -o 'PeerLost after [0-9.]* s' "$TMP/out") on every survivor, then shrink()"
# A partition's minority side: ranks 1 and 2 of 3 stop (silent, as behind
# a cut link); rank 0's shrink() raises PeerLost: this side stops.
QUORUM_DONE="$TMP/quorum.done" timeout 90 "$RLXRUN" -n 3 --enable-recovery "$PYTHON" \
  "$PYTESTS/check_numpy.py" quorum >"$TMP/out" 2>&1
grep -q "check_numpy: rank 0: PASS" "$TMP/out" || { cat "$TMP/out"; fail "quorum"; }
echo "quorum: $(grep -m1 -o 'shrink() stopped after .*' "$TMP/out")"
timeout 60 "$RLXRUN" -n 3 "$PYTHON" "$PYTESTS/check_numpy.py" revoke >"$TMP/out" 2>&1 ||
  { cat "$TMP/out"; fail "revoke"; }
[ "$(grep -c 'check_numpy: rank [0-9]*: PASS' "$TMP/out")" = 3 ] || { cat "$TMP/out"; fail "revoke"; }
echo "Comm.revoke() at rank 1: $(grep -m1 -o 'rank 0: Revoked after .*' "$TMP/out"); then shrink()"
# Ctrl-C at rank 0 in a barrier, on a warm communicator and on a new one
# (whose first call sets up its segment): the others fail naming it, on
# the new one within 2 s while rank 0 lives on (not when it exits).
for mode in interrupt coldinterrupt; do
  timeout 60 "$RLXRUN" -n 3 "$PYTHON" "$PYTESTS/check_numpy.py" $mode >"$TMP/out" 2>&1 &
  job=$!
  wait_for "$TMP/out" "waits"
  sleep 0.3
  kill -INT "$(sed -n 's/.*rank 0 (pid \([0-9]*\)) waits.*/\1/p' "$TMP/out")"
  wait $job
  [ "$(grep -c 'check_numpy: rank [0-9]*: PASS' "$TMP/out")" = 3 ] || { cat "$TMP/out"; fail "$mode"; }
  grep -q "rank 0: KeyboardInterrupt after" "$TMP/out" || fail "$mode: no KeyboardInterrupt"
  echo "$mode: Ctrl-C at rank 0: KeyboardInterrupt there; the others: $(grep -m1 -o 'rank 2: [A-Za-z]* after .*was interrupted' "$TMP/out")"
done
echo "python module: ok"
