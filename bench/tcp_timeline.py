#!/usr/bin/env python3
"""Read bench/tcp_timeline.so's files: per process, over the middle half of
its calls (a call: one send to the next), the medians (and means) of
  send  the sending syscall (on loopback it also delivers to the peer),
  wait  from its return to the return of the last read before the next send,
  own   from that read to the next send: the program's own time,
  reads recv() calls that found nothing, per call.
Files with fewer than 1000 calls (launchers, helpers) are skipped.
  bench/tcp_timeline.py FILE...   (LABEL=name prefixes each line)"""
import os
import statistics as st
import sys


def calls(path):
    rate, ev = None, []
    with open(path) as f:
        for line in f:
            if line.startswith("#"):
                rate = float(line.split()[-1])
                continue
            e, t = line.split()
            ev.append((e, int(t)))
    ws = [i for i, (e, _) in enumerate(ev) if e == "w"]
    ws = ws[len(ws) // 4: 3 * len(ws) // 4]
    out = []
    for a, b in zip(ws, ws[1:]):
        seg = ev[a:b]
        ends = [t for e, t in seg if e == "W"]
        reads = [t for e, t in seg if e == "R"]
        if not ends or not reads:
            continue
        out.append(((ends[0] - seg[0][1]) / rate, (reads[-1] - ends[0]) / rate,
                    (ev[b][1] - reads[-1]) / rate, sum(e == "e" for e, _ in seg),
                    (ev[b][1] - seg[0][1]) / rate))
    return out


label = os.environ.get("LABEL", "")
for path in sys.argv[1:]:
    c = calls(path)
    if len(c) < 1000:
        continue
    col = list(zip(*c))
    m = lambda k: f"{st.median(col[k]):.2f} ({st.mean(col[k]):.2f})"
    print(f"{label}{os.path.basename(path)}: {len(c)} calls, us median (mean): period {m(4)}, "
          f"send {m(0)}, wait {m(1)}, own {m(2)}; empty reads {st.mean(col[3]):.2f}")
