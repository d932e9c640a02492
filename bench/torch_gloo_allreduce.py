#!/usr/bin/env python3
"""The OSU-style allreduce sweep of bench/osu_allreduce.c through PyTorch's
Gloo backend (CPU tensors), for side-by-side comparison. Launch with rlxrun
(it reads RLX_RANK and RLX_SIZE) and a free port:
    rlxrun -n 8 python3 bench/torch_gloo_allreduce.py PORT [max_bytes [min_bytes]]
Prints "torch-gloo bytes avg_us" per size (the slowest rank's average)."""
import os, sys, time
import torch
import torch.distributed as dist

rank, size = int(os.environ["RLX_RANK"]), int(os.environ["RLX_SIZE"])
port = sys.argv[1]
max_bytes = int(sys.argv[2]) if len(sys.argv) > 2 else 64 << 20
torch.set_num_threads(1)
dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=size)
buf = torch.arange(max_bytes // 4, dtype=torch.float32) % 1000 * 0.5
nbytes = int(sys.argv[3]) if len(sys.argv) > 3 else 8
while nbytes <= max_bytes:
    t = buf[: nbytes // 4].clone()
    iters = max(5, min(2000, (256 << 20) // nbytes))
    for _ in range(iters // 10 + 2):
        dist.all_reduce(t)
    dist.barrier()
    t0 = time.perf_counter()
    for _ in range(iters):
        dist.all_reduce(t)
    avg = torch.tensor([(time.perf_counter() - t0) / iters * 1e6], dtype=torch.float64)
    dist.all_reduce(avg, op=dist.ReduceOp.MAX)
    if rank == 0:
        print(f"torch-gloo {nbytes} {avg.item():.2f}", flush=True)
    nbytes *= 2
dist.destroy_process_group()
