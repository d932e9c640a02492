#!/bin/sh
# What a joining rank costs (issue 16): for each N in NS, a job of N ranks
# (rlxrun --max-np N+1) runs steps of grow_bench (an allreduce of PARAMS
# floats, the SGD update, the per-step control allreduce); half a second
# in, one rank joins with rlxrun --join, and the job runs SECS more after
# it caught up. Prints, per round, the leader's median steps and the pause
# (grow_bench.c says how it is counted), whether every rank's state is the
# same at the end, and the joiner's time from its launch to rlx_init
# returning, to its first step in the job and to catching up.
# SHARES says how the state goes to the joiner, each in turn: sync (a
# blocking broadcast at the admission, as train --elastic does) and
# background (grow_bench.c: the joiner steps at once and catches up).
#   BUILD=build NS="2 4 8" ROUNDS=3 SECS=1 PARAMS=203530 bench/grow_bench.sh
# (PACK=DIR: a folder bench/pack_build.sh made, for the lent machines;
# KEEP=DIR: every run's raw output kept there; JOIN_WRAP: a command the
# joiner's rlxrun runs under, e.g. "taskset -c 8")
set -u
BUILD=${BUILD:-build}
NS=${NS:-2 4 8}
ROUNDS=${ROUNDS:-3}
SECS=${SECS:-1}
PARAMS=${PARAMS:-203530}
SHARES=${SHARES:-sync background}
if [ -n "${PACK:-}" ]; then
  RUN="$PACK/bin/rlxrun" BENCH="$PACK/bin/grow_bench"
else
  RUN="$BUILD/bin/rlxrun/rlxrun" BENCH="$BUILD/bench/grow_bench"
  [ -x "$BENCH" ] || make -C "$BUILD" bench/grow_bench >/dev/null || exit 1
fi
export TMPDIR=$(mktemp -d)
trap 'rm -rf "$TMPDIR"' EXIT
echo "# grow_bench: $PARAMS floats per step, one joiner per run, $SECS s after it; $(nproc) cores"
for share in $SHARES; do
echo "# the state: $share"
for n in $NS; do
  for r in $(seq "$ROUNDS"); do
    out="$TMPDIR/job.$n.$r"
    GROW_BENCH_SHARE=$share timeout 300 "$RUN" -n "$n" --max-np $((n + 1)) "$BENCH" "$SECS" "$PARAMS" >"$out" 2>&1 &
    job=$!
    i=0
    until joinfile=$(sed -n 's/.*rlxrun --join \([^ ]*\) -n K.*/\1/p' "$out") && [ -n "$joinfile" ]; do
      i=$((i + 1)); [ $i -lt 300 ] || { cat "$out"; exit 1; }; sleep 0.1
    done
    sleep 0.5
    GROW_BENCH_SHARE=$share timeout 300 ${JOIN_WRAP:-} "$RUN" --join "$joinfile" -n 1 "$BENCH" "$SECS" "$PARAMS" "$(date +%s%N)" \
      >"$TMPDIR/joiner" 2>&1 || { cat "$out" "$TMPDIR/joiner"; exit 1; }
    wait $job || { cat "$out"; exit 1; }
    if [ -n "${KEEP:-}" ]; then # the raw outputs (with GROW_BENCH_STEPS=1, RLX_LOG=info: where the time went)
      cp "$out" "$KEEP/job.$share.$n.$r" && cp "$TMPDIR/joiner" "$KEEP/joiner.$share.$n.$r"
    fi
    echo "n=$n round $r: $(sed -n 's/.*grow_bench: \([0-9]* -> [0-9]* ranks.*\)/\1/p' "$out"); joiner: $(sed -n 's/.*grow_bench: joiner: //p' "$TMPDIR/joiner")"
  done
done
done
