#!/bin/sh
# rlxcoll.torch never swallows a failure (tests/python/check_torch_errors.py,
# 2 ranks): mismatched sizes, the next call on the revoked group, AVG of
# integers on every rank and on one, a barrier one rank comes to late on a
# group with a 1 s timeout, with torch's default one (RLX_TIMEOUT=3 then)
# and with a timeout in the call's options: each raises rlxcoll's exception
# through a synchronous call, work.wait() and work.get_future(), within its
# limit, over the shared segment, the Unix socket and TCP (there through
# synchronous calls only: the ways of waiting are the binding's, the same
# over every transport). Over the shared-memory rings and the Unix socket,
# a 4 MiB send (by reference) to a receiver stopped 1.5 s, past the
# group's 1 s timeout, returns once the receiver took it, whole; stopped
# 5 s, the send raises Timeout and the resumed receiver PeerLost.
. "$(dirname "$0")/lib.sh"
py_stage torch
for tr in auto unix tcp; do
  shm=auto modes=sync,wait,future stopped=1
  [ $tr = unix ] && shm=off
  [ $tr = tcp ] && stopped=0
  [ $tr = auto ] || modes=sync
  rm -rf "$TMP/marks" && mkdir "$TMP/marks"
  CHECK_STOPPED=$stopped CHECK_STOP_LONG=$stopped RLX_CMA=on CHECK_MARK_DIR="$TMP/marks" \
    CHECK_MODES=$modes RLX_TRANSPORT=$tr RLX_SHM_COLL=$shm RLX_TIMEOUT=3 timeout 180 "$RLXRUN" -n 2 \
    "$PYTHON" "$PYTESTS/check_torch_errors.py" >"$TMP/out" 2>&1
  rc=$?
  cat "$TMP/out"
  [ $rc -eq 0 ] && [ "$(grep -c 'check_torch_errors: rank [0-9]*: PASS' "$TMP/out")" = 2 ] ||
    fail "torch's error paths over RLX_TRANSPORT=$tr (shared-memory collectives $shm)"
  echo "every failure raised ($modes): transport $tr"
done
echo "python torch errors: ok"
