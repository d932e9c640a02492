#!/bin/sh
# Two shells started by hand with the RLX_* variables form a job (rank 0
# hosts the rendezvous); a wrong key is refused with a clear error.
. "$(dirname "$0")/lib.sh"
port=$(free_port)
export RLX_SIZE=2 RLX_RENDEZVOUS=127.0.0.1:$port RLX_JOB_KEY=hand-made-key
# Rank 1 first: it retries until rank 0's rendezvous is up.
RLX_RANK=1 timeout 30 "$HELLO" >"$TMP/r1" 2>&1 &
p1=$!
sleep 0.3
RLX_RANK=0 timeout 30 "$HELLO" >"$TMP/r0" 2>&1 || { cat "$TMP/r0"; fail "rank 0 by hand"; }
wait $p1 || { cat "$TMP/r1"; fail "rank 1 by hand"; }
cat "$TMP/r0" "$TMP/r1"
grep -q "rank 0 of 2.*sum of ranks = 1$" "$TMP/r0" || fail "rank 0 result"
grep -q "rank 1 of 2.*sum of ranks = 1$" "$TMP/r1" || fail "rank 1 result"

port=$(free_port)
export RLX_RENDEZVOUS=127.0.0.1:$port RLX_INIT_TIMEOUT=3
RLX_RANK=0 timeout 30 "$HELLO" >"$TMP/r0" 2>&1 &
p0=$!
sleep 0.3
RLX_RANK=1 RLX_JOB_KEY=wrong-key timeout 30 "$HELLO" >"$TMP/r1" 2>&1 && fail "a wrong key joined"
wait $p0 && fail "rank 0 finished without its peer"
cat "$TMP/r1"
grep -q "did not prove the job key\|wrong job key\|authentication" "$TMP/r1" || fail "no clear auth error"
echo "by hand: ok"
