#!/bin/bash
# Builds (bench/pack_build.sh folders) against Open MPI's shared memory
# (vader) at NRANKS ranks (default 2; 1: a job of one rank), round by round: in each round vader, then each
# build, each collective (bench/osu_coll.c's names), MINB (default 8) -
# MAXB (default 32). Prints per size vader's median and, per build, its median and the
# median and range of its ratio to vader in the same round: on a shared
# machine whose speed changes from minute to minute, the ratio within a
# round is what compares. A build may carry environment settings after a
# colon, commas between them (build:RLX_SHM_COLL=0,RLX_LOG=warn).
#   MAXB=256 bench/ab_rounds.sh ROUNDS "BUILD..." gather scatter bcast
set -uo pipefail
[ $# -ge 3 ] || { echo "usage: $0 ROUNDS \"BUILD[:VAR=V,...] ...\" COLL..." >&2; exit 2; }
rounds=$1 builds=$2
shift 2
src=$(cd "$(dirname "$0")/.." && pwd)
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
MPICC=$(command -v mpicc || command -v mpicc.openmpi)
MPIRUN=$(command -v mpirun || command -v mpirun.openmpi)
"$MPICC" -O2 -DUSE_MPI -o "$out/coll_mpi" "$src/bench/osu_coll.c" -I"$src/bench" || exit 1
max=${MAXB:-32} min=${MINB:-8} n=${NRANKS:-2}
for r in $(seq 1 "$rounds"); do
  for c in "$@"; do
    timeout 120 "$MPIRUN" --allow-run-as-root --oversubscribe --bind-to core --mca pml ob1 \
      --mca btl vader,self -n "$n" "$out/coll_mpi" "$c" "$max" "$min" 2>/dev/null |
      awk -v c="$c" -v r="$r" '{print r, c, "vader", $2, $3}'
    for b in $builds; do
      dir=${b%%:*} envs=""
      case $b in *:*) envs=$(echo "${b#*:}" | tr ',' ' ') ;; esac
      # shellcheck disable=SC2086
      env ${DEPS:+LD_LIBRARY_PATH=$DEPS} $envs timeout 120 "$dir/bin/rlxrun" -n "$n" --no-tag-output \
        "$dir/bin/osu_coll_rlx" "$c" "$max" "$min" | awk -v c="$c" -v r="$r" -v b="$b" '{print r, c, b, $2, $3}'
    done
  done
done >"$out/runs"
[ -n "${KEEP:-}" ] && cp "$out/runs" "$KEEP"
python3 - "$out/runs" $builds <<'PY'
import statistics, sys
d = {}
for line in open(sys.argv[1]):
    p = line.split()
    if len(p) == 5:
        d[(p[0], p[1], p[2], int(p[3]))] = float(p[4])
builds = sys.argv[2:]
print("coll bytes | vader us | " + " | ".join(f"{b}: us, /vader median [range]" for b in builds))
for c, size in sorted({(k[1], k[3]) for k in d}):
    rounds = sorted({k[0] for k in d if k[1] == c and k[3] == size})
    v = [d[(r, c, "vader", size)] for r in rounds if (r, c, "vader", size) in d]
    row = [f"{c:8s} {size:6d} | {statistics.median(v):.3f}" if v else f"{c:8s} {size:6d} | -"]
    for b in builds:
        ts = [d[(r, c, b, size)] for r in rounds if (r, c, b, size) in d]
        rs = [d[(r, c, b, size)] / d[(r, c, "vader", size)] for r in rounds
              if (r, c, b, size) in d and (r, c, "vader", size) in d]
        row.append(f"{statistics.median(ts):.3f} {statistics.median(rs):.2f} [{min(rs):.2f}-{max(rs):.2f}]"
                   if rs else "-")
    print(" | ".join(row))
PY
