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
# A rank killed before rlx_finalize leaves its run directory in TMPDIR
# (no rlxrun to remove it): the next rank started there removes those of
# processes that are gone, and keeps those of live ones.
mkdir -p "$TMP/rd"
sh -c 'exit 0' &
dead=$!
wait $dead
mkdir "$TMP/rd/rlx-0-$dead-abcdef" "$TMP/rd/rlx-1-$$-ghijkl"
: >"$TMP/rd/rlx-0-$dead-abcdef/s"
port=$(free_port)
export RLX_RENDEZVOUS=127.0.0.1:$port RLX_JOB_KEY=hand-made-key
RLX_RANK=1 TMPDIR="$TMP/rd" timeout 30 "$HELLO" >"$TMP/r1" 2>&1 &
p1=$!
sleep 0.3
RLX_RANK=0 TMPDIR="$TMP/rd" timeout 30 "$HELLO" >"$TMP/r0" 2>&1 || { cat "$TMP/r0"; fail "rank 0 by hand (TMPDIR)"; }
wait $p1 || { cat "$TMP/r1"; fail "rank 1 by hand (TMPDIR)"; }
[ -e "$TMP/rd/rlx-0-$dead-abcdef" ] && fail "the run directory of a process gone was left"
[ -d "$TMP/rd/rlx-1-$$-ghijkl" ] || fail "the run directory of a live process was removed"
[ "$(ls "$TMP/rd" | grep -cv "^rlx-1-$$-ghijkl$")" -eq 0 ] || { ls "$TMP/rd"; fail "the job left run directories"; }
# Launch mistakes are named on the rank that made them, not only in rank
# 0's log: a size that disagrees, a rank started twice, a rendezvous
# nobody answers (with its address and how long it was tried).
export RLX_INIT_TIMEOUT=3
port=$(free_port)
export RLX_RENDEZVOUS=127.0.0.1:$port
RLX_RANK=0 RLX_SIZE=2 timeout 30 "$HELLO" >"$TMP/r0" 2>&1 &
p0=$!
sleep 0.3
RLX_RANK=1 RLX_SIZE=3 timeout 30 "$HELLO" >"$TMP/r1" 2>&1 && fail "a rank with another RLX_SIZE joined"
wait $p0
grep -q "refused this rank: rank 1 has RLX_SIZE=3, but the job (rank 0's RLX_SIZE) has 2 ranks" "$TMP/r1" ||
  { cat "$TMP/r1"; fail "the size disagreement is not named on rank 1"; }
port=$(free_port)
export RLX_RENDEZVOUS=127.0.0.1:$port
RLX_RANK=0 RLX_SIZE=3 timeout 30 "$HELLO" >"$TMP/r0" 2>&1 &
p0=$!
sleep 0.3
RLX_RANK=1 RLX_SIZE=3 timeout 30 "$HELLO" >"$TMP/r1a" 2>&1 &
pa=$!
RLX_RANK=1 RLX_SIZE=3 timeout 30 "$HELLO" >"$TMP/r1b" 2>&1 &
pb=$!
wait $p0 $pa $pb
cat "$TMP/r1a" "$TMP/r1b" | grep -q "refused this rank: rank 1 has joined already: two processes were started with RLX_RANK=1" ||
  { cat "$TMP/r1a" "$TMP/r1b"; fail "a rank started twice is not named"; }
port=$(free_port)
RLX_RENDEZVOUS=127.0.0.1:$port RLX_RANK=1 RLX_SIZE=2 RLX_INIT_TIMEOUT=2 timeout 30 "$HELLO" >"$TMP/r1" 2>&1 &&
  fail "a rank without a rendezvous started"
grep -q "cannot connect to the rendezvous at 127.0.0.1:$port (RLX_RENDEZVOUS), tried for [12]\.[0-9] s" "$TMP/r1" ||
  { cat "$TMP/r1"; fail "an unreachable rendezvous is not named with its address and time"; }
echo "by hand: ok (stale run directories removed; launch mistakes named on the rank)"
