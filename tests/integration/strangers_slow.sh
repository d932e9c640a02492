#!/bin/sh
# Two more strangers on a job whose key the test knows (started by hand):
# a handshake recorded with the right key and played back (the rank's
# challenge is fresh, so the old proof fails), and a slow-loris that sends
# half a handshake header and waits (dropped at the 10 s handshake
# deadline). Both are logged and dropped, and the job's results are right.
. "$(dirname "$0")/lib.sh"
port=$(free_port)
export RLX_SIZE=3 RLX_RENDEZVOUS=127.0.0.1:$port RLX_JOB_KEY=known-to-the-test RLX_TRANSPORT=tcp
export RLX_LOG=info RLX_TIMEOUT=60
for r in 2 1 0; do # rank 0 late (--pause 13) keeps the job alive past the loris' deadline
  RLX_RANK=$r timeout 60 "$CHECK" --pause 13 --counts 1,1023,100000 >"$TMP/out$r" 2>"$TMP/err$r" &
  eval "p$r=\$!"
done
i=0
until [ "$(cat "$TMP"/err? | grep -c 'listening on tcp')" -ge 3 ]; do
  i=$((i + 1))
  [ $i -lt 100 ] || fail "ranks did not start"
  sleep 0.1
done
addr() { sed -n 's/.*listening on tcp \([0-9.:]*\) .*/\1/p' "$TMP/err$1"; }
: >"$TMP/strangers"
STRANGER_KEY=known-to-the-test STRANGER_FROM=1 STRANGER_TO=0 \
  timeout 20 "$STRANGER" "$(addr 0)" replay >>"$TMP/strangers" 2>&1 &
STRANGER_KEY=known-to-the-test STRANGER_FROM=2 STRANGER_TO=1 \
  timeout 20 "$STRANGER" "$(addr 1)" replay >>"$TMP/strangers" 2>&1 &
for r in 0 1 2; do
  timeout 20 "$STRANGER" "$(addr $r)" loris >>"$TMP/strangers" 2>&1 &
done
for r in 0 1 2; do
  eval "wait \$p$r" || { cat "$TMP/out$r" "$TMP/err$r" | tail -20; fail "rank $r failed with strangers about"; }
done
wait
cat "$TMP/strangers"
grep -q "0 failures in all" "$TMP/out0" || fail "no correct summary"
[ "$(grep -c 'stranger replay: the rank.s challenge is fresh' "$TMP/strangers")" -eq 2 ] || fail "replay: challenge"
[ "$(grep -c 'stranger replay: dropped' "$TMP/strangers")" -eq 2 ] || fail "replayed handshakes not dropped"
[ "$(grep -c 'stranger loris: dropped after 1[0-4]\.' "$TMP/strangers")" -eq 3 ] ||
  fail "slow-loris not dropped at the 10 s deadline"
cat "$TMP"/err? | grep "dropped connection from"
[ "$(cat "$TMP"/err? | grep -c 'dropped connection from.*no complete handshake within 10 s')" -eq 3 ] ||
  fail "slow-loris drops not logged"
[ "$(cat "$TMP"/err? | grep -c 'dropped connection from')" -ge 5 ] || fail "replays not logged"
echo "strangers (replay, slow-loris): ok"
