#!/usr/bin/env python3
"""Where a torch all_to_all_single over "rlx" spends its time beyond the
C call: the same exchange of CPU float32 tensors (a block of BYTES to every
rank, even splits) through the rlxcoll module itself (the C call with the
GIL released), through torch.distributed on "rlx", and on "gloo";
interleaved, ROUNDS rounds, the slowest rank's average per call, medians.
    rlxrun -n 8 python3 bench/torch_a2a_overhead.py [bytes [rounds]]
"""
import statistics
import sys
import time

import torch
import torch.distributed as dist

import rlxcoll
import rlxcoll.torch  # noqa: F401

nbytes = int(sys.argv[1]) if len(sys.argv) > 1 else 2 << 20
rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 5
torch.set_num_threads(1)
dist.init_process_group("rlx")
gloo = dist.new_group(backend="gloo")
rank, size = dist.get_rank(), dist.get_world_size()
n = max(1, nbytes // 4)
inp, out = torch.ones(n * size), torch.zeros(n * size)
world = rlxcoll.world()
iters = max(5, min(1000, (32 << 20) // (nbytes * size)))


def module():
    world.alltoall(inp.numpy(), out.numpy())


def backend(group):
    return lambda: dist.all_to_all_single(out, inp, group=group)


def timed(fn):
    for _ in range(max(2, iters // 10)):
        fn()
    dist.barrier()
    t0 = time.perf_counter()
    for _ in range(iters):
        fn()
    t = torch.tensor([(time.perf_counter() - t0) / iters * 1e6], dtype=torch.float64)
    dist.all_reduce(t, op=dist.ReduceOp.MAX)
    return float(t[0])


ways = [("module", module), ("rlx", backend(None)), ("gloo", backend(gloo))]
got = {k: [] for k, _ in ways}
for _ in range(rounds):
    for k, fn in ways:
        got[k].append(timed(fn))
if rank == 0:
    med = {k: statistics.median(v) for k, v in got.items()}
    print("# torch %s, %d ranks, a block of %d bytes, us per call (median of %d rounds)" %
          (torch.__version__, size, nbytes, rounds))
    print("module %.1f  rlx %.1f  gloo %.1f  rlx/module %.2f  rlx/gloo %.2f  module/gloo %.2f" %
          (med["module"], med["rlx"], med["gloo"], med["rlx"] / med["module"],
           med["rlx"] / med["gloo"], med["module"] / med["gloo"]), flush=True)
dist.destroy_process_group()
