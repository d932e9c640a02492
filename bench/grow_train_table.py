#!/usr/bin/env python3
"""Summary of bench/grow_train.sh runs: per rank count and build, the
median pause in steps, its quartiles, how many runs lost less than one
step, the most, and the medians of the welcome's step, the admission's
step and the control (microseconds). A line "# build: NAME ..." before a
run's lines names its build (interleaved A/B runs print one per round);
without any, every run is "head". Several files pool; --only B1,B2
keeps those builds' runs, --as NAME counts them all as one.
  grow_train_table.py [--only B1,B2] [--as NAME] OUT [OUT...]
"""
import re
import statistics
import sys
from collections import defaultdict

RUN = re.compile(r"n=(\d+) round.*pause \S+ us \((\S+) steps\): the welcome's step \+?(\S+) us, "
                 r"\d+ step\(s\) later the admission's \+?(\S+) us; the \d+ steps before: (\S+) us")
args, only, alias = sys.argv[1:], None, None
while args and args[0] in ("--only", "--as") and len(args) > 1:
    if args[0] == "--only":
        only = set(args[1].split(","))
    else:
        alias = args[1]
    args = args[2:]
runs = defaultdict(list)
for path in args:
    build = "head"
    for line in open(path):
        m = re.match(r"#\s*build: (\S+)", line)
        if m:
            build = m.group(1)
            continue
        m = RUN.match(line)
        if m and (only is None or build in only):
            runs[(int(m.group(1)), alias or build)].append([float(x) for x in m.groups()[1:]])
if not runs:
    sys.exit("grow_train_table.py: no runs in %s" % " ".join(args))
print("ranks  build     runs  pause (steps): median  quartiles    below 1  most   "
      "welcome  admission  control (us, medians)")
for (n, build), rs in sorted(runs.items()):
    p = sorted(r[0] for r in rs)
    q = statistics.quantiles(p, n=4) if len(p) > 1 else [p[0], p[0], p[0]]
    med = [statistics.median(r[k] for r in rs) for k in (1, 2, 3)]
    print("%5d  %-8s %5d  %21.2f  %4.2f-%-5.2f  %3d/%-3d  %5.2f  %7.0f  %9.0f  %7.0f" % (
        n, build, len(p), statistics.median(p), q[0], q[2], sum(x < 1 for x in p), len(p), p[-1],
        med[0], med[1], med[2]))
