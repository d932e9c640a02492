#!/bin/sh
# Local resource limits are named as such and cost no rank:
# - a file-size limit (ulimit -f) smaller than the shared memory a job
#   wants: a memfd's ftruncate past it would kill the rank with SIGXFSZ;
#   instead the communicator's collectives go point to point, or a pair's
#   frames through the Unix socket, and RLX_LOG=warn says why. Every
#   collective stays right (coll_check).
. "$(dirname "$0")/lib.sh"
for case in "4 1024" "8 4096" "8 64"; do
  set -- $case
  (ulimit -f "$2" && RLX_LOG=warn timeout 300 "$RLXRUN" -n "$1" "$CHECK" --counts 0,1,7,1023,65537) \
    >"$TMP/out" 2>&1 || { tail -20 "$TMP/out"; fail "ulimit -f $2, $1 ranks"; }
  grep -q "coll_check: $1 ranks, .* 0 failures in all" "$TMP/out" || { tail -20 "$TMP/out"; fail "ulimit -f $2: $1 ranks"; }
  grep -q "pass the file-size limit (ulimit -f: [0-9]* bytes): none made" "$TMP/out" ||
    { tail -20 "$TMP/out"; fail "ulimit -f $2: no warning saying why"; }
  echo "ulimit -f $2, $1 ranks: every collective right; $(grep -m1 'file-size limit' "$TMP/out" | sed 's/.*warn: //')"
done
echo "limits: ok"
