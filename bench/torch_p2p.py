#!/usr/bin/env python3
"""torch.distributed send/recv over the "rlx" backend (rlxcoll.torch)
against "gloo", side by side in one run (as bench/torch_rlx_gloo.py: the
default group is rlx, a gloo group over the same ranks): a ping-pong
between ranks 0 and 1 of CPU float32 tensors (dist.send, then dist.recv;
one way, us). Sizes 8 B
to MAX bytes, ROUNDS rounds alternating, medians and their ratio.
    rlxrun -n 2 python3 bench/torch_p2p.py [max_bytes [rounds]]
"""
import time

import torch
import torch.distributed as dist

from torch_bench import medians, start

max_bytes, rounds, gloo, rank, size = start(16 << 20)
buf = torch.arange(max_bytes // 4, dtype=torch.float32) % 1000 * 0.5


def pingpong(t, group, iters):
    for _ in range(iters):
        if rank == 0:
            dist.send(t, 1, group=group)
            dist.recv(t, 1, group=group)
        elif rank == 1:
            dist.recv(t, 0, group=group)
            dist.send(t, 0, group=group)


def timed(t, group, iters):
    pingpong(t, group, max(2, iters // 10))
    dist.barrier()
    t0 = time.perf_counter()
    pingpong(t, group, iters)
    return (time.perf_counter() - t0) / iters / 2 * 1e6


if rank == 0:
    print("# torch %s; send/recv ping-pong of float32 between ranks 0 and 1, us one way "
          "(median of %d rounds)" % (torch.__version__, rounds))
    print("%10s %12s %12s %10s" % ("bytes", "rlx", "gloo", "rlx/gloo"), flush=True)
nbytes = 8
while nbytes <= max_bytes:
    t = buf[: nbytes // 4].clone()
    iters = max(5, min(2000, (64 << 20) // nbytes))
    mr, mg = medians(lambda group: timed(t, group, iters), gloo, rounds)
    if rank == 0:
        print("%10d %12.2f %12.2f %10.2f" % (nbytes, mr, mg, mr / mg), flush=True)
    nbytes *= 4 if nbytes < 1 << 20 else 2
dist.destroy_process_group()
