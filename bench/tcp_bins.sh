# Sourced by bench/tcp_floor.sh and bench/tcp_timeline.sh (src, build set):
# the binaries they run, a folder of bench/pack_build.sh's with PACK=DIR
# (the lent machines) or else the build tree's, made now; and rlx, which
# runs ours with DEPS's libraries first (Open MPI's mpirun must not pick
# up the PMIx carried for them).
if [ -n "${PACK:-}" ]; then
  RLXRUN=$PACK/bin/rlxrun OSU=$PACK/bin/osu_allreduce_rlx FLOOR=$PACK/bin/tcp_floor
else
  make -C "$build" bench/osu_allreduce_rlx bench/tcp_floor >/dev/null
  RLXRUN=$build/bin/rlxrun/rlxrun OSU=$build/bench/osu_allreduce_rlx FLOOR=$build/bench/tcp_floor
fi
rlx() { env LD_LIBRARY_PATH="${DEPS:-}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" "$@"; }
