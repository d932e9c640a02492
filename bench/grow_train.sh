#!/bin/sh
# What a joining rank costs train --elastic itself (issue 16), in the
# program's own steps: for each N in NS, a job of N ranks (rlxrun
# --max-np N+1) trains; once its leader logged JOIN_AT steps, one rank
# joins with rlxrun --join. bench/grow_train.py reads the leader's
# --log-json and prints the median step before and after, the pause of
# the running ranks (its docstring says how it is counted) and the same
# sum over as many steps before the welcome (the reading's noise).
# bench/grow_train_table.py summarises runs (per size and build, interleaved
# A/B runs marked with '# build: NAME' lines).
#   NS="2 4 8" ROUNDS=3 bench/grow_train.sh [build_dir]
# ARGS: train's arguments besides --elastic, --epochs and --log-json
# (default: C backend, synthetic data, batch 64); EPOCHS (default N + 2);
# JOIN_ARGS: rlxrun's options for the joiner (say --bind-to none);
# RLXRUN, TRAIN: the
# binaries (default: the build tree's; a folder of them for the lent
# machines); KEEP=DIR keeps every run's output and log.
set -u
BUILD=${1:-build}
RLXRUN=${RLXRUN:-$BUILD/bin/rlxrun/rlxrun}
TRAIN=${TRAIN:-$BUILD/examples/train}
NS=${NS:-2 4 8}
ROUNDS=${ROUNDS:-3}
JOIN_AT=${JOIN_AT:-100}
ARGS=${ARGS:---backend cpu --synthetic --batch 64}
EPOCHS=${EPOCHS:-}
here=$(dirname "$0")
export TMPDIR=$(mktemp -d)
trap 'rm -rf "$TMPDIR"' EXIT
echo "# grow_train: train --elastic $ARGS; one joiner after $JOIN_AT steps; $(nproc) cores"
for n in $NS; do
  for r in $(seq "$ROUNDS"); do
    out="$TMPDIR/job.$n.$r" log="$TMPDIR/log.$n.$r"
    # (as many epochs as ranks plus 2 unless EPOCHS says: a job of more
    # ranks takes fewer steps per epoch, and must outlive a joiner's start)
    epochs=${EPOCHS:-$((n + 2))}
    # shellcheck disable=SC2086
    timeout 300 "$RLXRUN" -n "$n" --max-np $((n + 1)) "$TRAIN" --elastic $ARGS \
      --epochs "$epochs" --log-json "$log" >"$out" 2>&1 &
    job=$!
    i=0
    until [ -f "$log" ] && [ "$(grep -c '"type":"step"' "$log")" -ge "$JOIN_AT" ]; do
      i=$((i + 1)); [ $i -lt 600 ] && kill -0 $job 2>/dev/null || { cat "$out"; exit 1; }; sleep 0.05
    done
    joinfile=$(sed -n 's/.*rlxrun --join \([^ ]*\) -n K.*/\1/p' "$out")
    # shellcheck disable=SC2086
    timeout 300 "$RLXRUN" --join "$joinfile" -n 1 ${JOIN_ARGS:-} "$TRAIN" --elastic $ARGS --epochs "$epochs" \
      >"$TMPDIR/joiner" 2>&1 &
    joiner=$!
    wait $job || { cat "$out"; kill $joiner 2>/dev/null; exit 1; }
    # (a job that ended before it admitted the joiner leaves it waiting)
    grep -q '"joined":[1-9]' "$log" || { kill $joiner 2>/dev/null; wait $joiner 2>/dev/null
      echo "n=$n round $r: the job ended before it admitted the joiner (more --epochs?)"; continue; }
    wait $joiner || { cat "$out" "$TMPDIR/joiner"; exit 1; }
    if [ -n "${KEEP:-}" ]; then
      cp "$out" "$KEEP/job.$n.$r" && cp "$log" "$KEEP/log.$n.$r" && cp "$TMPDIR/joiner" "$KEEP/joiner.$n.$r"
    fi
    echo "n=$n round $r: $(python3 "$here/grow_train.py" "$log")"
  done
done
