#!/bin/bash
# rlxcoll on one host (shared memory, the default) against Open MPI's
# shared-memory path (--mca pml ob1 --mca btl vader,self), and rlxcoll
# variants (COLS: name:VAR=value[+VAR=value] ...; default point-to-point algorithms
# over the shared-memory rings, RLX_SHM_COLL=off), interleaved round by
# round on the same sizes (OSU-style float32 sum, bench/osu_allreduce.c).
# BUILD is a folder with bin/rlxrun, bin/osu_allreduce_rlx and lib/
# (bench/pack_build.sh makes one; it runs on a machine without the build
# tree); DEPS holds runtime libraries the machine may lack. Prints per
# size the median of each and rlxcoll/vader. RLX_ENV sets variables for
# the main rlxcoll column, MPI_BTL Open MPI's transports (the TCP path:
# RLX_ENV=RLX_TRANSPORT=tcp MPI_BTL=tcp,self COLS=). MINB (a power of two,
# default 8) and MAXB bound the sizes. COLL=alltoall (alltoallv, gather,
# scatter, allgatherv) sweeps that collective instead (bench/osu_coll.c:
# the size is one rank's block; MAXB default 4 MiB; no COLS).
#   DEPS=.devb/deps NS="2 4 8" ROUNDS=3 MAXB=67108864 bench/shm_vs_vader.sh .devb/now
#   COLL=alltoall NS="2 4 8 16" bench/shm_vs_vader.sh .devb/now
set -uo pipefail
build=${1:?build folder}
src=$(cd "$(dirname "$0")/.." && pwd)
NS=${NS:-"2 4"}
ROUNDS=${ROUNDS:-3}
COLL=${COLL:-allreduce}
prog=osu_allreduce args=() maxb=67108864 cols="p2p:RLX_SHM_COLL=off"
[ "$COLL" != allreduce ] && prog=osu_coll args=("$COLL") maxb=4194304 cols=
MAXB=${MAXB:-$maxb}
MINB=${MINB:-8}
COLS=${COLS-$cols}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
MPICC=$(command -v mpicc || command -v mpicc.openmpi)
MPIRUN=$(command -v mpirun || command -v mpirun.openmpi)
"$MPICC" -O2 -DUSE_MPI -o "$out/osu_mpi" "$src/bench/$prog.c" || exit 1
cores=$(nproc)
# Only our binaries get DEPS: Open MPI's mpirun must not pick up the PMIx
# or libevent carried for them.
rlx() { env LD_LIBRARY_PATH="${DEPS:-}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" "$@"; }
for n in $NS; do
  bind=core # as rlxrun binds; Open MPI refuses core binding past the cores
  [ "$n" -gt "$cores" ] && bind=none
  for r in $(seq 1 "$ROUNDS"); do
    # shellcheck disable=SC2086
    rlx env ${RLX_ENV:-} timeout 600 "$build/bin/rlxrun" -n "$n" --no-tag-output \
      "$build/bin/${prog}_rlx" "${args[@]}" "$MAXB" "$MINB" | sed "s/^[a-z]*/$n shm/"
    for col in $COLS; do
      # shellcheck disable=SC2046
      rlx env $(echo "${col#*:}" | tr '+' ' ') timeout 600 "$build/bin/rlxrun" -n "$n" --no-tag-output \
        "$build/bin/${prog}_rlx" "${args[@]}" "$MAXB" "$MINB" | sed "s/^[a-z]*/$n ${col%%:*}/"
    done
    timeout 600 "$MPIRUN" --allow-run-as-root --oversubscribe --bind-to $bind --mca pml ob1 \
      --mca btl "${MPI_BTL:-vader,self}" -n "$n" "$out/osu_mpi" "${args[@]}" "$MAXB" "$MINB" |
      sed "s/^[A-Za-z_]*/$n vader/"
  done
done >"$out/runs"
[ -n "${KEEP:-}" ] && cp "$out/runs" "$KEEP"
# shellcheck disable=SC2086
python3 "$src/bench/median_table.py" "$out/runs" shm vader $(for c in $COLS; do echo "${c%%:*}"; done)
