#!/bin/bash
# Point-to-point messages between two ranks of one host: rlxcoll (shared
# memory, the default) against Open MPI's shared-memory path (--mca pml
# ob1 --mca btl vader,self), interleaved round by round on the same sizes
# (bench/osu_p2p.c: ping-pong latency, osu_latency's half round trip; and
# a 64-message window, osu_bw's, as microseconds per message). BUILD is a
# folder with bin/rlxrun, bin/osu_p2p_rlx and lib/ (bench/pack_build.sh);
# DEPS holds runtime libraries the machine may lack (for our binaries
# only: Open MPI's mpirun must not see them). RLX_ENV sets variables for
# rlxcoll, MPI_BTL Open MPI's transports (the TCP path: RLX_ENV=
# RLX_TRANSPORT=tcp MPI_BTL=tcp,self). Prints per mode and size the
# median of each and rlxcoll/vader (below 1: rlxcoll is faster).
#   ROUNDS=3 MAXB=67108864 bench/p2p_vs_vader.sh .devb/now
set -uo pipefail
build=${1:?build folder}
src=$(cd "$(dirname "$0")/.." && pwd)
ROUNDS=${ROUNDS:-3}
MAXB=${MAXB:-67108864}
MINB=${MINB:-8}
MODES=${MODES:-"latency bw"}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
MPICC=$(command -v mpicc || command -v mpicc.openmpi)
MPIRUN=$(command -v mpirun || command -v mpirun.openmpi)
"$MPICC" -O2 -DUSE_MPI -o "$out/osu_mpi" "$src/bench/osu_p2p.c" || exit 1
rlx() { env LD_LIBRARY_PATH="${DEPS:-}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" "$@"; }
bind=core
[ "$(nproc)" -lt 2 ] && bind=none
for mode in $MODES; do
  for r in $(seq 1 "$ROUNDS"); do
    # shellcheck disable=SC2086
    rlx env ${RLX_ENV:-} timeout 600 "$build/bin/rlxrun" -n 2 --no-tag-output \
      "$build/bin/osu_p2p_rlx" "$mode" "$MAXB" "$MINB" | sed "s/^[a-z]*/$mode rlx/"
    timeout 600 "$MPIRUN" --allow-run-as-root --oversubscribe --bind-to $bind --mca pml ob1 \
      --mca btl "${MPI_BTL:-vader,self}" -n 2 "$out/osu_mpi" "$mode" "$MAXB" "$MINB" |
      sed "s/^[A-Za-z_]*/$mode vader/"
  done
done | awk '{ m = ($1 == "latency") ? 1 : 2; print m, $2, $3, $4 }' >"$out/runs"
[ -n "${KEEP:-}" ] && cp "$out/runs" "$KEEP"
echo "(n=1: latency, us one way; n=2: bandwidth window, us per message)"
python3 "$src/bench/median_table.py" "$out/runs" rlx vader
