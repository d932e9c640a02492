#!/bin/bash
# Two builds of rlxcoll interleaved, round by round, on the same sizes: the
# before/after check of a change that must not move the numbers (issue 12's
# reshaping). Each build is a folder with bin/rlxrun, bin/osu_allreduce_rlx
# and lib/ (made with LDFLAGS=-Wl,-rpath,'$ORIGIN/../lib', so it runs on a
# machine without the build tree); DEPS holds the runtime libraries the
# machine may lack. Prints per size the median of each and new/old.
#   DEPS=.devb/deps NS="2 4 8 16" ROUNDS=3 MAXB=16777216 \
#     bench/ab_builds.sh .devb/new .devb/old
set -uo pipefail
new=${1:?new build folder} old=${2:?old build folder}
NS=${NS:-"2 4"}
ROUNDS=${ROUNDS:-3}
MAXB=${MAXB:-16777216}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
export LD_LIBRARY_PATH="${DEPS:-}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
for n in $NS; do
  for r in $(seq 1 "$ROUNDS"); do
    for v in new old; do
      dir=$new
      [ $v = old ] && dir=$old
      timeout 300 "$dir/bin/rlxrun" -n "$n" --no-tag-output "$dir/bin/osu_allreduce_rlx" "$MAXB" |
        sed "s/^[a-z]*/$n $v/"
    done
  done
done >"$out/runs"
python3 "$(dirname "$0")/median_table.py" "$out/runs" new old
