#!/bin/bash
# Allreduce sweep, side by side in one run: rlxcoll, Open MPI's TCP path
# (mpirun --mca pml ob1 --mca btl tcp,self) and, when libgloo-dev is
# installed, Gloo's TCP transport; float32 sum, 8 B to 64 MiB, n = 2 and 4
# (NS="2 4 8" to change), RUNS runs each (default 3). Prints per size the
# median times and the ratio of rlxcoll to Open MPI and to the better of
# the two others (below 1: rlxcoll is faster). RESULTS=dir keeps the raw
# runs there (median files feed tools/rlx-plot busbw); GLOO=0 skips Gloo.
# MPI_BTL=vader,self compares with Open MPI's shared-memory path instead,
# the anchor for ranks on one host (issue 13); RLX_ENV="RLX_TRANSPORT=tcp"
# sets variables for the rlxcoll runs only.
#   bench/allreduce_sweep.sh [build_dir]
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${1:-$src}" && pwd)
NS=${NS:-"2 4"}
RUNS=${RUNS:-3}
MAXB=${MAXB:-67108864}
out=${RESULTS:-$(mktemp -d)}
mkdir -p "$out"
[ -n "${RESULTS:-}" ] || trap 'rm -rf "$out"' EXIT

make -C "$build" bench/osu_allreduce_rlx >/dev/null
rlx_bin="$build/bench/osu_allreduce_rlx"
mpi_bin="$out/osu_allreduce_mpi"
mpicc.openmpi -O2 -DUSE_MPI -o "$mpi_bin" "$src/bench/osu_allreduce.c"
MPIRUN="mpirun.openmpi --allow-run-as-root --oversubscribe --mca pml ob1 --mca btl ${MPI_BTL:-tcp,self}"
gloo_bin=""
if [ "${GLOO:-1}" != 0 ] && [ -d /usr/include/gloo ] && command -v g++ >/dev/null; then
  gloo_bin="$out/gloo_allreduce"
  g++ -O2 -std=c++17 -o "$gloo_bin" "$src/bench/gloo_allreduce.cc" -lgloo
fi
RLXRUN="$build/bin/rlxrun/rlxrun"

for n in $NS; do
  for run in $(seq 1 "$RUNS"); do
    env ${RLX_ENV:-} timeout 900 "$RLXRUN" -n "$n" --no-tag-output "$rlx_bin" "$MAXB" >"$out/rlx.$n.$run"
    timeout 900 $MPIRUN -n "$n" "$mpi_bin" "$MAXB" >"$out/mpi.$n.$run"
    if [ -n "$gloo_bin" ]; then
      store=$(mktemp -d)
      timeout 900 "$RLXRUN" -n "$n" --no-tag-output "$gloo_bin" "$store" "$MAXB" >"$out/gloo.$n.$run"
      rm -rf "$store"
    fi
  done
  python3 "$src/bench/sweep_table.py" "$out" "$n"
done
