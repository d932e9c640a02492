#!/bin/bash
# Allreduce sweep, rlxcoll against Open MPI's TCP path, side by side in one
# run: float32 sum, 8 B to 64 MiB, n = 2 and 4 (override with NS="2 4 8"),
# RUNS runs each (default 3); prints per size the median times and the
# rlxcoll / Open MPI ratio (below 1 means rlxcoll is faster).
#   bench/allreduce_sweep.sh [build_dir]
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${1:-$src}" && pwd)
NS=${NS:-"2 4"}
RUNS=${RUNS:-3}
MAXB=${MAXB:-67108864}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

make -C "$build" bench/osu_allreduce_rlx >/dev/null
rlx_bin="$build/bench/osu_allreduce_rlx"
mpi_bin="$out/osu_allreduce_mpi"
mpicc.openmpi -O2 -DUSE_MPI -o "$mpi_bin" "$src/bench/osu_allreduce.c"
MPIRUN="mpirun.openmpi --allow-run-as-root --oversubscribe --mca pml ob1 --mca btl tcp,self"

for n in $NS; do
  for run in $(seq 1 "$RUNS"); do
    # Alternate the order so neither library always runs on a warmer machine.
    timeout 600 "$build/bin/rlxrun/rlxrun" -n "$n" --no-tag-output "$rlx_bin" "$MAXB" >"$out/rlx.$n.$run"
    timeout 600 $MPIRUN -n "$n" "$mpi_bin" "$MAXB" >"$out/mpi.$n.$run"
  done
  python3 - "$out" "$n" "$RUNS" <<'PY'
import sys, statistics, collections
out, n, runs = sys.argv[1], sys.argv[2], int(sys.argv[3])
t = collections.defaultdict(list)
for lib in ("rlx", "mpi"):
    for r in range(1, runs + 1):
        for line in open(f"{out}/{lib}.{n}.{r}"):
            name, size, us = line.split()
            t[(lib, int(size))].append(float(us))
sizes = sorted({s for (_, s) in t})
def human(b):
    for unit, k in (("MiB", 1 << 20), ("KiB", 1 << 10)):
        if b >= k: return f"{b // k} {unit}"
    return f"{b} B"
print(f"\nn = {n}: median of {runs} runs, microseconds per allreduce (float32 sum)")
print(f"{'size':>9} {'rlxcoll':>11} {'Open MPI':>11} {'ratio':>7}")
for s in sizes:
    a = statistics.median(t[("rlx", s)]); b = statistics.median(t[("mpi", s)])
    print(f"{human(s):>9} {a:11.1f} {b:11.1f} {a / b:7.2f}")
PY
done
