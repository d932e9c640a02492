#!/usr/bin/env python3
"""Plot bus bandwidth against message size for several runs, with gnuplot.

    bench/plot_busbw.py -o out.svg [--png out.png] [--nranks N] [--title T] LABEL=FILE ...

FILE is rlx-bench --json output, or lines "name bytes time_us" as written by
bench/osu_allreduce (rlxcoll or Open MPI) and bench/gloo_allreduce; for those
busbw uses the allreduce factor 2(n-1)/n with --nranks.
"""
import argparse, json, os, subprocess, sys, tempfile


def load(path, nranks):
    text = open(path).read().strip()
    pts = []
    if text.startswith("["):
        for row in json.loads(text):
            pts.append((row["size"], row["busbw"]))
        return pts
    for line in text.splitlines():
        parts = line.split()
        if len(parts) != 3 or line.startswith("#"):
            continue
        size, us = int(parts[1]), float(parts[2])
        algbw = size / us / 1e3  # GB/s
        pts.append((size, algbw * 2 * (nranks - 1) / nranks))
    return pts


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("-o", "--svg", required=True)
    ap.add_argument("--png")
    ap.add_argument("--nranks", type=int, default=2)
    ap.add_argument("--title", default="allreduce, float32 sum")
    ap.add_argument("runs", nargs="+", help="LABEL=FILE")
    a = ap.parse_args()
    tmp = tempfile.mkdtemp()
    plots = []
    for i, run in enumerate(a.runs):
        label, _, path = run.partition("=")
        pts = load(path, a.nranks)
        if not pts:
            sys.exit(f"plot_busbw: no data in {path}")
        dat = os.path.join(tmp, f"{i}.dat")
        with open(dat, "w") as f:
            for size, bw in pts:
                f.write(f"{size} {bw}\n")
        plots.append(f"'{dat}' using 1:2 with linespoints lw 2 title '{label}'")
    script = f"""
set terminal svg size 900,560 dynamic enhanced font 'sans,12' background '#ffffff'
set output '{a.svg}'
set title '{a.title}, {a.nranks} ranks'
set logscale x 2
set format x '%.0b%B'
set xlabel 'message size (bytes)'
set ylabel 'bus bandwidth (GB/s)'
set key top left
set grid
plot {", ".join(plots)}
"""
    subprocess.run(["gnuplot"], input=script, text=True, check=True)
    if a.png:
        subprocess.run(["rsvg-convert", "-o", a.png, a.svg], check=True)
    print(f"plot_busbw: wrote {a.svg}" + (f" and {a.png}" if a.png else ""))


if __name__ == "__main__":
    main()
