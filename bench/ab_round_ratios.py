#!/usr/bin/env python3
"""Per-round ratios to vader from bench/ab_p2p_builds.sh's raw rounds (KEEP=FILE
keeps them): for each call and size, each build's time over vader's in the
same round, as the median of the rounds and their range. On a lent machine
whose speed moves from run to run, a ratio taken round by round is steadier
than the ratio of the medians; the range says how far one round can go.
  bench/ab_round_ratios.py ab.runs"""
import collections
import statistics
import sys

if len(sys.argv) != 2:
    sys.exit(__doc__)
seq = collections.defaultdict(list)  # ((call, bytes), build) -> times, round by round
builds = []
for line in open(sys.argv[1]):
    f = line.split()
    if len(f) < 6:
        continue
    seq[((f[0], f[4]), f[2])].append(float(f[5]))
    if f[2] != "vader" and f[2] not in builds:
        builds.append(f[2])
keys = sorted({k for k, _ in seq}, key=lambda k: (k[0], int(k[1])))
print("per-round ratio to vader: median [min-max]")
for k in keys:
    vader = seq.get((k, "vader"), [])
    cells = []
    for b in builds:
        r = [x / v for x, v in zip(seq.get((k, b), []), vader)]
        if r:
            cells.append(f"{b} {statistics.median(r):.2f} [{min(r):.2f}-{max(r):.2f}]")
    print(f"{k[0]:9s} {k[1]:>5s}  " + "   ".join(cells))
