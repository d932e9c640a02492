#!/bin/sh
# One rank calls something else than the others (mismatch_check.c says
# what): for n = 2, 3 and 5 or 8 (powers of two and not; above 4 ranks
# the kinds take 5 and 8 in turn), with the odd rank at every position
# (above 4 ranks: first, last and one that moves with the kind, so that
# every position is taken by some kind), every rank
# learns it within 1 s naming both calls: the call fails with
# RLX_ERR_MISMATCH, or (where a rank's part of a call whose pattern
# differs was done) its next call fails; in shared memory and point to
# point (alternately), and with the odd rank finalizing and exiting at
# once (alternately): its ABORT still reaches ranks it was not connected
# to; nothing of the job stays in TMPDIR. A rank whose own call fails its
# argument check tells the others (their call fails naming its reason);
# when every rank makes the same mistake, the communicator stays usable.
# (Not here: calls where no rank would send a byte, two ranks each naming
# the other as a bcast's root: they end at RLX_TIMEOUT, naming the ranks
# waited for.)
. "$(dirname "$0")/lib.sh"
CHECK="$top_builddir/tests/integration/mismatch_check"
i=0 k=0
for kind in ${MISMATCH_KINDS:-dtype op count rs split roots rroots bcastreduce argcheck argsym a2a gather scatter sroots sloop a2av rsv agv gv gvbig sv}; do
  k=$((k + 1))
  for n in ${MISMATCH_NS:-2 3 5 8}; do
    odds=$(seq 0 $((n - 1)))
    [ $n -gt 4 ] && odds="0 $((1 + k % (n - 2))) $((n - 1))"
    # (above 4 ranks, each kind runs at one of them in turn: 5, 8, 5, ...)
    if [ $n -gt 4 ] && [ -z "${MISMATCH_NS:-}" ]; then
      [ $((k % 2)) -eq 1 ] && [ $n -ne 5 ] && continue
      [ $((k % 2)) -eq 0 ] && [ $n -ne 8 ] && continue
    fi
    for odd in $odds; do
      i=$((i + 1))
      shm=auto
      [ $((i % 2)) -eq 0 ] && shm=off
      quit=
      [ $(((i / 2) % 2)) -eq 0 ] && quit=exit
      mkdir -p "$TMP/t"
      TMPDIR="$TMP/t" RLX_SHM_COLL=$shm RLX_TIMEOUT=30 timeout 60 "$RLXRUN" -n $n "$CHECK" $kind \
        $odd $quit >"$TMP/out" 2>&1
      [ -z "$(ls -A "$TMP/t")" ] || { ls -R "$TMP/t"; fail "$kind n=$n odd=$odd: the job left files in TMPDIR"; }
      if [ "$(grep -c 'mismatch_check: rank [0-9]*: PASS' "$TMP/out")" -ne $n ]; then
        cat "$TMP/out"
        fail "$kind n=$n odd=$odd RLX_SHM_COLL=$shm ${quit:-stays}"
      fi
      case $kind in
        arg*) ;; # the refusing rank's reason is named instead
        a2av|gv|gvbig|sv) grep -q "rank [0-9]* sent [0-9]* bytes where rank [0-9]* expected [0-9]* in rlx_$(case $kind in gv*) echo gatherv ;; sv) echo scatterv ;; *) echo alltoallv ;; esac)" "$TMP/out" ||
             { cat "$TMP/out"; fail "$kind n=$n odd=$odd: no rank named both sizes"; } ;;
        *) grep -q "rank [0-9]* called rlx_.* where .*rank [0-9]* called rlx_" "$TMP/out" ||
             { cat "$TMP/out"; fail "$kind n=$n odd=$odd: no rank named both calls"; } ;;
      esac
    done
  done
  echo "$kind: every rank learned it, n = ${MISMATCH_NS:-2 3 and $((k % 2 ? 5 : 8))}"
done
