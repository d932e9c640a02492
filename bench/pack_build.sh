#!/bin/bash
# Pack a build tree's rlxrun, librlxcoll, OSU-style allreduce, collective and point-to-point clients,
# grow_bench, overlap_bench and tcp_floor
# into a folder that runs without the tree (the layout bench/ab_builds.sh
# and bench/shm_vs_vader.sh take; carried to the lent machines):
#   bench/pack_build.sh build .devb/now
set -euo pipefail
build=${1:?build tree} dest=${2:?destination folder}
src=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$dest/bin" "$dest/lib"
cp -L "$build/lib/.libs/librlxcoll.so.0" "$dest/lib/"
cp "$build/bin/rlxrun/rlxrun" "$dest/bin/"
cc -O2 -o "$dest/bin/osu_allreduce_rlx" "$src/bench/osu_allreduce.c" -I"$src/include" \
  "$dest/lib/librlxcoll.so.0" -Wl,-rpath,'$ORIGIN/../lib'
cc -O2 -o "$dest/bin/osu_p2p_rlx" "$src/bench/osu_p2p.c" -I"$src/include" \
  "$dest/lib/librlxcoll.so.0" -Wl,-rpath,'$ORIGIN/../lib'
cc -O2 -o "$dest/bin/osu_coll_rlx" "$src/bench/osu_coll.c" -I"$src/include" \
  "$dest/lib/librlxcoll.so.0" -Wl,-rpath,'$ORIGIN/../lib'
cc -O2 -o "$dest/bin/grow_bench" "$src/bench/grow_bench.c" -I"$src/include" \
  "$dest/lib/librlxcoll.so.0" -Wl,-rpath,'$ORIGIN/../lib'
cc -O2 -o "$dest/bin/overlap_bench" "$src/bench/overlap_bench.c" -I"$src/include" \
  "$dest/lib/librlxcoll.so.0" -Wl,-rpath,'$ORIGIN/../lib'
cc -O2 -o "$dest/bin/tcp_floor" "$src/bench/tcp_floor.c" -lisal
