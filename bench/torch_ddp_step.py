#!/usr/bin/env python3
"""The data-parallel step of examples/train in PyTorch on GPUs, for side by
side comparison (issue 15): the MLP on Fashion-MNIST, one process per GPU,
launched by torchrun:

    torchrun --nproc_per_node 2 bench/torch_ddp_step.py MODE DATA_DIR [epochs] [hidden] [batch]

MODE ddp:   eager DistributedDataParallel over NCCL (SGD with momentum)
MODE graph: the whole step (forward, backward, one flat NCCL allreduce of
            the gradient, SGD with momentum) captured once in a CUDA graph
            and replayed; the batch copied in from pinned memory and the
            loss read back every step, as train does.
Rank 0 prints per epoch: median step us, samples/s, test accuracy."""
import os
import statistics
import sys
import time

import numpy as np
import torch
import torch.distributed as dist

from torch_fmnist import load, mlp


def main():
    mode, data = sys.argv[1], sys.argv[2]
    epochs = int(sys.argv[3]) if len(sys.argv) > 3 else 3
    hidden = [int(h) for h in (sys.argv[4] if len(sys.argv) > 4 else "256").split(",")]
    batch = int(sys.argv[5]) if len(sys.argv) > 5 else 64
    lr, mu = 0.05, 0.9
    dist.init_process_group("nccl")
    rank, n = dist.get_rank(), dist.get_world_size()
    dev = torch.device("cuda", int(os.environ.get("LOCAL_RANK", rank)))
    torch.cuda.set_device(dev)
    xtr, ytr = load(data, "train")
    xte, yte = load(data, "t10k")
    widths, model = mlp(hidden)
    model = model.to(dev)
    for p in model.parameters():
        dist.broadcast(p.data, 0)
    params = list(model.parameters())
    lossf = torch.nn.CrossEntropyLoss()
    steps = len(xtr) // (batch * n)
    xs = torch.empty(batch, 784, pin_memory=True)
    ys = torch.empty(batch, dtype=torch.int64, pin_memory=True)
    if mode == "ddp":
        ddp = torch.nn.parallel.DistributedDataParallel(model, device_ids=[dev.index])
        opt = torch.optim.SGD(ddp.parameters(), lr=lr, momentum=mu)

        def step():
            x, y = xs.to(dev, non_blocking=True), ys.to(dev, non_blocking=True)
            opt.zero_grad(set_to_none=False)
            loss = lossf(ddp(x), y)
            loss.backward()
            opt.step()
            return loss.item()
    else:
        sx, sy = torch.zeros(batch, 784, device=dev), torch.zeros(batch, dtype=torch.int64, device=dev)
        sizes = [p.numel() for p in params]
        flat_g = torch.zeros(sum(sizes), device=dev)
        vel = torch.zeros(sum(sizes), device=dev)
        gviews = list(torch.split(flat_g, sizes))

        def body():
            for p in params:
                p.grad = None
            loss = lossf(model(sx), sy)
            grads = torch.autograd.grad(loss, params)
            for v, gr in zip(gviews, grads):
                v.copy_(gr.reshape(-1))
            dist.all_reduce(flat_g)
            flat_g.div_(n)
            vel.mul_(mu).add_(flat_g)
            off = 0
            with torch.no_grad():
                for p, k in zip(params, sizes):
                    p.sub_(lr * vel[off:off + k].view_as(p))
                    off += k
            return loss

        init = [p.detach().clone() for p in params]
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):  # warm up on a side stream before capture
            for _ in range(3):
                body()
        torch.cuda.current_stream().wait_stream(s)
        with torch.no_grad():  # undo the warm-up: start where ddp does
            for p, q in zip(params, init):
                p.copy_(q)
            vel.zero_()
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            sloss = body()

        def step():
            sx.copy_(xs, non_blocking=True)
            sy.copy_(ys, non_blocking=True)
            g.replay()
            return sloss.item()
    for epoch in range(epochs):
        perm = torch.from_numpy(np.random.default_rng([1, epoch]).permutation(len(xtr)))
        times = []
        t0 = time.perf_counter()
        for st in range(steps):
            ix = perm[st * batch * n + rank:(st + 1) * batch * n:n]
            xs.copy_(xtr[ix])
            ys.copy_(ytr[ix])
            ts = time.perf_counter()
            step()
            times.append(time.perf_counter() - ts)
        secs = time.perf_counter() - t0
        with torch.no_grad():
            out = model(xte.to(dev))
            acc = (out.argmax(1).cpu() == yte).float().mean().item() * 100
        if rank == 0:
            print("torch %s, %d GPU(s), MLP %s, batch %d x %d: epoch %d: step %.0f us (median), %.0f "
                  "samples/s, test %.2f%%" % (mode, n, "-".join(map(str, widths)), batch, n,
                                              epoch + 1, statistics.median(times) * 1e6,
                                              steps * batch * n / secs, acc), flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
