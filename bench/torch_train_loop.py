#!/usr/bin/env python3
"""PyTorch's whole training run of examples/train on one GPU, for side by
side comparison with `rlxrun -n 1 train --backend gpu` (issue 36): the MLP
on Fashion-MNIST, SGD lr 0.05 momentum 0.9, the epoch's examples in a
shuffled order, batches of B.

MODE graph: the training set uploaded once (float32, normalised as train
            does); each epoch's order a shuffled index tensor on the GPU;
            the whole step captured once in a CUDA graph: the batch gathered
            on the device from the order (index_select at a position kept
            in a device tensor), forward, loss, backward, SGD with momentum,
            the loss and right answers summed on the device; replayed once
            a step, the sums read at the epoch's end. Nothing crosses the
            bus during an epoch.
MODE eager: the same, without the graph (each step's kernels launched by
            Python), the data on the GPU too.

usage: torch_train_loop.py MODE DATA_DIR [epochs] [hidden] [batch]
Prints per epoch: the time per step (epoch time / steps), samples/s,
train loss and accuracy, test accuracy."""
import sys
import time

import torch

from torch_fmnist import load, mlp


def main():
    mode, data = sys.argv[1], sys.argv[2]
    epochs = int(sys.argv[3]) if len(sys.argv) > 3 else 3
    hidden = [int(h) for h in (sys.argv[4] if len(sys.argv) > 4 else "256").split(",")]
    batch = int(sys.argv[5]) if len(sys.argv) > 5 else 64
    dev = torch.device("cuda")
    xtr, ytr = (t.to(dev) for t in load(data, "train", normalise=True))
    xte, yte = (t.to(dev) for t in load(data, "t10k", normalise=True))
    widths, model = mlp(hidden)
    model = model.to(dev)
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    lossf = torch.nn.CrossEntropyLoss()
    steps = len(xtr) // batch
    order = torch.randperm(len(xtr), device=dev)
    pos = torch.zeros((), dtype=torch.int64, device=dev)  # the step's first position
    ar = torch.arange(batch, device=dev)
    tot = torch.zeros(2, device=dev)  # loss sum, right answers

    def body():
        ix = order.index_select(0, pos + ar)
        x, y = xtr.index_select(0, ix), ytr.index_select(0, ix)
        out = model(x)
        loss = lossf(out, y)
        opt.zero_grad(set_to_none=False)
        loss.backward()
        opt.step()
        with torch.no_grad():
            tot[0] += loss.detach() * batch
            tot[1] += (out.argmax(1) == y).sum()
            pos.add_(batch)

    step = body
    if mode == "graph":
        init = [p.detach().clone() for p in model.parameters()]
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):  # warm up (momentum buffers made) before capture
            for _ in range(3):
                body()
        torch.cuda.current_stream().wait_stream(side)
        with torch.no_grad():  # undo the warm-up
            for p, q in zip(model.parameters(), init):
                p.copy_(q)
            for st in opt.state.values():
                st["momentum_buffer"].zero_()
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            body()
        step = g.replay
    model_name = "-".join(map(str, widths))
    for epoch in range(epochs):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        order.copy_(torch.randperm(len(xtr), device=dev))
        pos.zero_()
        tot.zero_()
        for _ in range(steps):
            step()
        sums = tot.tolist()  # the one wait of the epoch
        secs = time.perf_counter() - t0
        with torch.no_grad():
            acc = (model(xte).argmax(1) == yte).float().mean().item() * 100
        n = steps * batch
        print("torch %s (data on the GPU), MLP %s, batch %d: epoch %d: step %.1f us, %.0f samples/s, "
              "loss %.4f, train %.2f%%, test %.2f%%" % (mode, model_name, batch, epoch + 1,
                                                      secs / steps * 1e6, n / secs, sums[0] / n,
                                                      100.0 * sums[1] / n, acc), flush=True)


if __name__ == "__main__":
    main()
