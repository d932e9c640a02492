#!/bin/sh
# rlxrun --stats: the table's calls and bytes per collective match what the
# scripted program called, on every rank; algorithms are named by size band;
# connections are counted by transport (shm on one host, unix or tcp when
# forced);
# a failed call shows in the errors column and a killed rank has no row.
. "$(dirname "$0")/lib.sh"

row() { # output rank collective -> "calls bytes errors"
  awk -v r="$2" -v c="$3" '$1 == "rlxrun:" && $2 == r && $3 == c { print $4, $5, $7 }' "$1"
}

for tr in shm unix tcp; do
  RLX_TRANSPORT=$tr timeout 60 "$RLXRUN" --stats -n 3 "$OBSERVE" script >"$TMP/out" 2>&1 ||
    { cat "$TMP/out"; fail "job with --stats failed ($tr)"; }
  cat "$TMP/out"
  for r in 0 1 2; do
    [ "$(row "$TMP/out" $r rlx_allreduce)" = "8 3145888 0" ] || fail "rank $r allreduce row ($tr)"
    [ "$(row "$TMP/out" $r rlx_bcast)" = "2 800 0" ] || fail "rank $r bcast row ($tr)"
    [ "$(row "$TMP/out" $r rlx_barrier)" = "4 0 0" ] || fail "rank $r barrier row ($tr)"
    [ "$(row "$TMP/out" $r rlx_allgather)" = "1 64 0" ] || fail "rank $r allgather row ($tr)"
    grep -q "^rlxrun:  *$r  rlx_allreduce .* <=1KiB:[a-z-]*\*5;<=1MiB:[a-z-]*\*3$" "$TMP/out" ||
      fail "rank $r: allreduce algorithms by band ($tr)"
    case $tr in
    shm) want="2 shm, 0 unix, 0 tcp" ;;
    unix) want="0 shm, 2 unix, 0 tcp" ;;
    *) want="0 shm, 0 unix, 2 tcp" ;;
    esac
    grep -q "^rlxrun:  *$r  connections: $want; tcp retransmits [0-9]*; strangers dropped 0; corrupt frames 0$" \
      "$TMP/out" || fail "rank $r connections ($tr)"
  done
  grep -q "^rlxcoll\[.\] stats" "$TMP/out" && fail "raw stats lines leaked"
done

# A failed call counts as an error; the rank that hung and was stopped has no row.
RLX_TIMEOUT=2 timeout 60 "$RLXRUN" --stats -n 3 "$OBSERVE" skip 1 3 >"$TMP/out" 2>&1 && fail "hang passed"
cat "$TMP/out"
for r in 0 2; do
  [ "$(row "$TMP/out" $r rlx_allreduce)" = "3 12 1" ] || fail "rank $r: failed call not counted"
done
grep -q "^rlxrun:  *1  no statistics" "$TMP/out" || fail "rank 1 should have no statistics"

RLX_STATS=maybe timeout 30 "$HELLO" >"$TMP/o" 2>&1 && fail "RLX_STATS=maybe accepted"
grep -q 'RLX_STATS="maybe" is not valid' "$TMP/o" || fail "no clear RLX_STATS error"
echo "stats: ok"
