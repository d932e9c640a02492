#!/bin/bash
# Measure the allreduce crossovers behind lib/coll/select.c: each
# algorithm forced (RLX_ALLREDUCE_ALGO), float32 sum from MINB (8 B) to
# MAXB (2 MiB), for each n in NS (default "2 3 4 8"); prints the fastest per
# size. BIN=dir (holding rlxrun and rlx-bench, as built for another machine)
# runs those instead of a build tree's.
#   bench/crossover.sh [build_dir]
#   BIN=.dev/bin NS="8 16" MINB=64K MAXB=4M bench/crossover.sh
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
NS=${NS:-"2 3 4 8"}
MINB=${MINB:-8}
MAXB=${MAXB:-2M}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
if [ -n "${BIN:-}" ]; then
  rlxrun=$BIN/rlxrun bench=$BIN/rlx-bench
else
  build=$(cd "${1:-$src}" && pwd)
  make -C "$build" bench/rlx-bench >/dev/null
  rlxrun=$build/bin/rlxrun/rlxrun bench=$build/bench/rlx-bench
fi
for n in $NS; do
  for algo in rd rabenseifner ring; do
    RLX_ALLREDUCE_ALGO=$algo timeout 600 "$rlxrun" -n "$n" --no-tag-output \
      "$bench" -b "$MINB" -e "$MAXB" -f 2 -c 0 >"$out/$algo.$n"
  done
  python3 - "$out" "$n" <<'PY'
import sys
out, n = sys.argv[1], sys.argv[2]
algos = ["rd", "rabenseifner", "ring"]
t = {}
for a in algos:
    for line in open(f"{out}/{a}.{n}"):
        if line.startswith("#"): continue
        f = line.split()
        t[(a, int(f[0]))] = float(f[5])
sizes = sorted({s for (_, s) in t})
print(f"\nn = {n}: microseconds per allreduce, each algorithm forced")
print(f"{'bytes':>9} " + " ".join(f"{a:>13}" for a in algos) + "  fastest")
for s in sizes:
    row = [t[(a, s)] for a in algos]
    print(f"{s:>9} " + " ".join(f"{v:13.1f}" for v in row) + f"  {algos[row.index(min(row))]}")
PY
done
