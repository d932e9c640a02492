#!/bin/sh
# The collectives with frames on the Unix socket itself (RLX_TRANSPORT=unix,
# no shared memory under it): the same checks as collectives_shm.sh on 2
# and 3 ranks.
. "$(dirname "$0")/lib.sh"
for n in ${COLL_RANKS_UNIX:-2 3}; do
  start=$(date +%s)
  RLX_TRANSPORT=unix RLX_LOG=debug timeout 300 "$RLXRUN" -n $n --timeout 280 "$CHECK" ${COLL_FLAGS:---random} \
    >"$TMP/out" 2>"$TMP/err" || { cat "$TMP/out" "$TMP/err" | tail -30; fail "n=$n over unix"; }
  grep -q "0 failures in all" "$TMP/out" || fail "n=$n: no summary"
  grep -q "over unix" "$TMP/err" || fail "n=$n: no connection over unix"
  ! grep -q "over shm\|over tcp" "$TMP/err" || fail "n=$n: RLX_TRANSPORT=unix but another was used"
  echo "n=$n unix: $(grep 'coll_check:' "$TMP/out" | sed 's/^\[0\] //') ($(( $(date +%s) - start )) s)"
done
