#!/bin/bash
# The allreduce sweep on a machine with more cores (the lent GPU machine):
# rlxcoll, Open MPI's TCP path, and PyTorch's Gloo backend, side by side,
# from binaries built elsewhere (BIN holds rlxrun and osu_allreduce_rlx;
# LIB the runtime libraries they need, if the machine lacks them).
# RUNS rlxcoll and Open MPI runs each, interleaved (default 1), and
# GLOO_RUNS PyTorch Gloo runs (default 1, each at most GLOO_TIMEOUT s);
# RUN numbers the files when runs are spread over several calls.
#   BIN=... LIB=... OUT=dir NS="4 8 16" RUN=1 MAXB=67108864 bench/device_sweep.sh
set -uo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
: "${BIN:?}" "${OUT:?}"
NS=${NS:-"4 8 16"}
RUN=${RUN:-1}
RUNS=${RUNS:-1}
GLOO_RUNS=${GLOO_RUNS:-1}
GLOO_TIMEOUT=${GLOO_TIMEOUT:-300}
MAXB=${MAXB:-67108864}
# Only for our binaries: Open MPI's mpirun must not pick up the PMIx or
# libevent that LIB carries for them.
RLXENV=(env LD_LIBRARY_PATH="${LIB:-}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}")
mkdir -p "$OUT"
MPICC=$(command -v mpicc || command -v mpicc.openmpi || true)
MPIRUN=$(command -v mpirun || command -v mpirun.openmpi || true)
[ -n "$MPICC" ] && "$MPICC" -O2 -DUSE_MPI -o "$OUT/osu_mpi" "$src/bench/osu_allreduce.c"
for n in $NS; do
  for i in $(seq 1 "$RUNS"); do
    tag=$RUN.$i
    "${RLXENV[@]}" timeout 300 "$BIN/rlxrun" -n "$n" --no-tag-output "$BIN/osu_allreduce_rlx" "$MAXB" >"$OUT/rlx.$n.$tag"
    if [ -x "$OUT/osu_mpi" ]; then
      timeout 300 "$MPIRUN" --allow-run-as-root --oversubscribe --mca pml ob1 --mca btl tcp,self \
        -n "$n" "$OUT/osu_mpi" "$MAXB" >"$OUT/mpi.$n.$tag"
    fi
  done
  for i in $(seq 1 "$GLOO_RUNS"); do
    port=$((29000 + n + 100 * RUN + 1000 * i))
    # Not bound to a core: Gloo's own threads (its TCP event loop) would share
    # the caller's core, and it ran 10-20x slower so (5 ms at 16 B, 4 ranks).
    "${RLXENV[@]}" timeout "$GLOO_TIMEOUT" "$BIN/rlxrun" -n "$n" --bind-to none --no-tag-output python3 \
      "$src/bench/torch_gloo_allreduce.py" "$port" "$MAXB" 2>/dev/null |
      sed 's/^torch-gloo/tgloo/' >"$OUT/tgloo.$n.$RUN.$i"
  done
  python3 "$src/bench/sweep_table.py" "$OUT" "$n"
done
