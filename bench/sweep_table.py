#!/usr/bin/env python3
"""Median table of allreduce sweep runs, written by bench/allreduce_sweep.sh
and bench/device_sweep.sh: files LIB.N.RUN holding "name bytes us" lines,
LIB in rlx, mpi, gloo (Debian's libgloo) or tgloo (PyTorch's Gloo).
    bench/sweep_table.py DIR N
Prints per size the medians, rlxcoll / Open MPI, and rlxcoll / the best
other library (below 1: rlxcoll is faster); writes DIR/median.LIB.N."""
import collections, glob, os, statistics, sys

out, n = sys.argv[1], sys.argv[2]
names = {"rlx": "rlxcoll", "mpi": "Open MPI", "gloo": "Gloo", "tgloo": "torch-Gloo"}
t = collections.defaultdict(list)
libs, runs = [], 0
for lib in names:
    files = sorted(glob.glob(f"{out}/{lib}.{n}.*"))
    if not files:
        continue
    libs.append(lib)
    runs = max(runs, len(files))
    for path in files:
        for line in open(path):
            parts = line.split()
            if len(parts) == 3:
                t[(lib, int(parts[1]))].append(float(parts[2]))
sizes = sorted({s for (l, s) in t if l == "rlx"})


def human(b):
    for unit, k in (("MiB", 1 << 20), ("KiB", 1 << 10)):
        if b >= k:
            return f"{b // k} {unit}"
    return f"{b} B"


print(f"\nn = {n}: median of {runs} run(s), microseconds per allreduce (float32 sum)")
print(f"{'size':>9} " + " ".join(f"{names[l]:>10}" for l in libs) + "  rlx/MPI  rlx/best")
for lib in libs:
    with open(f"{out}/median.{lib}.{n}", "w") as f:
        for s in sizes:
            if t[(lib, s)]:
                f.write(f"{lib} {s} {statistics.median(t[(lib, s)]):.2f}\n")
worst_mpi = worst_best = 0
for s in sizes:
    m = {l: statistics.median(t[(l, s)]) for l in libs if t[(l, s)]}
    others = [v for l, v in m.items() if l != "rlx"]
    best = min(others) if others else float("nan")
    r_mpi = m["rlx"] / m["mpi"] if "mpi" in m else float("nan")
    worst_mpi, worst_best = max(worst_mpi, r_mpi), max(worst_best, m["rlx"] / best)
    print(f"{human(s):>9} " + " ".join(f"{m.get(l, float('nan')):10.1f}" for l in libs) +
          f"  {r_mpi:7.2f}  {m['rlx'] / best:8.2f}")
print(f"n = {n}: worst rlxcoll/Open MPI {worst_mpi:.2f}, worst rlxcoll/best other {worst_best:.2f}")
