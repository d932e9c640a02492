#!/bin/bash
# bench/cell_micro.c's variants interleaved, ROUNDS rounds (default 5),
# medians and ranges in us per step: the small-call protocol of the
# shared segment alone, with and without work around it, 8 cells against
# 64 and the sender's wait for half of them (--slack).
#   bench/cell_micro.sh [ROUNDS]
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
cc -O2 -Wall -Wextra -o "$out/cell_micro" "$src/bench/cell_micro.c"
variants=("--solo --alu 50" "--solo --stores 50" "--solo --stores 200" ""
  "--mfence" "--alu 50" "--stores 50" "--stores 75" "--stores 200"
  "--cells 64 --slack" "--alu 50 --cells 64 --slack" "--stores 50 --cells 64 --slack"
  "--stores 200 --cells 64 --slack" "--stores 200 --side root" "--stores 200 --side sender"
  "--stores 200 --side root --prefetch 1" "--stores 200 --own-first"
  "--stores 200 --cells 64 --slack --evict")
for r in $(seq 1 "${1:-5}"); do
  for v in "${variants[@]}"; do
    # shellcheck disable=SC2086
    echo "$v|$("$out/cell_micro" $v --steps 1000000 | sed 's/.*: //; s/ us.*//')"
  done
done | python3 -c '
import collections, statistics, sys
d = collections.OrderedDict()
for line in sys.stdin:
    v, t = line.rstrip("\n").split("|")
    d.setdefault(v, []).append(float(t))
for v, ts in d.items():
    name = v if v else "(the protocol alone: 8 cells)"
    print("%-48s %.3f us/step  [%.3f-%.3f]" % (name, statistics.median(ts), min(ts), max(ts)))'
