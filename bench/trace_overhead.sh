#!/bin/sh
# What observing costs: allreduce time with the flight recorder alone (the
# default), with RLX_STATS, with RLX_TRACE, and, when BASE names a git
# revision from before the recorder existed, with none of it. Runs are
# interleaved (ROUNDS rounds of each) so drift on a shared machine hits all
# alike; prints the median time per size and the ratio to the default.
#   bench/trace_overhead.sh BUILD_DIR [BASE_REV]
#   N=2 ROUNDS=5 ITERS=2000 SIZES="8 65536 1048576"
set -eu
build=$(cd "$1" && pwd)
base=${2:-}
src=$(cd "$(dirname "$0")/.." && pwd)
N=${N:-2}
ROUNDS=${ROUNDS:-5}
ITERS=${ITERS:-2000}
out=$(mktemp -d "${TMPDIR:-/tmp}/rlxoverhead.XXXXXX")
trap 'rm -rf "$out"' EXIT

base_bench=""
if [ -n "$base" ]; then
  git -C "$src" worktree add -q --detach "$out/base" "$base"
  (cd "$out/base" && ./autogen.sh >/dev/null 2>&1 && mkdir b && cd b &&
    ../configure -q >/dev/null && make -j2 >/dev/null 2>&1) || { echo "building $base failed"; exit 1; }
  base_bench="$out/base/b"
fi

run() { # label build-dir env...
  label=$1 dir=$2
  shift 2
  env "$@" timeout 600 "$dir/bin/rlxrun/rlxrun" --no-tag-output -n "$N" "$dir/bench/rlx-bench" \
    -b 8 -e 1048576 -f 8 -n "$ITERS" -w 100 -c 0 --json 2>/dev/null >>"$out/$label.json.$r"
}

for r in $(seq 1 "$ROUNDS"); do
  run default "$build" RLX_FLIGHT_DUMP=signal
  run stats "$build" RLX_STATS=1
  run trace "$build" RLX_TRACE="$out/t"
  rm -f "$out"/t.*
  [ -n "$base_bench" ] && run base "$base_bench" X=1
done
python3 - "$out" "$ROUNDS" <<'EOF'
import json, os, statistics, sys
d, rounds = sys.argv[1], int(sys.argv[2])
res = {}
for label in ("base", "default", "stats", "trace"):
    per = {}
    for r in range(1, rounds + 1):
        p = os.path.join(d, f"{label}.json.{r}")
        if not os.path.exists(p):
            continue
        for row in json.load(open(p)):
            per.setdefault(row["size"], []).append(row["time_us"])
    if per:
        res[label] = {s: statistics.median(v) for s, v in per.items()}
sizes = sorted(res["default"])
print("size      " + "".join(f"{l:>18}" for l in res))
for s in sizes:
    line = f"{s:<10}"
    for l in res:
        t = res[l][s]
        line += f"{t:10.2f} us {t / res['default'][s]:5.3f}"
    print(line)
print("(median time per call over rounds; ratio to the default, which has the flight recorder on)")
EOF
if [ -n "$base" ]; then git -C "$src" worktree remove --force "$out/base"; fi
