#!/bin/bash
# Interleaved A/B runs of the allreduce benchmark (bench/osu_allreduce.c):
# each variant once per round, ROUNDS rounds, medians and spread per size.
# A variant is NAME:ENV=VALUE... (environment for the rlxcoll run; OSU=path
# picks another build's binary, e.g. one built with -DRLX__CMA_MIN=32768),
# or "mpi:" for Open MPI's TCP path. Sizes MIN..MAX bytes, N ranks.
#   N=4 MIN=262144 MAX=4194304 ROUNDS=7 bench/ab_allreduce.sh build \
#     "on:RLX_CMA=on" "off:RLX_CMA=off" "mpi:"
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${1:?build dir}" && pwd)
shift
N=${N:-4}
MIN=${MIN:-524288}
MAX=${MAX:-2097152}
ROUNDS=${ROUNDS:-5}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
make -C "$build" bench/osu_allreduce_rlx >/dev/null
mpicc.openmpi -O2 -DUSE_MPI -o "$out/osu_mpi" "$src/bench/osu_allreduce.c"
for r in $(seq 1 "$ROUNDS"); do
  for v in "$@"; do
    name=${v%%:*}
    envs=${v#*:}
    if [ "$name" = mpi ]; then
      timeout 600 mpirun.openmpi --allow-run-as-root --oversubscribe --mca pml ob1 \
        --mca btl tcp,self -n "$N" "$out/osu_mpi" "$MAX" "$MIN"
    else
      osu=$build/bench/osu_allreduce_rlx
      for e in $envs; do case $e in OSU=*) osu=${e#OSU=} ;; esac; done
      # shellcheck disable=SC2086
      env $envs timeout 600 "$build/bin/rlxrun/rlxrun" -n "$N" --no-tag-output "$osu" "$MAX" "$MIN"
    fi | sed "s/^[a-z]*/$name/"
  done
done >"$out/runs"
python3 - "$out/runs" "$@" <<'PY'
import collections, statistics, sys
d = collections.defaultdict(list)
for line in open(sys.argv[1]):
    f = line.split()
    d[(f[0], int(f[1]))].append(float(f[2]))
names = [v.split(":", 1)[0] for v in sys.argv[2:]]
sizes = sorted({s for _, s in d})
print(f"{'bytes':>9} " + " ".join(f"{n:>12}" for n in names) + "   spread (min-max)")
for s in sizes:
    print(f"{s:>9} " + " ".join(f"{statistics.median(d[(n, s)]):12.1f}" for n in names) + "   " +
          " ".join(f"{min(d[(n, s)]):.0f}-{max(d[(n, s)]):.0f}" for n in names))
PY
