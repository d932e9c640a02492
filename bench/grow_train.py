#!/usr/bin/env python3
"""The pause a joiner causes train --elastic, from the leader's --log-json.

Reads the "step" records (time_s: when the leader logged the step) and
the "grow" ones (joined 0: the first half of an admission, the welcome;
joined > 0: the admission, after which train sends the joiners the
leader's state). A step's time is the time since the previous record of
a step; the welcome's and the admission's costs fall in the step after
their record. The pause is the sum, over the steps from the welcome to
three steps after the admission, of each step's time beyond the median
step of its rank count (medians outside that window, and outside the
steps that follow an epoch's end, whose evaluation they include); a step
that follows an epoch's end is measured against the median of the other
such steps of its rank count (left out, and said, where there is none);
the control is the same sum over as many steps just before the welcome:
what the pause would read with nobody joining.
  grow_train.py LOG
"""
import json
import statistics
import sys

steps, grows, epochs = [], [], set()
for line in open(sys.argv[1]):
    rec = json.loads(line)
    if rec["type"] == "step":
        steps.append((rec["step"], rec["time_s"]))
    elif rec["type"] == "grow":
        grows.append(rec)
    elif rec["type"] == "epoch":
        epochs.add(rec["step"] + 1)  # the next step includes the evaluation
welcome = next((g for g in grows if g["joined"] == 0), None)
admit = next((g for g in grows if g["joined"] > 0), None)
if welcome is None or admit is None:
    sys.exit("grow_train.py: no welcome and admission in %s" % sys.argv[1])
dt = {s: t - steps[i - 1][1] for i, (s, t) in enumerate(steps) if i > 0 and s == steps[i - 1][0] + 1}
first, last = welcome["step"] + 1, admit["step"] + 4
size_before = admit["ranks"] - admit["joined"]


def size(s):
    return admit["ranks"] if s > admit["step"] else size_before


def median(sz):
    v = [d for s, d in dt.items() if s > 20 and s not in epochs and not first <= s <= last and size(s) == sz]
    return statistics.median(v) if v else float("nan")


def median_ends(sz):
    v = [d for s, d in dt.items() if s > 20 and s in epochs and not first <= s <= last and size(s) == sz]
    return statistics.median(v) if v else None


med = {size_before: median(size_before), admit["ranks"]: median(admit["ranks"])}
ends = {size_before: median_ends(size_before), admit["ranks"]: median_ends(admit["ranks"])}


def base(s):
    return ends[size(s)] if s in epochs else med[size(s)]


window = [s for s in range(first, last + 1) if s in dt and base(s) is not None]
pause = sum(dt[s] - base(s) for s in window)
ctl_steps = [s for s in range(first - 8 - len(window), first - 8) if s in dt and s > 20 and base(s) is not None]
control = sum(dt[s] - base(s) for s in ctl_steps)
flag = ""
if any(s in epochs for s in range(first, last + 1)):
    flag = " (an epoch's end in the window: its step %s)" % (
        "against the other epochs' ends" if all(base(s) is not None for s in range(first, last + 1) if s in epochs)
        else "left out")
print("%d -> %d ranks: median step %.1f -> %.1f us; pause %.1f us (%.2f steps): the welcome's step "
      "+%.1f us, %d step(s) later the admission's +%.1f us; the %d steps before: %+.1f us%s" % (
          size_before, admit["ranks"], med[size_before] * 1e6, med[admit["ranks"]] * 1e6, pause * 1e6,
          pause / med[admit["ranks"]], (dt.get(first, 0) - (base(first) or 0)) * 1e6,
          admit["step"] - welcome["step"], (dt.get(admit["step"] + 1, 0) - (base(admit["step"] + 1) or 0)) * 1e6,
          len(ctl_steps), control * 1e6, flag))
