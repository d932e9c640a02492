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
python3 - "$out/runs" <<'PY'
import collections, statistics, sys
d = collections.defaultdict(list)
for line in open(sys.argv[1]):
    f = line.split()
    if len(f) == 4:
        d[(int(f[0]), f[1], int(f[2]))].append(float(f[3]))
for n in sorted({k[0] for k in d}):
    print(f"n={n}   bytes      new us      old us   new/old   (spread new | old)")
    for s in sorted({k[2] for k in d if k[0] == n}):
        a, b = d[(n, "new", s)], d[(n, "old", s)]
        if not a or not b:
            continue
        ma, mb = statistics.median(a), statistics.median(b)
        print(f"{s:>12} {ma:11.2f} {mb:11.2f} {ma / mb:9.2f}   ({min(a):.1f}-{max(a):.1f} | {min(b):.1f}-{max(b):.1f})")
PY
