#!/bin/sh
# The flight recorder. A job made to hang on purpose (rank 1 skips the last
# of 4 allreduces and sleeps) ends at the deadline with a table that names
# rank 1 as behind; with no call deadline, rlxrun's --timeout asks every
# rank and shows the others inside the call waiting for rank 1; rlxrun
# --dump gets a table from a running job; a program run without rlxrun
# writes its record on SIGUSR1; RLX_FLIGHT bounds what is kept.
. "$(dirname "$0")/lib.sh"

behind_rank1() { # output file
  grep -q "^rlxrun: flight recorder" "$1" || fail "no flight-recorder table"
  grep -q "^rlxrun:  *1  #2 rlx_allreduce(count=1, float32, sum).*<-- behind" "$1" ||
    fail "rank 1 not marked behind"
  grep -q "^rlxrun: rank 1 is behind: its last call on communicator 0 was #2, others entered #3" "$1" ||
    fail "no line naming rank 1"
  for r in 0 2; do
    grep "^rlxrun:  *$r  #3 " "$1" | grep -q "<-- behind" && fail "rank $r marked behind"
  done
  grep -q "^rlxcoll\[.\] flight" "$1" && fail "raw report lines leaked into the output"
  return 0
}

# 1. RLX_TIMEOUT: ranks 0 and 2 fail after 2 s; rlxrun asks rank 1 too.
start=$(date +%s)
RLX_TIMEOUT=2 timeout 60 "$RLXRUN" -n 3 "$OBSERVE" skip 1 4 >"$TMP/out" 2>&1 && fail "the hang did not fail"
cat "$TMP/out"
behind_rank1 "$TMP/out"
grep -q "^rlxrun:  *0  #3 rlx_allreduce.*failed:RLX_ERR_TIMEOUT" "$TMP/out" || fail "rank 0's failure"
[ $(( $(date +%s) - start )) -lt 20 ] || fail "took $(( $(date +%s) - start )) s"

# 2. No call deadline: the job's --timeout asks every rank while it hangs
# (10 s: on a loaded host 3 s could pass before the ranks reached the hang).
RLX_TIMEOUT=0 timeout 60 "$RLXRUN" --timeout 10 -n 3 "$OBSERVE" skip 1 4 >"$TMP/out" 2>&1
[ $? -eq 124 ] || { cat "$TMP/out"; fail "expected exit 124 from --timeout"; }
cat "$TMP/out"
behind_rank1 "$TMP/out"
# (in the shared segment the wait is on rank 1's counter; point to point,
# on its frames)
grep -q "^rlxrun:  *2  #3 rlx_allreduce.*inside it for .* s, waiting for rank 1 (\(has not arrived\|nothing received from it in this call\))" \
  "$TMP/out" || fail "rank 2 not shown waiting for rank 1"

# 3. rlxrun --dump while the job runs.
"$RLXRUN" --timeout 60 -n 3 "$OBSERVE" sleep 4 >"$TMP/out" 2>&1 &
job=$!
for i in 1 2 3 4 5 6 7 8 9 10; do
  [ "$(grep -c sleeping "$TMP/out")" -eq 3 ] && break
  sleep 0.3
done
"$RLXRUN" --dump $job >"$TMP/dump" 2>&1 || { cat "$TMP/dump"; fail "--dump"; }
wait $job || { cat "$TMP/out"; fail "the job did not survive --dump"; }
cat "$TMP/dump" "$TMP/out"
grep -q "^rlxrun: flight recorder (asked for with rlxrun --dump" "$TMP/out" || fail "no table after --dump"
[ "$(grep -c '^rlxrun:  *[0-2]  #0 rlx_allreduce(count=1, float32, sum) .*done, between calls' "$TMP/out")" -eq 3 ] ||
  fail "--dump table lacks a rank"
"$RLXRUN" --dump $$ >"$TMP/dump" 2>&1 && fail "--dump of a process that is not rlxrun"
grep -q "not a running rlxrun" "$TMP/dump" || fail "no clear --dump error"

# 4. Without rlxrun: SIGUSR1 writes the record to stderr; RLX_FLIGHT=0 keeps none;
# RLX_FLIGHT=3 after 10 calls, the last 3 (a ring of 4 underneath).
for keep in 256 0 3; do
  calls=$([ $keep -eq 3 ] && echo 10 || echo 1)
  # (it naps 8 s once it says "sleeping", which we wait up to 20 s for: a
  # loaded host took longer to start it than the 2 s it used to nap)
  # (files of its own: the shell goes on before the child has truncated a
  # shared one, and an earlier run's "sleeping" there once had the signal
  # sent before this run took SIGUSR1, which killed it)
  o="$TMP/o.$keep" e="$TMP/e.$keep"
  RLX_FLIGHT=$keep "$OBSERVE" sleep 8 $calls >"$o" 2>"$e" &
  p=$!
  i=0
  limit=$(awk -v k="${RLX_TEST_TIME_SCALE:-1}" 'BEGIN { print int(100 * k) }')
  until grep -q sleeping "$o" 2>/dev/null || [ $i -ge $limit ]; do sleep 0.2; i=$((i + 1)); done
  # (not there yet: the signal would find SIGUSR1 not taken and kill it)
  grep -q sleeping "$o" || { kill $p; fail "RLX_FLIGHT=$keep: the program never got to its nap"; }
  kill -USR1 $p
  # (the record written, the program is still napping: SIGUSR1 did not
  # kill it; it is ended here rather than waited for)
  i=0
  until grep -q "flight-end" "$e" 2>/dev/null || [ $i -ge $limit ]; do sleep 0.1; i=$((i + 1)); done
  kill -0 $p 2>/dev/null || { wait $p; fail "SIGUSR1 killed the program"; }
  kill $p
  wait $p
  cat "$e"
  want=$([ $keep -eq 0 ] && echo 0 || { [ $calls -lt $keep ] && echo $calls || echo $keep; })
  grep -q "^rlxcoll\[0\] flight-recorder	SIGUSR1	$want	$calls$" "$e" || fail "RLX_FLIGHT=$keep header"
  [ "$(grep -c '^rlxcoll\[0\] flight	' "$e")" -eq "$want" ] || fail "RLX_FLIGHT=$keep entries"
  if [ $keep -eq 3 ]; then # (the calls' seqs, the third field: 7, 8, 9)
    [ "$(awk -F'\t' '$1 == "rlxcoll[0] flight" { printf "%s ", $3 }' "$e")" = "7 8 9 " ] ||
      fail "RLX_FLIGHT=3: not the last three calls"
  fi
done
RLX_FLIGHT=-1 timeout 30 "$HELLO" >"$TMP/o" 2>&1 && fail "RLX_FLIGHT=-1 accepted"
grep -q "RLX_FLIGHT" "$TMP/o" || fail "no clear RLX_FLIGHT error"
echo "flight: ok"
