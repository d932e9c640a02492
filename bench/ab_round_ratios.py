#!/usr/bin/env python3
"""Per-round ratios to vader from bench/ab_p2p_builds.sh's raw rounds (KEEP=FILE
keeps them): for each call (the messages' latency and window apart), rank
count and size, each build's time over vader's in the same round, as the
median of the rounds and their range. On a lent machine whose speed moves
from run to run, a ratio taken round by round is steadier
than the ratio of the medians; the range says how far one round can go.
  bench/ab_round_ratios.py ab.runs"""
import collections
import statistics
import sys

if len(sys.argv) != 2:
    sys.exit(__doc__)
seq = collections.defaultdict(list)  # ((call, ranks, bytes), build) -> times, round by round
builds = []
for line in open(sys.argv[1]):
    f = line.split()
    if len(f) < 6:
        continue
    try:  # (a rank's own messages run in between: "rlxrun: rank 0 (pid 9) exited ...")
        call = f[0] if f[1] == "x" else f[0] + "_" + f[1]  # (p2p_latency, p2p_bw: their modes apart)
        seq[((call, int(f[3]), int(f[4])), f[2])].append(float(f[5]))  # (call, ranks, bytes)
    except ValueError:
        continue
    if f[2] != "vader" and f[2] not in builds:
        builds.append(f[2])
keys = sorted({k for k, _ in seq})
print("per-round ratio to vader: median [min-max]")
for k in keys:
    vader = seq.get((k, "vader"), [])
    cells = []
    for b in builds:
        r = [x / v for x, v in zip(seq.get((k, b), []), vader)]
        if r:
            cells.append(f"{b} {statistics.median(r):.2f} [{min(r):.2f}-{max(r):.2f}]")
    print(f"{k[0]:11s} {k[1]:2d} {k[2]:8d}  " + "   ".join(cells))
