"""rlxcoll.torch, the "rlx" backend of torch.distributed, on every rank of
a job (rlxrun -n N):
    check_torch.py ops            all_reduce (sum, avg, min, max, product) of
                                  float32/float64/float16/bfloat16/int32/int64
                                  tensors against a local reference, broadcast,
                                  reduce, all_gather (list and into a tensor),
                                  reduce_scatter (list and tensor), barrier,
                                  async handles, a non-contiguous tensor
    check_torch.py ddp BACKEND F  DistributedDataParallel over BACKEND (rlx or
                                  gloo): 20 SGD steps of a small seeded model;
                                  rank 0 saves the parameters to F (.npy)
Prints "check_torch: rank R: PASS"."""
import os
import socket
import sys

import numpy as np
import torch
import torch.distributed as dist

import rlxcoll.torch  # noqa: F401 (registers "rlx")


def fail(what):
    print("check_torch: rank %d: FAIL: %s" % (dist.get_rank(), what), flush=True)
    sys.exit(1)


def local(rank, dtype, count=37):
    g = torch.Generator().manual_seed(100 + rank)
    if dtype.is_floating_point:
        return (torch.rand(count, generator=g, dtype=torch.float64) * 4 - 2).to(dtype)
    return torch.randint(-50, 50, (count,), generator=g, dtype=dtype)


def ops():
    r, n = dist.get_rank(), dist.get_world_size()
    R = dist.ReduceOp
    for dtype in (torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int32,
                  torch.int64):
        for op, name in ((R.SUM, "sum"), (R.AVG, "avg"), (R.MIN, "min"), (R.MAX, "max"),
                         (R.PRODUCT, "product")):
            if name == "avg" and not dtype.is_floating_point:
                continue
            xs = [local(k, dtype).double() for k in range(n)]
            want = {"sum": sum(xs), "avg": sum(xs) / n, "min": torch.stack(xs).min(0).values,
                    "max": torch.stack(xs).max(0).values,
                    "product": torch.stack(xs).prod(0)}[name]
            t = local(r, dtype)
            dist.all_reduce(t, op=op)
            tol = {torch.float16: 3e-3, torch.bfloat16: 2e-2}.get(dtype, 1e-6)
            if not torch.allclose(t.double(), want.to(dtype).double(), rtol=tol, atol=tol):
                fail("all_reduce %s %s: %s against %s" % (dtype, name, t[:3], want[:3]))
    t = torch.arange(10.0) if r == 0 else torch.zeros(10)
    dist.broadcast(t, src=0)
    x = torch.full((5,), float(r + 1))
    dist.reduce(x, dst=n - 1, op=R.SUM)
    if not torch.equal(t, torch.arange(10.0)) or (r == n - 1 and x[0] != n * (n + 1) / 2):
        fail("broadcast or reduce")
    outs = [torch.zeros(3) for _ in range(n)]
    dist.all_gather(outs, torch.full((3,), float(r)))
    flat = torch.zeros(3 * n, dtype=torch.int64)
    dist.all_gather_into_tensor(flat, torch.full((3,), r, dtype=torch.int64))
    if any(not torch.equal(outs[k], torch.full((3,), float(k))) for k in range(n)) or \
            not torch.equal(flat, torch.arange(n).repeat_interleave(3)):
        fail("all_gather")
    part = torch.zeros(2)
    dist.reduce_scatter(part, [torch.full((2,), float(k + r)) for k in range(n)])
    part2 = torch.zeros(2)
    dist.reduce_scatter_tensor(part2, torch.arange(2.0 * n) + r)
    if not torch.equal(part, torch.full((2,), float(n * r + n * (n - 1) / 2))) or \
            not torch.equal(part2, torch.tensor([2.0 * r, 2.0 * r + 1]) * n + n * (n - 1) / 2):
        fail("reduce_scatter: %s %s" % (part, part2))
    # Asynchronous handles, big and small mixed: the big ones go to the
    # group's worker and the small ones (which run on the caller's thread
    # when it is idle) must wait their turn behind them, else ranks would
    # run different calls (a mismatch) or a result would be wrong.
    sizes = [100000, 10, 100000, 3, 1000, 50000, 7]
    ts = [torch.full((k,), float(r + i)) for i, k in enumerate(sizes)]
    hs = [dist.all_reduce(t, async_op=True) for t in ts]
    last = torch.full((5,), float(r))
    dist.all_reduce(last)  # synchronous, behind them all
    for h in hs:
        h.wait()
    for i, t in enumerate(ts):
        if not torch.all(t == n * i + n * (n - 1) / 2):
            fail("async all_reduce %d of %d values: %s" % (i, sizes[i], t[:3]))
    if not torch.all(last == n * (n - 1) / 2):
        fail("a call behind asynchronous ones")
    nc = torch.zeros(4, 3)[:, 1]  # not contiguous
    nc.fill_(r)
    dist.all_reduce(nc)
    if not torch.all(nc == n * (n - 1) / 2):
        fail("a non-contiguous tensor")
    for op, fn in ((R.BAND, torch.bitwise_and), (R.BOR, torch.bitwise_or),
                   (R.BXOR, torch.bitwise_xor)):
        t = local(r, torch.int64)
        want = local(0, torch.int64)
        for q in range(1, n):
            want = fn(want, local(q, torch.int64))
        dist.all_reduce(t, op=op)
        if not torch.equal(t, want):
            fail("all_reduce %s of int64" % op)
    dist.barrier()
    exchanges(r, n)
    messages(r, n)
    subgroups(r, n)


