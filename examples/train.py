#!/usr/bin/env python3
"""train.py: the MLP of examples/train on Fashion-MNIST in PyTorch,
data-parallel with DistributedDataParallel over torch.distributed's "rlx"
backend (rlxcoll.torch), or any other (--dist gloo):

    rlxrun -n 4 python3 examples/train.py --epochs 3

The same model, data order and flags as examples/train where they apply:
every rank computes the epoch's permutation from the seed and rank r of n
takes examples r, r+n, ... of it; the gradients are averaged by DDP, the
leader (rank 0) prints each epoch's loss, accuracy and samples/s.
"""
import argparse
import gzip
import os
import struct
import sys
import time

import numpy as np
import torch
import torch.distributed as dist


def parse():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--epochs", type=int, default=3)
    p.add_argument("--batch", type=int, default=64, help="examples per rank and step")
    p.add_argument("--lr", type=float, default=0.05)
    p.add_argument("--momentum", type=float, default=0.9)
    p.add_argument("--hidden", default="256", help="hidden widths, comma-separated")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--data", default="/usr/share/datasets/fashion-mnist")
    p.add_argument("--train-limit", type=int, default=0)
    p.add_argument("--steps", type=int, default=0, help="stop after this many steps")
    p.add_argument("--dist", default="rlx", help="torch.distributed backend (rlx, gloo)")
    p.add_argument("--log-steps", default=None, help="write each step's time (s) here (rank 0)")
    return p.parse_args()


def idx(path):
    """An IDX file (gzipped or not) as a numpy array."""
    for name in (path + ".gz", path):
        if os.path.exists(name):
            with (gzip.open if name.endswith(".gz") else open)(name, "rb") as f:
                raw = f.read()
            dims = raw[3]
            shape = struct.unpack(">" + "I" * dims, raw[4:4 + 4 * dims])
            return np.frombuffer(raw, dtype=np.uint8, offset=4 + 4 * dims).reshape(shape)
    sys.exit("train.py: no %s(.gz): install dataset-fashion-mnist or pass --data" % path)


def load(data, split):
    x = idx(os.path.join(data, "%s-images-idx3-ubyte" % split))
    y = idx(os.path.join(data, "%s-labels-idx1-ubyte" % split))
    return torch.from_numpy(x.reshape(len(x), -1).astype(np.float32) / 255.0), \
        torch.from_numpy(y.astype(np.int64))


def main():
    o = parse()
    if o.dist == "rlx" or ("RLX_RANK" in os.environ and "MASTER_ADDR" not in os.environ):
        # the backend, and env:// wired by rlxcoll under rlxrun (any backend)
        import rlxcoll.torch  # noqa: F401
    if "RLX_RANK" in os.environ:  # rlxrun's ranks, for torch's env:// too
        os.environ.setdefault("RANK", os.environ["RLX_RANK"])
        os.environ.setdefault("WORLD_SIZE", os.environ["RLX_SIZE"])
    dist.init_process_group(o.dist)
    rank, n = dist.get_rank(), dist.get_world_size()
    torch.set_num_threads(1)  # ranks are the parallelism
    xtr, ytr = load(o.data, "train")
    xte, yte = load(o.data, "t10k")
    ntrain = o.train_limit or len(xtr)
    widths = [784] + [int(h) for h in o.hidden.split(",") if h] + [10]
    torch.manual_seed(o.seed)
    layers = []
    for i in range(len(widths) - 1):
        layers.append(torch.nn.Linear(widths[i], widths[i + 1]))
        if i < len(widths) - 2:
            layers.append(torch.nn.ReLU())
    model = torch.nn.parallel.DistributedDataParallel(torch.nn.Sequential(*layers))
    opt = torch.optim.SGD(model.parameters(), lr=o.lr, momentum=o.momentum)
    steps = ntrain // (o.batch * n)
    if rank == 0:
        print("train.py: %d rank(s) over %s; MLP %s; batch %d x %d; lr %g, momentum %g; %d "
              "examples" % (n, o.dist, "-".join(map(str, widths)), o.batch, n, o.lr, o.momentum,
                            ntrain), flush=True)
    log = open(o.log_steps, "w") if o.log_steps and rank == 0 else None
    step = 0
    for epoch in range(o.epochs):
        perm = torch.from_numpy(np.random.default_rng([o.seed, epoch]).permutation(ntrain))
        t0 = time.monotonic()
        tot = torch.zeros(3, dtype=torch.float64)
        for s in range(steps):
            ts = time.monotonic()
            ix = perm[s * o.batch * n + rank:(s + 1) * o.batch * n:n]
            x, y = xtr[ix], ytr[ix]
            opt.zero_grad()
            out = model(x)
            loss = torch.nn.functional.cross_entropy(out, y)
            loss.backward()
            opt.step()
            tot += torch.tensor([loss.item() * len(y), (out.argmax(1) == y).sum().item(), len(y)],
                                dtype=torch.float64)
            step += 1
            if log:
                log.write("%d %.6f\n" % (step, time.monotonic() - ts))
            if o.steps and step >= o.steps:
                break
        secs = time.monotonic() - t0
        with torch.no_grad():
            mine = torch.arange(rank, len(xte), n)
            out = model.module(xte[mine])
            ev = torch.tensor([torch.nn.functional.cross_entropy(out, yte[mine], reduction="sum"),
                               (out.argmax(1) == yte[mine]).sum(), len(mine)],
                              dtype=torch.float64)
        dist.all_reduce(tot)
        dist.all_reduce(ev)
        if rank == 0:
            print("epoch %d/%d: loss %.4f, train %.2f%%, test loss %.4f, test %.2f%%, %.0f "
                  "samples/s (%.1f s)" % (epoch + 1, o.epochs, tot[0] / tot[2],
                                          100 * tot[1] / tot[2], ev[0] / ev[2],
                                          100 * ev[1] / ev[2], tot[2] / secs, secs), flush=True)
        if o.steps and step >= o.steps:
            break
    if log:
        log.close()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
