#!/bin/sh
# A process of another user on a rank's Unix socket is dropped by its
# credentials (SO_PEERCRED), before any handshake, and the job goes on.
# The run directory (and rlxrun's job directory above it) is 0700, so to
# get that far the test opens them up
# (rank 0 waits 10 s before its first call, so the job outlives the
# strangers even when python starts slowly on a loaded host).
. "$(dirname "$0")/lib.sh"
[ "$(id -u)" = 0 ] || { echo "skipped: needs root to act as another user"; exit 77; }
command -v setpriv >/dev/null || fail "setpriv missing (util-linux)"
[ -x /usr/bin/python3 ] || fail "/usr/bin/python3 missing: apt-get install python3"
RLX_LOG=info timeout 120 "$RLXRUN" -n 2 --timeout 100 "$CHECK" --pause 10 --counts 1,1000 \
  >"$TMP/out" 2>"$TMP/err" &
job=$!
i=0
while [ "$(grep -c 'listening on tcp .* and unix ' "$TMP/err")" -lt 2 ]; do
  i=$((i + 1))
  [ $i -lt 100 ] || { kill $job; fail "ranks did not start"; }
  sleep 0.1
done
for path in $(sed -n 's/.*listening on tcp [^ ]* and unix \([^ ]*\)$/\1/p' "$TMP/err"); do
  ls -ld "$(dirname "$path")" | grep -q '^drwx------' || fail "run directory $(dirname "$path") is not 0700"
  chmod 0755 "$(dirname "$path")"
  jobdir=$(dirname "$(dirname "$path")") # rlxrun's job directory, 0700 as well
  case "$(basename "$jobdir")" in rlxrun-*) chmod 0755 "$jobdir" ;; *) fail "no rlxrun job directory above $path" ;; esac
  chmod 0777 "$path"
  setpriv --reuid=65534 --regid=65534 --clear-groups /usr/bin/python3 -c "
import socket, sys, time
s = socket.socket(socket.AF_UNIX)
s.connect(sys.argv[1])
s.settimeout(3)
try:
    time.sleep(0.2)
    s.sendall(b'\\x00' * 64)
    got = s.recv(1)
except OSError:
    got = b''
print('nobody:', 'dropped' if got == b'' else 'answered')" "$path" >>"$TMP/strangers" 2>&1
done
wait $job || { cat "$TMP/out" "$TMP/err" | tail -20; fail "the job failed with a stranger about"; }
cat "$TMP/strangers"
grep -q "0 failures in all" "$TMP/out" || fail "no correct summary"
[ "$(grep -c 'dropped a connection on our Unix socket from pid [0-9]* of uid 65534 (not ours)' "$TMP/err")" = 2 ] ||
  { cat "$TMP/err" | grep -i drop; fail "the other user's connections were not dropped and logged"; }
[ "$(grep -c 'nobody: dropped' "$TMP/strangers")" = 2 ] || fail "the stranger was answered"
echo "strangers on the Unix socket: ok"
