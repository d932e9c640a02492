#!/bin/bash
# How close a 2-rank allreduce over TCP on this host can come to Open MPI's
# TCP path, and how close rlxcoll comes: in ROUNDS interleaved rounds (default
# 5), bench/tcp_floor (the bytes such an allreduce must move, both ways, and
# nothing else; again with CRC32C at both ends, as rlxcoll's frames carry),
# rlxcoll (RLX_TRANSPORT=tcp) and Open MPI (--mca pml ob1 --mca btl tcp,self),
# the same OSU-style client for both. A floor is the least time of its
# rounds; the libraries' times are medians. Prints per size the times and
# each over Open MPI's: where floor/MPI is above a target, no library that
# moves the data through the kernel's TCP can meet it.
#   bench/tcp_floor.sh [build_dir]   (MIN, MAX: sizes in bytes; PACK=DIR: the
#   binaries of a folder bench/pack_build.sh made, for the lent machines;
#   DEPS=DIR: runtime libraries for our binaries only, as in shm_vs_vader.sh)
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${1:-$src}" && pwd)
ROUNDS=${ROUNDS:-5}
MIN=${MIN:-8}
MAX=${MAX:-4194304}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
. "$src/bench/tcp_bins.sh"
MPICC=$(command -v mpicc.openmpi || command -v mpicc)
MPIRUN=$(command -v mpirun.openmpi || command -v mpirun)
"$MPICC" -O2 -DUSE_MPI -o "$out/osu_mpi" "$src/bench/osu_allreduce.c"
for r in $(seq 1 "$ROUNDS"); do
  rlx timeout 600 "$FLOOR" "$MAX" "$MIN" | awk '!/^#/ {print "raw", $1, $2; print "crc", $1, $3}'
  RLX_TRANSPORT=tcp rlx timeout 600 "$RLXRUN" -n 2 --no-tag-output "$OSU" "$MAX" "$MIN" |
    awk '{print "rlx", $2, $3}'
  timeout 600 "$MPIRUN" --allow-run-as-root --oversubscribe --mca pml ob1 --mca btl tcp,self \
    -n 2 "$out/osu_mpi" "$MAX" "$MIN" | awk '{print "mpi", $2, $3}'
done >"$out/runs"
python3 - "$out/runs" <<'PY'
import collections, statistics, sys
d = collections.defaultdict(list)
for line in open(sys.argv[1]):
    v, s, t = line.split()
    d[(v, int(s))].append(float(t))
print("2 ranks, TCP on one host; us per allreduce (floors: least of the rounds; libraries: medians)")
print(f"{'bytes':>9} {'floor':>9} {'floor+crc':>10} {'rlxcoll':>9} {'Open MPI':>9}"
      f" {'floor/MPI':>10} {'f+crc/MPI':>10} {'rlx/MPI':>8} {'rlx/(f+crc)':>12}")
for s in sorted({s for _, s in d}):
    raw, crc = min(d[("raw", s)]), min(d[("crc", s)])
    rlx, mpi = statistics.median(d[("rlx", s)]), statistics.median(d[("mpi", s)])
    print(f"{s:>9} {raw:9.1f} {crc:10.1f} {rlx:9.1f} {mpi:9.1f} {raw / mpi:10.2f}"
          f" {crc / mpi:10.2f} {rlx / mpi:8.2f} {rlx / crc:12.2f}")
PY
