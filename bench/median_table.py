#!/usr/bin/env python3
"""Medians of interleaved benchmark rounds, per rank count and size.

Reads lines "N VARIANT BYTES US" (what bench/ab_builds.sh and
bench/shm_vs_vader.sh collect from osu_allreduce) and prints, per N, the
median of each variant, NUM/DEN and the spread of both.
  median_table.py RUNS NUM DEN [OTHER ...]
"""
import collections
import statistics
import sys

runs, num, den, others = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
d = collections.defaultdict(list)
for line in open(runs):
    f = line.split()
    if len(f) == 4:
        d[(int(f[0]), f[1], int(f[2]))].append(float(f[3]))
cols = [num] + others + [den]
for n in sorted({k[0] for k in d}):
    print(f"n={n}   bytes" + "".join(f"{v + ' us':>12}" for v in cols) +
          f"{num + '/' + den:>12}   (spread {num} | {den})")
    for s in sorted({k[2] for k in d if k[0] == n}):
        a, b = d[(n, num, s)], d[(n, den, s)]
        if not a or not b:
            continue
        med = [statistics.median(d[(n, v, s)]) if d[(n, v, s)] else float("nan") for v in cols]
        print(f"{s:>12}" + "".join(f"{m:12.2f}" for m in med) + f"{med[0] / med[-1]:12.2f}"
              f"   ({min(a):.1f}-{max(a):.1f} | {min(b):.1f}-{max(b):.1f})")
