#!/usr/bin/env python3
"""torch.distributed.all_reduce over the "rlx" backend (rlxcoll.torch)
against "gloo", side by side in one run: the default group is rlx, a second
group over the same ranks is gloo (on the store rlxcoll's rendezvous gave),
and for every size the two alternate, ROUNDS rounds, each round's time the
slowest rank's average over a timed loop; medians per size and their
ratio. CPU float32 tensors, 8 B to MAX bytes.
    rlxrun -n 4 python3 bench/torch_rlx_gloo.py [max_bytes [rounds]] [--direct]
BENCH_ITERS caps the timed calls per size (default 2000, fewer at large sizes).

--direct: the default group is gloo, and rlx is
rlxcoll.torch.ProcessGroupRlx called directly (pg.allreduce([t]).wait():
what dist.all_reduce calls).
"""
import os
import statistics
import sys
import time

import torch
import torch.distributed as dist

import rlxcoll.torch  # noqa: F401

direct = "--direct" in sys.argv
args = [a for a in sys.argv[1:] if a != "--direct"]
max_bytes = int(args[0]) if len(args) > 0 else 64 << 20
rounds = int(args[1]) if len(args) > 1 else 3
ITERS = int(os.environ.get("BENCH_ITERS", "2000"))  # timed calls per size at most
torch.set_num_threads(1)
if direct:
    import rlxcoll
    dist.init_process_group("gloo")  # env:// wired by rlxcoll under rlxrun
    gloo = None
    rlx = rlxcoll.torch.ProcessGroupRlx(rlxcoll.world().dup())
else:
    dist.init_process_group("rlx")
    gloo = dist.new_group(backend="gloo")
    rlx = None
rank, size = dist.get_rank(), dist.get_world_size()
buf = torch.arange(max_bytes // 4, dtype=torch.float32) % 1000 * 0.5


def allreduce(t, group):
    if group == "rlx-direct":
        rlx.allreduce([t], dist.AllreduceOptions()).wait()
    else:
        dist.all_reduce(t, group=group)


def timed(t, group, iters):
    for _ in range(max(2, iters // 10)):
        allreduce(t, group)
    dist.barrier()
    t0 = time.perf_counter()
    for _ in range(iters):
        allreduce(t, group)
    avg = torch.tensor([(time.perf_counter() - t0) / iters * 1e6], dtype=torch.float64)
    dist.all_reduce(avg, op=dist.ReduceOp.MAX)
    return avg.item()


if rank == 0:
    print("# torch %s, %d ranks; all_reduce of float32, us (median of %d rounds)%s" %
          (torch.__version__, size, rounds, "; rlx called directly" if direct else ""))
    print("%10s %12s %12s %10s" % ("bytes", "rlx", "gloo", "rlx/gloo"), flush=True)
nbytes = 8
while nbytes <= max_bytes:
    t = buf[: nbytes // 4].clone()
    iters = max(5, min(ITERS, (128 << 20) // nbytes))
    r, g = [], []
    for _ in range(rounds):
        r.append(timed(t, "rlx-direct" if direct else None, iters))
        g.append(timed(t, gloo, iters))
    if rank == 0:
        mr, mg = statistics.median(r), statistics.median(g)
        print("%10d %12.2f %12.2f %10.2f" % (nbytes, mr, mg, mr / mg), flush=True)
    nbytes *= 4 if nbytes < 1 << 20 else 2
dist.destroy_process_group()