def subgroups(r, n):
    """new_group of the even ranks and of the odd ones (the backend made by
    the members alone), collectives and messages on them, and groups of
    pairs."""
    evens, odds = [q for q in range(n) if q % 2 == 0], [q for q in range(n) if q % 2 == 1]
    ge = dist.new_group(evens)
    go = dist.new_group(odds) if odds else None
    mine, g = (evens, ge) if r % 2 == 0 else (odds, go)
    t = torch.tensor([float(r), 1.0])
    dist.all_reduce(t, group=g)
    if t.tolist() != [float(sum(mine)), float(len(mine))]:
        fail("all_reduce on the group %r: %r" % (mine, t))
    b = torch.tensor([float(r)])
    dist.broadcast(b, src=mine[-1], group=g)
    if b.item() != mine[-1]:
        fail("broadcast on the group %r from %d: %r" % (mine, mine[-1], b))
    if len(mine) > 1:
        i = mine.index(r)
        peer = mine[(i + 1) % len(mine)]
        w = dist.isend(torch.tensor([r]), peer, group=g)
        got = torch.tensor([-1])
        dist.recv(got, mine[(i - 1) % len(mine)], group=g)
        w.wait()
        if got.item() != mine[(i - 1) % len(mine)]:
            fail("send/recv on the group %r" % mine)
    dist.barrier()
    # pairs, as new_subgroups(2) makes them (which torch 1.13 allows with
    # CUDA only): every rank calls new_group for each, in one order
    pairs = [dist.new_group([q, q + 1]) for q in range(0, n - 1, 2)]
    if r < n - n % 2:
        s = torch.tensor([1.0])
        dist.all_reduce(s, group=pairs[r // 2])
        if s.item() != 2.0:
            fail("a pair's group: %r" % s)
    dist.barrier()


def exchanges(r, n):
    """gather, scatter, all_to_all, all_to_all_single (even and uneven splits),
    the coalesced calls, sparse all_reduce, all_gather_object."""
    for root in range(n):
        t = local(r, torch.float32, 6)
        outs = [torch.zeros(6) for _ in range(n)] if r == root else None
        dist.gather(t, outs, dst=root)
        if r == root and not all(torch.equal(outs[q], local(q, torch.float32, 6)) for q in range(n)):
            fail("gather to %d" % root)
        got = torch.zeros(5, dtype=torch.int64)
        ins = [torch.full((5,), 10 * root + q, dtype=torch.int64) for q in range(n)]
        dist.scatter(got, ins if r == root else None, src=root)
        if not torch.all(got == 10 * root + r):
            fail("scatter from %d: %r" % (root, got))
    ins = [torch.full((3,), float(100 * r + q)) for q in range(n)]
    outs = [torch.zeros(3) for _ in range(n)]
    dist.all_to_all(outs, ins)
    if not all(torch.all(outs[q] == 100 * q + r) for q in range(n)):
        fail("all_to_all: %r" % outs)
    flat_in = torch.cat(ins)
    flat_out = torch.zeros(3 * n)
    dist.all_to_all_single(flat_out, flat_in)
    if not torch.equal(flat_out, torch.cat(outs)):
        fail("all_to_all_single")
    # uneven: rank r sends q + r + 1 rows of 2 to rank q
    send = [q + r + 1 for q in range(n)]
    recv = [r + q + 1 for q in range(n)]
    src = torch.cat([torch.full((send[q], 2), float(100 * r + q)) for q in range(n)])
    dst = torch.zeros(sum(recv), 2)
    dist.all_to_all_single(dst, src, output_split_sizes=recv, input_split_sizes=send)
    want = torch.cat([torch.full((recv[q], 2), float(100 * q + r)) for q in range(n)])
    if not torch.equal(dst, want):
        fail("all_to_all_single with split sizes")
    # coalesced calls: tensors of several shapes in one call
    ts = [torch.full((2, 3), float(r)), torch.full((5,), float(r + 1))]
    dist.all_reduce_coalesced(ts)
    tot = n * (n - 1) / 2
    if not (torch.all(ts[0] == tot) and torch.all(ts[1] == tot + n)):
        fail("all_reduce_coalesced: %r" % ts)
    ins = [torch.full((2,), float(r)), torch.full((3, 1), float(-r))]
    outs = [[torch.zeros(2), torch.zeros(3, 1)] for _ in range(n)]
    dist.all_gather_coalesced(outs, ins)
    if not all(torch.all(outs[q][0] == q) and torch.all(outs[q][1] == -q) for q in range(n)):
        fail("all_gather_coalesced: %r" % outs)
    # sparse all_reduce (sum): rank r holds 1s at rows 0..r of a (n, 2) tensor
    sp = torch.sparse_coo_tensor(torch.arange(r + 1).reshape(1, -1), torch.ones(r + 1, 2), (n, 2))
    dist.all_reduce(sp)
    want = torch.tensor([[float(n - i)] * 2 for i in range(n)])
    if not torch.equal(sp.to_dense(), want):
        fail("sparse all_reduce: %r" % sp.to_dense())
    objs = [None] * n
    dist.all_gather_object(objs, {"rank": r, "tag": "x" * r})
    if objs != [{"rank": q, "tag": "x" * q} for q in range(n)]:
        fail("all_gather_object: %r" % objs)


def messages(r, n):
    """send/recv around a ring (every dtype above), isend/irecv, recv from
    any source (it returns the sender), batch_isend_irecv, a
    non-contiguous receive."""
    to, frm = (r + 1) % n, (r - 1) % n
    for i, dtype in enumerate((torch.float32, torch.float64, torch.float16, torch.bfloat16,
                               torch.int32, torch.int64)):
        t, got = local(r, dtype, 1000), torch.zeros(1000, dtype=dtype)
        if r % 2 == 0:
            dist.send(t, to, tag=i)
            dist.recv(got, frm, tag=i)
        else:
            dist.recv(got, frm, tag=i)
            dist.send(t, to, tag=i)
        if not torch.equal(got, local(frm, dtype, 1000)):
            fail("send/recv of %s" % dtype)
    w = dist.isend(local(r, torch.float32), to, tag=9)
    got = torch.zeros(37)
    src = dist.recv(got, tag=9)  # from any source
    w.wait()
    if src != frm or not torch.equal(got, local(frm, torch.float32)):
        fail("recv from any source: src %r" % src)
    nc = torch.zeros(37, 2)[:, 0]
    rw = dist.irecv(nc, frm, tag=10)
    dist.isend(local(r, torch.float32), to, tag=10).wait()
    rw.wait()
    if not torch.equal(nc, local(frm, torch.float32)):
        fail("irecv into a non-contiguous tensor")
    outs = [torch.full((5,), float(r)), torch.full((5,), float(r) + 0.5)]
    ins = [torch.zeros(5), torch.zeros(5)]
    ops_ = [dist.P2POp(dist.isend, outs[0], to), dist.P2POp(dist.irecv, ins[0], frm),
            dist.P2POp(dist.isend, outs[1], frm), dist.P2POp(dist.irecv, ins[1], to)]
    for req in dist.batch_isend_irecv(ops_):
        req.wait()
    if n > 1 and not (torch.all(ins[0] == frm) and torch.all(ins[1] == to + 0.5)):
        fail("batch_isend_irecv: %r" % ins)
    # a failed message reaches the program: a receive too short raises
    # rlxcoll.Truncated from dist.recv (the synchronous call) and from an
    # irecv's wait(), never a normal return
    for how in ("recv", "irecv"):
        w = dist.isend(local(r, torch.float32, 8), to, tag=11)
        short = torch.zeros(4)
        try:
            if how == "recv":
                dist.recv(short, frm, tag=11)
            else:
                dist.irecv(short, frm, tag=11).wait()
            fail("a message too long for %s's tensor returned normally" % how)
        except rlxcoll.Truncated as e:
            if "has 32 bytes, the receive room for 16" not in str(e):
                fail("Truncated says: %s" % e)
        w.wait()
    dist.barrier()


def ddp(out):
    torch.manual_seed(7)
    model = torch.nn.Sequential(torch.nn.Linear(20, 32), torch.nn.ReLU(), torch.nn.Linear(32, 4))
    m = torch.nn.parallel.DistributedDataParallel(model)
    opt = torch.optim.SGD(m.parameters(), lr=0.05, momentum=0.9)
    g = torch.Generator().manual_seed(11 + dist.get_rank())
    for _ in range(20):
        x = torch.randn(16, 20, generator=g)
        y = torch.randint(0, 4, (16,), generator=g)
        opt.zero_grad()
        torch.nn.functional.cross_entropy(m(x), y).backward()
        opt.step()
    if dist.get_rank() == 0:
        np.save(out, torch.cat([p.detach().reshape(-1) for p in model.parameters()]).numpy())


def main():
    mode = sys.argv[1]
    backend = sys.argv[2] if mode == "ddp" else "rlx"
    if backend == "gloo":  # gloo needs torch's own rendezvous
        os.environ.update(RANK=os.environ["RLX_RANK"], WORLD_SIZE=os.environ["RLX_SIZE"],
                          MASTER_ADDR="127.0.0.1", MASTER_PORT=os.environ["GLOO_PORT"])
    dist.init_process_group(backend)
    if mode == "ops":
        ops()
    else:
        ddp(sys.argv[3])
    print("check_torch: rank %d: PASS" % dist.get_rank(), flush=True)
    dist.destroy_process_group()


main()
