#!/bin/sh
# rlxrun names the rank that failed and how, stops the others within the
# grace period, and exits non-zero; --timeout and SIGTERM stop a job.
. "$(dirname "$0")/lib.sh"

t0=$(date +%s)
timeout 30 "$RLXRUN" -n 4 sh -c 'if [ "$RLX_RANK" = 1 ]; then exit 3; fi; exec sleep 60' \
  >"$TMP/out" 2>&1
rc=$?
cat "$TMP/out"
[ $rc -ne 0 ] && [ $rc -ne 124 ] || fail "exit 3 of rank 1: rlxrun returned $rc"
grep -q "rank 1 (pid [0-9]*) exited with code 3" "$TMP/out" || fail "rank 1's exit code not reported"
[ $(( $(date +%s) - t0 )) -lt 20 ] || fail "the other ranks were not stopped in time"

timeout 30 "$RLXRUN" -n 3 sh -c 'if [ "$RLX_RANK" = 2 ]; then kill -9 $$; fi; exec sleep 60' \
  >"$TMP/out" 2>&1
rc=$?
cat "$TMP/out"
[ $rc -ne 0 ] && [ $rc -ne 124 ] || fail "SIGKILL of rank 2: rlxrun returned $rc"
grep -q "rank 2 (pid [0-9]*) was killed by signal 9" "$TMP/out" || fail "rank 2's signal not reported"

timeout 30 "$RLXRUN" -n 2 --timeout 1 sleep 60 >"$TMP/out" 2>&1
rc=$?
cat "$TMP/out"
[ $rc -eq 124 ] || fail "--timeout 1: expected exit 124, got $rc"
grep -q "timed out after 1 s" "$TMP/out" || fail "--timeout not reported"

"$RLXRUN" -n 2 sleep 60 >"$TMP/out" 2>&1 &
pid=$!
sleep 0.5
kill -TERM $pid
i=0
while kill -0 $pid 2>/dev/null; do
  i=$((i + 1)); [ $i -lt 100 ] || { kill -9 $pid; fail "rlxrun ignored SIGTERM"; }
  sleep 0.1
done
wait $pid
rc=$?
cat "$TMP/out"
[ $rc -eq 143 ] || fail "SIGTERM: expected exit 143, got $rc"

# rlxrun killed (kill -9; dying of SIGPIPE when its output's reader left
# is the same to its ranks): the ranks it started exit within 3 s, saying
# why, instead of running on as orphans; their run directories go.
mkdir -p "$TMP/t"
TMPDIR="$TMP/t" "$RLXRUN" -n 2 "$OBSERVE" sleep 60 >"$TMP/out" 2>"$TMP/err" &
pid=$!
i=0
until [ "$(grep -c sleeping "$TMP/out")" -eq 2 ]; do
  i=$((i + 1)); [ $i -lt 100 ] || { kill -9 $pid; cat "$TMP/out" "$TMP/err"; fail "ranks did not start"; }
  sleep 0.1
done
kill -9 $pid
# (living ones: an exited rank stays a zombie until this host's init reaps it)
alive() { ps -C observe_check -o stat= | grep -qv '^Z'; }
i=0
while alive; do
  i=$((i + 1))
  [ $i -lt 30 ] || { pgrep -a -x observe_check; pkill -9 -x observe_check; fail "ranks outlived rlxrun"; }
  sleep 0.1
done
ls -d "$TMP"/t/*/rlx-* 2>/dev/null && fail "a rank's run directory was left behind"
echo "rlxrun killed: its ranks exited within $((i / 10)).$((i % 10)) s"
# Output passes through unchanged: 1 MiB of random bytes, and NULs, a
# 100 KiB line and a last line without a newline, byte for byte with one
# rank (untagged by default) and --no-tag-output; tagged, each line of
# each rank gets its tag at its start and nothing else changes.
head -c 1048576 /dev/urandom >"$TMP/bin"
python3 -c 'import sys; sys.stdout.buffer.write(b"a\0b\n" + b"x" * 100000 + b"\nlast without newline")' \
  >"$TMP/lines"
for f in bin lines; do
  timeout 30 "$RLXRUN" -n 1 cat "$TMP/$f" >"$TMP/out" 2>/dev/null || fail "cat $f"
  cmp -s "$TMP/$f" "$TMP/out" || fail "rlxrun -n 1 changed $f"
  timeout 30 "$RLXRUN" -n 2 --no-tag-output sh -c "[ \$RLX_RANK = 0 ] && cat $TMP/$f; true" \
    >"$TMP/out" 2>/dev/null || fail "cat $f, 2 ranks"
  cmp -s "$TMP/$f" "$TMP/out" || fail "rlxrun --no-tag-output changed $f"
done
timeout 30 "$RLXRUN" -n 2 --tag-output sh -c "[ \$RLX_RANK = 1 ] && cat $TMP/lines; true" >"$TMP/out" 2>/dev/null ||
  fail "tagged cat"
python3 - "$TMP/lines" "$TMP/out" <<'PY' || fail "tagged output is not the lines with their tags"
import sys
src, out = (open(p, "rb").read() for p in sys.argv[1:3])
want = b"".join(b"[1] " + l + b"\n" for l in src.split(b"\n")[:-1]) + b"[1] " + src.split(b"\n")[-1]
sys.exit(0 if out == want else 1)
PY
echo "rlxrun output: byte for byte (binary, NULs, a 100 KiB line, no last newline)"
# A reader of rlxrun's output that stalls (6 s here) does not hold its
# control loop: --timeout 2 still stops the rank (which has 40 MB to
# write) by 4 s, and every byte written before comes out once the reader
# reads again.
( timeout 60 "$RLXRUN" -n 1 --timeout 2 --no-tag-output sh -c 'head -c 40000000 /dev/zero; sleep 137' |
  { sleep 6; wc -c >"$TMP/count"; } ) 2>"$TMP/err" &
pipeline=$!
sleep 4
pgrep -f "^sh -c head -c 40000000" >/dev/null && fail "a stalled reader held rlxrun: the rank outlived --timeout 2"
wait $pipeline
grep -q "job timed out after 2 s" "$TMP/err" || fail "no timeout message with a stalled reader"
[ "$(cat "$TMP/count")" -gt 0 ] || fail "nothing came out after the stalled reader read again"
echo "rlxrun with a stalled reader: the rank stopped at its --timeout, $(cat "$TMP/count") bytes out after"
# Tagged, line by line output; a clean job exits 0.
timeout 30 "$RLXRUN" -n 3 sh -c 'echo "line from $RLX_RANK"' >"$TMP/out" 2>&1 || fail "clean job failed"
for r in 0 1 2; do grep -qx "\[$r\] line from $r" "$TMP/out" || fail "missing tagged line of rank $r"; done
# The job key reaches the ranks' environment but never their argv.
timeout 30 "$RLXRUN" -n 1 sh -c 'test -n "$RLX_JOB_KEY" && ! grep -q "$RLX_JOB_KEY" /proc/$$/cmdline' ||
  fail "job key missing from the environment, or in argv"
"$RLXRUN" -n 2 >/dev/null 2>&1 && fail "rlxrun without a program succeeded"
"$RLXRUN" -n zero true >/dev/null 2>&1 && fail "rlxrun -n zero succeeded"
echo "rlxrun failure reporting: ok"
