"""The products bench/gemm_shapes times, through PyTorch on CUDA (cuBLAS,
TF32 off as PyTorch's default for float32 matmuls): forward as
F.linear with its bias, the weight gradient dz^T a, the backward dz W.
Each timed back to back with CUDA events, best of 2 rounds.
  python3 bench/torch_gemm_shapes.py [--hidden 1024,1024] [--batch 1024] [--reps 50]"""
import argparse

import torch
import torch.nn.functional as F

ap = argparse.ArgumentParser()
ap.add_argument("--hidden", default="1024,1024")
ap.add_argument("--batch", type=int, default=1024)
ap.add_argument("--reps", type=int, default=50)
o = ap.parse_args()
torch.backends.cuda.matmul.allow_tf32 = False
sizes = [784] + [int(h) for h in o.hidden.split(",")] + [10]
dev = torch.device("cuda")
g = torch.Generator(device=dev).manual_seed(1)
products = []
B = o.batch
for l in range(len(sizes) - 1):
    i, u = sizes[l], sizes[l + 1]
    x = torch.rand(B, i, device=dev, generator=g)
    w = torch.rand(u, i, device=dev, generator=g)
    bias = torch.rand(u, device=dev, generator=g)
    dz = torch.rand(B, u, device=dev, generator=g)
    products.append((f"forward {l} ({B}x{u}x{i})", 2 * B * u * i, lambda x=x, w=w, b=bias: F.linear(x, w, b)))
    if u > 16:
        products.append((f"wgrad {l} ({u}x{i}x{B})", 2 * B * u * i, lambda dz=dz, x=x: dz.t().mm(x)))
    if l > 0:
        products.append((f"backward {l} ({B}x{i}x{u})", 2 * B * u * i, lambda dz=dz, w=w: dz.mm(w)))
print(f"# {torch.cuda.get_device_name()}, torch {torch.__version__}, MLP {o.hidden}, batch {B}, {o.reps} reps")
for name, flop, f in products:
    best = 1e30
    for r in range(3):
        n = o.reps if r else 3
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        for _ in range(n):
            f()
        e.record()
        torch.cuda.synchronize()
        us = s.elapsed_time(e) * 1000 / n
        if r:
            best = min(best, us)
    print(f"torch {name:28s} {best:9.1f} us {flop / best / 1e6:6.2f} TFLOP/s")
