#!/bin/bash
# Every collective of bench/osu_coll.c on a job of one rank, rlxcoll (a
# pack from bench/pack_build.sh) against Open MPI (vader, self), rounds
# interleaved: the microseconds a call and their ratio (the call's own
# bytes copied, nothing else to wait for; rlx__call_alone).
#   DEPS=.devp/deps ROUNDS=5 BYTES=8 bench/one_rank.sh .devp/now
set -uo pipefail
P=${1:?a pack from bench/pack_build.sh}
src=$(cd "$(dirname "$0")/.." && pwd)
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
MPICC=$(command -v mpicc || command -v mpicc.openmpi)
MPIRUN=$(command -v mpirun || command -v mpirun.openmpi)
"$MPICC" -O2 -DUSE_MPI -o "$out/coll_mpi" "$src/bench/osu_coll.c" -I"$src/bench" || exit 1
B=${BYTES:-8}
for r in $(seq 1 "${ROUNDS:-5}"); do
  for c in allgather allgatherv alltoall alltoallv bcast gather gatherv scatter scatterv; do
    a=$(OSU_REPEAT=20 LD_LIBRARY_PATH="${DEPS:-}" timeout 60 "$P/bin/rlxrun" -n 1 --no-tag-output \
      "$P/bin/osu_coll_rlx" $c "$B" "$B" | awk '{print $3}')
    m=$(OSU_REPEAT=20 timeout 60 "$MPIRUN" --allow-run-as-root --mca pml ob1 --mca btl vader,self -n 1 \
      "$out/coll_mpi" $c "$B" "$B" | awk '{print $3}')
    echo "$c $a $m"
  done
done > "$out/runs"
printf "%-11s %9s %9s %7s   (us a call, medians of %s rounds)\n" call rlxcoll vader ratio "${ROUNDS:-5}"
awk '{ n[$1]++; a[$1, n[$1]] = $2; m[$1, n[$1]] = $3 }
  function med(v, k, c,   i, j, t, s) { for (i = 1; i <= c; i++) s[i] = v[k, i]
    for (i = 1; i <= c; i++) for (j = i + 1; j <= c; j++) if (s[j] < s[i]) { t = s[i]; s[i] = s[j]; s[j] = t }
    return c % 2 ? s[(c + 1) / 2] : (s[c / 2] + s[c / 2 + 1]) / 2 }
  END { for (k in n) { x = med(a, k, n[k]); y = med(m, k, n[k]); printf "%-11s %9.3f %9.3f %7.2f\n", k, x, y, x / y } }' "$out/runs" | sort
