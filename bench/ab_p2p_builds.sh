#!/bin/bash
# Builds side by side with Open MPI's shared memory (vader), interleaved
# round by round: point-to-point ping-pong and 64-message windows at 2
# ranks (bench/osu_p2p.c; MODES="" leaves them out) and the collectives
# COLLS (default alltoallv, "" none; bench/osu_coll.c's names) at NS ranks,
# MINB - MAXB (default 8 B - 64 KiB; P2P_MINB: the messages' smallest). Each BUILD is a folder from
# bench/pack_build.sh; DEPS holds runtime libraries the machine may lack
# (for our binaries only: Open MPI's mpirun must not see them). Prints a
# table of medians per build and vader, and each build/vader.
#   DEPS=.devp/deps ROUNDS=4 bench/ab_p2p_builds.sh .devp/old .devp/new
# VADER_BIND: mpirun's --bind-to (core; none where the ranks outnumber the cores)
set -uo pipefail
[ $# -ge 1 ] || { echo "usage: $0 BUILD..." >&2; exit 2; }
src=$(cd "$(dirname "$0")/.." && pwd)
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
MPICC=$(command -v mpicc || command -v mpicc.openmpi)
MPIRUN=$(command -v mpirun || command -v mpirun.openmpi)
"$MPICC" -O2 -DUSE_MPI -o "$out/p2p_mpi" "$src/bench/osu_p2p.c" || exit 1
"$MPICC" -O2 -DUSE_MPI -o "$out/coll_mpi" "$src/bench/osu_coll.c" -I"$src/bench" || exit 1
MAXB=${MAXB:-65536}
rlx() { env LD_LIBRARY_PATH="${DEPS:-}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" "$@"; }
names=""
for b in "$@"; do names="$names $(basename "$b")"; done
for r in $(seq 1 "${ROUNDS:-4}"); do
  for mode in ${MODES-latency bw}; do
    for b in "$@"; do
      rlx timeout 120 "$b/bin/rlxrun" -n 2 --no-tag-output "$b/bin/osu_p2p_rlx" $mode "$MAXB" "${P2P_MINB:-8}" |
        sed "s|^[a-z]*|p2p $mode $(basename "$b") 2|"
    done
    timeout 120 "$MPIRUN" --allow-run-as-root --oversubscribe --bind-to "${VADER_BIND:-core}" --mca pml ob1 \
      --mca btl vader,self -n 2 "$out/p2p_mpi" $mode "$MAXB" "${P2P_MINB:-8}" | sed "s|^[A-Za-z_]*|p2p $mode vader 2|"
  done
  for coll in ${COLLS-alltoallv}; do
    for n in ${NS:-4 8 16}; do
      for b in "$@"; do
        rlx timeout 120 "$b/bin/rlxrun" -n $n --no-tag-output "$b/bin/osu_coll_rlx" $coll "$MAXB" \
          "${MINB:-8}" | sed "s|^[a-z_]*|$coll x $(basename "$b") $n|"
      done
      timeout 120 "$MPIRUN" --allow-run-as-root --oversubscribe --bind-to "${VADER_BIND:-core}" --mca pml ob1 \
        --mca btl vader,self -n $n "$out/coll_mpi" $coll "$MAXB" "${MINB:-8}" |
        sed "s|^[A-Za-z_]*|$coll x vader $n|"
    done
  done
done >"$out/runs" 2>&1
[ -n "${KEEP:-}" ] && cp "$out/runs" "$KEEP"
python3 - "$out/runs" $names <<'PY'
import collections, statistics, sys
d = collections.defaultdict(list)
for line in open(sys.argv[1]):
    p = line.split()
    if len(p) != 6:
        continue
    try:
        d[(p[0], p[1], int(p[3]), int(p[4]), p[2])].append(float(p[5]))
    except ValueError:
        pass
builds = sys.argv[2:]
print("kind mode  n   bytes | " + " ".join(f"{b:>8s}" for b in builds) + "    vader | " +
      " ".join(f"{b}/vader" for b in builds) + "   (us: latency one way; bw, a2av per call)")
for k in sorted({k[:4] for k in d}):
    if not all(d[k + (b,)] for b in builds + ["vader"]):
        continue
    m = [statistics.median(d[k + (b,)]) for b in builds]
    v = statistics.median(d[k + ("vader",)])
    print(f"{k[0]:4s} {k[1]:7s} {k[2]:2d} {k[3]:7d} | " + " ".join(f"{x:8.3f}" for x in m) +
          f" {v:8.3f} | " + " ".join(f"{x / v:8.2f}" for x in m))
PY
