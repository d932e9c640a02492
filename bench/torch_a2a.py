#!/usr/bin/env python3
"""torch.distributed.all_to_all_single over the "rlx" backend against
"gloo", side by side in one run (as bench/torch_p2p.py: the default group
is rlx, a gloo group over the same ranks): CPU float32, a block of BYTES
to every rank (even splits), and uneven splits (rank r sends (r + q) % 3 + 1
blocks' worth of rows, scaled to BYTES, to rank q: alltoallv). Each
round's time is the slowest rank's average; medians of ROUNDS rounds
alternating, and their ratio.
    rlxrun -n 4 python3 bench/torch_a2a.py [max_bytes [rounds]]
"""
import time

import torch
import torch.distributed as dist

from torch_bench import medians, start

max_bytes, rounds, gloo, rank, size = start(4 << 20)


def case(nbytes, uneven):
    """(input, output, input splits, output splits) for a block of nbytes."""
    n = max(1, nbytes // 4)
    if not uneven:
        return torch.ones(n * size), torch.zeros(n * size), None, None
    send = [n * ((rank + q) % 3 + 1) for q in range(size)]
    recv = [n * ((q + rank) % 3 + 1) for q in range(size)]
    return torch.ones(sum(send)), torch.zeros(sum(recv)), recv, send


def timed(args, group, iters):
    inp, out, osp, isp = args
    for _ in range(max(2, iters // 10)):
        dist.all_to_all_single(out, inp, osp, isp, group=group)
    dist.barrier()
    t0 = time.perf_counter()
    for _ in range(iters):
        dist.all_to_all_single(out, inp, osp, isp, group=group)
    t = torch.tensor([(time.perf_counter() - t0) / iters * 1e6], dtype=torch.float64)
    dist.all_reduce(t, op=dist.ReduceOp.MAX)
    return float(t[0])


if rank == 0:
    print("# torch %s; all_to_all_single of float32 on %d ranks, us per call (median of %d "
          "rounds); bytes: one block" % (torch.__version__, size, rounds))
    print("%10s %8s %12s %12s %10s" % ("bytes", "splits", "rlx", "gloo", "rlx/gloo"), flush=True)
nbytes = 8
while nbytes <= max_bytes:
    for uneven in (False, True):
        args = case(nbytes, uneven)
        iters = max(5, min(1000, (32 << 20) // (nbytes * size)))
        mr, mg = medians(lambda group: timed(args, group, iters), gloo, rounds)
        if rank == 0:
            print("%10d %8s %12.2f %12.2f %10.2f" % (nbytes, "uneven" if uneven else "even", mr,
                                                     mg, mr / mg), flush=True)
    nbytes *= 8
dist.destroy_process_group()
