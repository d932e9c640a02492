#!/bin/sh
# The same checks as collectives_unix.sh, forced over TCP (RLX_TRANSPORT=tcp).
# The 1M+3 counts' payloads stay on the stream: never by reference, though
# the ranks share this host (rlxcoll(7), RLX_CMA).
. "$(dirname "$0")/lib.sh"
for n in ${COLL_RANKS_TCP:-${COLL_RANKS:-2 3 5}}; do
  [ "$n" -gt 1 ] || continue # one rank opens no connection
  start=$(date +%s)
  RLX_TRANSPORT=tcp RLX_LOG=debug timeout 300 "$RLXRUN" -n $n --timeout 280 "$CHECK" $(coll_flags $n) \
    >"$TMP/out" 2>"$TMP/err" || { cat "$TMP/out" "$TMP/err" | tail -30; fail "n=$n over tcp"; }
  grep -q "0 failures in all" "$TMP/out" || fail "n=$n: no summary"
  grep -q "over tcp" "$TMP/err" || fail "n=$n: no connection over tcp"
  ! grep -q "over unix" "$TMP/err" || fail "n=$n: RLX_TRANSPORT=tcp but unix was used"
  refs=$(sed -n 's/.*copied by reference: \([0-9]*\).*/\1/p' "$TMP/err" | sort -n | tail -1)
  [ -n "$refs" ] || fail "n=$n: no count of payloads by reference"
  [ "$refs" -eq 0 ] || fail "n=$n: RLX_TRANSPORT=tcp but $refs payloads went by reference"
  echo "n=$n tcp: $(grep 'coll_check:' "$TMP/out" | sed 's/^\[0\] //') ($(( $(date +%s) - start )) s)"
done
