#!/bin/sh
# rlx_comm_create_group (group_check.c): every subset of the ranks made by
# its members alone, each with its own tag, collectives and messages on
# each, one after another and then all at once (a thread per subset); the
# same list twice; refusals; members whose tags differ fail with
# RLX_ERR_MISMATCH. On 1-5 ranks over the default transports, on 4 point to
# point (RLX_SHM_COLL=off) and over TCP.
. "$(dirname "$0")/lib.sh"
GROUP="$top_builddir/tests/integration/group_check"
run() { # name, then env and arguments
  name=$1
  shift
  env "$@" >"$TMP/out" 2>&1 || { cat "$TMP/out"; fail "$name"; }
  grep -q " 0 failures in all" "$TMP/out" || { cat "$TMP/out"; fail "$name: no summary"; }
  echo "$name: $(grep -o '[0-9]* ranks, [0-9]* groups on rank 0: 0 failures in all' "$TMP/out")"
}
for n in ${GROUP_NS:-1 2 3 4 5}; do
  run "n=$n" timeout 150 "$RLXRUN" -n $n --timeout 140 "$GROUP"
done
run "n=4 point to point" RLX_SHM_COLL=off timeout 150 "$RLXRUN" -n 4 --timeout 140 "$GROUP"
run "n=4 tcp" RLX_TRANSPORT=tcp timeout 150 "$RLXRUN" -n 4 --timeout 140 "$GROUP"
