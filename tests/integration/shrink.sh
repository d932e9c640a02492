#!/bin/sh
# A rank killed mid-job (the elected leader, or another): with
# rlxrun --enable-recovery the survivors see RLX_ERR_PEER_LOST, shrink to a
# communicator of n-1 with one re-elected leader, and compute right on it;
# without the flag rlxrun stops the job, as mpirun does.
. "$(dirname "$0")/lib.sh"
SHRINK="$top_builddir/tests/integration/shrink_check"
for n in 2 3 4 5; do
  for victim in leader 1 $((n - 1)); do
    timeout 60 "$RLXRUN" -n $n --enable-recovery "$SHRINK" $victim >"$TMP/out" 2>&1 ||
      { cat "$TMP/out"; fail "n=$n victim=$victim: rlxrun --enable-recovery did not exit 0"; }
    [ "$(grep -c 'shrink_check: rank [0-9]*: PASS' "$TMP/out")" = $((n - 1)) ] ||
      { cat "$TMP/out"; fail "n=$n victim=$victim: not every survivor passed"; }
    grep -q "go on (--enable-recovery)" "$TMP/out" || fail "n=$n: rlxrun did not say it goes on"
    grep -q "rlxrun: 1 rank(s) lost; the other $((n - 1)) finished" "$TMP/out" || fail "n=$n: no summary"
    # the survivors' rlx_finalize waited for the late one (0.5 s)
    awk '/rlx_finalize waited/ { if ($(NF - 1) + 0 < 0.4) bad = 1; k++ } END { exit bad || k != '$((n - 2))' }' \
      "$TMP/out" || { cat "$TMP/out"; fail "n=$n victim=$victim: rlx_finalize did not wait for the survivors"; }
  done
  echo "n=$n: $(grep -m1 'shrink in' "$TMP/out" | sed 's/.*shrink_check: //')"
done
# On a communicator whose ranks are not the world's, a loss names both.
for shm in auto off; do
  RLX_SHM_COLL=$shm timeout 60 "$RLXRUN" -n 4 --enable-recovery "$SHRINK" sub >"$TMP/out" 2>&1 ||
    { cat "$TMP/out"; fail "sub (RLX_SHM_COLL=$shm): not every survivor passed"; }
  [ "$(grep -c 'shrink_check: rank [0-9]*: PASS' "$TMP/out")" = 3 ] || { cat "$TMP/out"; fail "sub ($shm)"; }
done
echo "a loss on a reordered communicator: $(grep -m1 'lost rank 2' "$TMP/out" | sed 's/.*shrink_check: //')"
# A rank killed 0-3 ms into rlx_comm_split (or dup, or create_group) and
# the new communicator's first call, 20 runs: members that completed the
# split hear that one that did not failed it (it made their communicator,
# so they fail there at once); the parent's child counts agree; every
# survivor's shrink of the world works within 2 s (it took RLX_TIMEOUT,
# 40 s here, in 3 of 6 runs before).
for seed in $(seq 1 "${SPLITKILL_RUNS:-20}"); do
  mode=splitkill
  [ $((seed % 4)) = 0 ] && mode=dupkill # (a dup exchanges nothing: its first call is the moment)
  [ $((seed % 4)) = 2 ] && mode=groupkill # (rank 1 takes no part in it)
  RLX_TIMEOUT=40 timeout 90 "$RLXRUN" -n 4 --enable-recovery "$SHRINK" $mode "$seed" >"$TMP/out" 2>&1 ||
    { cat "$TMP/out"; fail "$mode $seed"; }
  [ "$(grep -c 'shrink_check: rank [0-9]*: PASS' "$TMP/out")" = 3 ] || { cat "$TMP/out"; fail "$mode $seed"; }
done
echo "a kill during split: $(grep -m1 'split .*shrink' "$TMP/out" | sed 's/.*shrink_check: //')"
timeout 60 "$RLXRUN" -n 3 "$SHRINK" 1 >"$TMP/out" 2>&1 && fail "without --enable-recovery the job went on"
grep -q "rank 1 (pid [0-9]*) was killed by signal 9" "$TMP/out" || fail "no report of the kill"
echo "shrink: ok"
