#!/usr/bin/env python3
"""PyTorch's side of bench/train_step: the same MLP (784-hidden...-10, ReLU,
softmax cross-entropy), SGD with momentum 0.9, eager mode, data already on
the device; the median step (zero_grad, forward, loss, backward, step) after
a warm-up, synchronised on CUDA. Prints lines like bench/train_step's.
DEVICE cuda-graph: the step (forward, loss, backward, SGD) captured once in
a CUDA graph on static tensors after a warm-up on a side stream, then
replayed; each step first copies a fresh batch from pinned host memory
into the static input (as bench/train_step uploads its batch).
usage: torch_mlp_step.py DEVICE(cuda|cuda-graph|cpu) HIDDEN(256 or 1024,1024) BATCH [THREADS]"""
import statistics
import sys
import time

import torch


def main():
    device, hidden, batch = sys.argv[1], [int(h) for h in sys.argv[2].split(",")], int(sys.argv[3])
    if len(sys.argv) > 4:
        torch.set_num_threads(int(sys.argv[4]))
    layers, d = [], 784
    for h in hidden:
        layers += [torch.nn.Linear(d, h), torch.nn.ReLU()]
        d = h
    layers.append(torch.nn.Linear(d, 10))
    graph = device == "cuda-graph"
    if graph:
        device = "cuda"
    model = torch.nn.Sequential(*layers).to(device)
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    lossf = torch.nn.CrossEntropyLoss()
    if graph:
        print(graph_step(model, opt, lossf, hidden, batch))
        return
    x = torch.randn(batch, 784, device=device)
    y = torch.randint(0, 10, (batch,), device=device)
    sync = torch.cuda.synchronize if device == "cuda" else (lambda: None)
    times = []
    for i in range(60):
        sync()
        t0 = time.perf_counter()
        opt.zero_grad()
        lossf(model(x), y).backward()
        opt.step()
        sync()
        if i >= 10:
            times.append(time.perf_counter() - t0)
    us = statistics.median(times) * 1e6
    model_name = "-".join(str(s) for s in [784] + hidden + [10])
    name = "torch %s%s" % (device, " %s thread(s)" % sys.argv[4] if len(sys.argv) > 4 else "")
    print('backend="%s" model=%s batch=%d step_us=%.1f samples_per_s=%.0f'
          % (name, model_name, batch, us, batch / us * 1e6))


def graph_step(model, opt, lossf, hidden, batch):
    host_x = torch.randn(batch, 784).pin_memory()
    host_y = torch.randint(0, 10, (batch,)).pin_memory()
    static_x = torch.empty(batch, 784, device="cuda")
    static_y = torch.empty(batch, dtype=torch.long, device="cuda")
    static_x.copy_(host_x)
    static_y.copy_(host_y)
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):  # warm-up: momentum buffers, kernels chosen
        for _ in range(3):
            opt.zero_grad(set_to_none=True)
            lossf(model(static_x), static_y).backward()
            opt.step()
    torch.cuda.current_stream().wait_stream(side)
    g = torch.cuda.CUDAGraph()
    opt.zero_grad(set_to_none=True)
    with torch.cuda.graph(g):
        static_loss = lossf(model(static_x), static_y)
        static_loss.backward()
        opt.step()
    times = []
    for i in range(110):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        static_x.copy_(host_x, non_blocking=True)
        static_y.copy_(host_y, non_blocking=True)
        g.replay()
        static_loss.item()  # the loss back on the host, as our step returns it
        if i >= 10:
            times.append(time.perf_counter() - t0)
    us = statistics.median(times) * 1e6
    model_name = "-".join(str(s) for s in [784] + hidden + [10])
    return ('backend="torch cuda-graph" model=%s batch=%d step_us=%.1f samples_per_s=%.0f'
            % (model_name, batch, us, batch / us * 1e6))


if __name__ == "__main__":
    main()
