"""rlxcoll.torch: rlxcoll as the "rlx" backend of torch.distributed.

    import torch.distributed as dist
    import rlxcoll.torch                      # registers the backend
    dist.init_process_group("rlx")            # under rlxrun (or torchrun)
    model = torch.nn.parallel.DistributedDataParallel(model)

Under rlxrun no MASTER_ADDR is needed: "env://" without MASTER_ADDR takes
the rank, size and store from rlxcoll (rank 0 hosts the store torch wants,
its address sent with an rlxcoll broadcast). Under torchrun (MASTER_ADDR
set) rlxcoll is wired through torch's store instead: rank 0 hosts the
rlxcoll rendezvous and publishes its address and a fresh job key there.

Collectives run, in the order they were called, on one worker thread per
process group (as Gloo does), so asynchronous handles overlap with the
caller (DDP's gradient buckets with the backward pass); the worker waits
with the GIL released. One of at most 64 KiB finds the worker idle more
often than not and runs on the caller's thread instead, sparing two
thread wake-ups (INLINE_MAX). CPU tensors go to rlxcoll without a copy (a
non-contiguous one through a contiguous copy); CUDA tensors go through a
host copy and back. Supported: all_reduce (sum, avg, min, max, product),
broadcast, reduce, all_gather (and all_gather_into_tensor), reduce_scatter
(and reduce_scatter_tensor), gather, scatter, all_to_all, all_to_all_single
(split sizes too), all_reduce_coalesced, all_gather_coalesced, sparse
all_reduce (sum, as Gloo), barrier, on the default group and on groups from
new_group (made by their members alone); send, recv (also from any source),
isend, irecv, batch_isend_irecv (messages start at once, beside the
collectives). Errors are rlxcoll's exceptions (PeerLost, Mismatch,
Truncated, ...), raised from wait().
"""
import datetime
import os
import queue
import secrets
import socket
import threading

import numpy
import torch
import torch.distributed as dist
from torch.distributed.constants import default_pg_timeout
from torch._C._distributed_c10d import ProcessGroup, Work, _create_work_from_future

# A backend's creator may return a ProcessGroup written in Python: torch
# 1.13 (Debian's) takes it as the group, and so does torch 2, whose
# init_process_group uses a creator's ProcessGroup subclass as the group
# itself instead of wrapping a c10d Backend (distributed_c10d.py,
# _new_process_group_helper). torch 2 also wants the devices named.
TORCH2 = int(torch.__version__.split(".")[0]) >= 2

import rlxcoll

_OPS = [(dist.ReduceOp.SUM, "sum"), (dist.ReduceOp.AVG, "avg"), (dist.ReduceOp.MIN, "min"),
        (dist.ReduceOp.MAX, "max"), (dist.ReduceOp.PRODUCT, "prod"),
        (dist.ReduceOp.BAND, "band"), (dist.ReduceOp.BOR, "bor"), (dist.ReduceOp.BXOR, "bxor")]


def _op_name(op):
    for o, name in _OPS:
        if op == o:
            return name
    raise ValueError("rlx backend: reduce op %r is not supported (sum, avg, min, max, product, "
                     "band, bor, bxor)" % (op,))


def _same_dtype(tensors, call):
    if len({t.dtype for t in tensors}) > 1:
        raise ValueError("rlx backend: %s needs tensors of one dtype, not %s"
                         % (call, ", ".join(sorted({str(t.dtype) for t in tensors}))))


def _array(t):
    """A numpy view of a contiguous CPU tensor, and the dtype rlxcoll needs
    to be told (bfloat16 travels as its 2-byte integers)."""
    if t.dtype == torch.bfloat16:
        return t.view(torch.int16).numpy(), "bfloat16"
    if t.dtype == torch.bool:
        return t.view(torch.uint8).numpy(), None
    return t.numpy(), None


class _Staged:
    """A tensor as rlxcoll sees it: contiguous, on the CPU; put() copies the
    result back where it is not the tensor itself (CUDA, non-contiguous)."""

    def __init__(self, t):
        self.t = t
        if t.device.type == "cpu" and t.is_contiguous():
            self.host = t
        else:
            self.host = t.detach().to("cpu", copy=True).contiguous()
        self.arr, self.dtype = _array(self.host.detach())

    def put(self):
        if self.host is not self.t:
            with torch.no_grad():
                self.t.copy_(self.host)


# Up to this many bytes a collective runs on the calling thread when the
# group's worker has nothing queued or running: handing it to the worker
# and its result back costs two thread wake-ups (~60 us per call on the
# 16-core machine, where the collective itself takes a few); above it
# the worker runs it, so that DDP's gradient buckets overlap the backward
# pass. (Either way every rank runs its group's calls in call order.)
INLINE_MAX = 64 * 1024


def _nbytes(tensors):
    n = 0
    for t in tensors:
        n += _nbytes(t) if isinstance(t, (list, tuple)) else t.numel() * t.element_size()
    return n


class _Worker(threading.Thread):
    """Runs a process group's collectives in call order; each completes its
    future with its result or rlxcoll's exception. Small ones run on the
    caller's thread when nothing is queued (INLINE_MAX)."""

    def __init__(self):
        super().__init__(daemon=True, name="rlxcoll-torch")
        self.q = queue.Queue()  # its unfinished_tasks: handed over, not yet run
        self.running = threading.Lock()  # held while a collective runs
        self.start()

    @staticmethod
    def _settle(fut, fn, result):
        try:
            fn()
        except KeyboardInterrupt:
            raise
        except BaseException as e:  # handed to whoever waits
            fut.set_exception(e)
            return False
        fut.set_result(result)
        return True

    def run(self):
        while True:
            fn, fut, result = self.q.get()
            with self.running:
                self._settle(fut, fn, result)  # (no KeyboardInterrupt off the main thread)
            self.q.task_done()

    def _inline(self, fn, fut, result):
        """Run fn here if nothing is queued or running: None when it did
        not, else whether it succeeded. Ctrl-C while it waits raises here
        at once."""
        if self.q.unfinished_tasks or not self.running.acquire(blocking=False):
            return None
        try:
            if self.q.unfinished_tasks:  # (queued meanwhile: it goes first)
                return None
            return self._settle(fut, fn, result)
        finally:
            self.running.release()

    def submit(self, fn, result):
        """result: the tensors the work returns (their bytes decide where it runs)."""
        fut = torch.futures.Future()
        ran = None if _nbytes(result) > INLINE_MAX else self._inline(fn, fut, result)
        if ran is None:
            self.q.put((fn, fut, result))
        elif ran:  # done here, and well: torch's own work has nothing to swallow, and
            return _create_work_from_future(fut)  # costs a microsecond less than a _Work
        return _Work(fut, result)


# A _Work handed to torch's C++ (DDP's reducer, its parameter check) is
# held there by a C++ reference only; once Python drops its last one the
# Python half (these methods) is gone, and the C++ base wait() would block
# forever on a completion it is never told of. So each work stays here
# until it is consumed (wait or get_future, which such callers make at
# once), or until PINNED_MAX newer ones pushed it out (works a program
# started and never waited for, done or not).
# (A dict's single operations are atomic under the GIL: no lock, which
# would cost a small call about a microsecond.)
PINNED_MAX = 4096
_pinned = {}  # id -> work, oldest first


def _pin(work):
    _pinned[id(work)] = work
    if len(_pinned) > PINNED_MAX:
        try:
            del _pinned[next(iter(_pinned))]
        except (KeyError, RuntimeError, StopIteration):  # (another thread's meanwhile)
            pass


class _Work(Work):
    """A collective's handle. torch's own work-from-a-future
    (_create_work_from_future) returns from wait() normally when the future
    holds an exception, in torch 1.13 and 2.x alike: a failed all_reduce
    would leave the tensors unreduced and the program none the wiser. Here
    wait() raises the call's rlxcoll exception (Mismatch, PeerLost,
    Timeout, Revoked, ...), and so does every synchronous call, which
    torch.distributed makes by waiting; get_future() gives the future
    itself, whose value() and wait() raise it too (DDP's path)."""

    def __init__(self, fut, result):
        super().__init__()
        self._fut = fut
        self._result = result
        _pin(self)

    def wait(self, timeout=None):
        _pinned.pop(id(self), None)
        self._fut.wait()  # raises what the call raised
        return True

    def get_future(self):
        _pinned.pop(id(self), None)
        return self._fut

    def is_completed(self):
        return self._fut.done()

    def is_success(self):
        return self.exception() is None

    def exception(self):
        if not self._fut.done():
            return None
        try:
            self._fut.wait()
        except Exception as e:  # (the call's own exception)
            return e
        return None

    def result(self):
        self.wait()
        return self._result

    def synchronize(self):
        pass


class _MsgWork(Work):
    """A message's handle (send, recv, isend, irecv, batch_isend_irecv):
    rlxcoll's own request, started at once beside the group's collectives
    (messages do not queue behind them). wait() raises the message's
    rlxcoll exception (PeerLost, Truncated, Timeout, ...); a receive's
    tensors get their data then; _source_rank() names a receive's sender
    (recv from any source)."""

    def __init__(self, reqs, staged, recv):
        super().__init__()
        self._reqs, self._staged, self._recv = reqs, staged, recv
        self._src, self._exc, self._done = -1, None, False
        _pin(self)

    def wait(self, timeout=None):
        _pinned.pop(id(self), None)
        if not self._done:
            self._done = True
            try:
                for r in self._reqs:
                    r.wait()
                    if self._recv:
                        self._src = r.status[0]
                for s in self._staged if self._recv else ():
                    s.put()
            except Exception as e:
                self._exc = e
        if self._exc is not None:
            raise self._exc
        return True

    def is_completed(self):
        return self._done or all(r.test() for r in self._reqs)

    def is_success(self):
        return self.exception() is None

    def exception(self):
        if not self.is_completed():
            return None
        try:
            self.wait()
        except Exception as e:
            return e
        return None

    def _source_rank(self):
        self.wait()
        return self._src

    def get_future(self):
        _pinned.pop(id(self), None)
        fut = torch.futures.Future()
        try:
            self.wait()
            fut.set_result([s.t for s in self._staged])
        except Exception as e:
            fut.set_exception(e)
        return fut

    def result(self):
        self.wait()
        return [s.t for s in self._staged]

    def synchronize(self):
        pass


class ProcessGroupRlx(ProcessGroup):
    """torch.distributed's ProcessGroup over an rlxcoll communicator."""

    def __init__(self, comm):
        super().__init__(comm.rank, comm.size)
        self.comm = comm
        self.worker = _Worker()

    def _submit(self, fn, result, opts):
        """fn to the worker; a timeout the call's options carry (torch's
        unset one is negative) bounds it instead of the group's."""
        t = getattr(opts, "timeout", None)
        if t is not None and t.total_seconds() > 0:
            plain, secs = fn, t.total_seconds()

            def fn():
                was = self.comm.timeout
                self.comm.timeout = secs
                try:
                    plain()
                finally:
                    self.comm.timeout = was
        return self.worker.submit(fn, result)

    def abort(self):
        """Fail every member's pending and later calls on this group at once
        (rlx_comm_revoke: they raise rlxcoll.Revoked naming this rank)."""
        self.comm.revoke()

    def getBackendName(self):
        return "rlx"

    def name(self):
        return "rlx"

    # -- collectives ---------------------------------------------------------
    def allreduce(self, tensors, opts=None):
        op = _op_name(opts.reduceOp if opts is not None else dist.ReduceOp.SUM)
        if any(t.layout == torch.sparse_coo for t in tensors):
            return self._allreduce_sparse(tensors, op, opts)
        staged = [_Staged(t) for t in tensors]

        def run():  # (avg of integers: rlxcoll refuses it, on every rank)
            for s in staged:
                self.comm.allreduce(s.arr, op=op, dtype=s.dtype)
                s.put()
        return self._submit(run, tensors, opts)

    def allreduce_coalesced(self, tensors, opts=None):
        """One allreduce of the tensors laid end to end (they share a dtype)."""
        op = _op_name(opts.reduceOp if opts is not None else dist.ReduceOp.SUM)
        _same_dtype(tensors, "allreduce_coalesced")
        staged = [_Staged(t) for t in tensors]

        def run():
            flat = torch.cat([s.host.reshape(-1) for s in staged])
            arr, dt = _array(flat)
            self.comm.allreduce(arr, op=op, dtype=dt)
            at = 0
            for s in staged:
                n = s.host.numel()
                s.host.reshape(-1).copy_(flat[at:at + n])
                at += n
                s.put()
        return self._submit(run, tensors, opts)

    def _allreduce_sparse(self, tensors, op, opts):
        """A sparse (COO) tensor's sum as Gloo makes it: every rank's indices
        and values gathered (allgatherv), added up and coalesced; the
        tensor becomes the sum."""
        if op != "sum":
            raise ValueError("rlx backend: a sparse all_reduce only sums (as Gloo's)")

        def run():
            for t in tensors:
                mine = t.coalesce()
                idx = mine.indices().contiguous()
                val = mine.values().contiguous().cpu()
                nnz = numpy.array([idx.shape[1]], dtype=numpy.int64)
                all_nnz = numpy.empty(self.comm.size, dtype=numpy.int64)
                self.comm.allgather(nnz, out=all_nnz)
                total = int(all_nnz.sum())
                per_row = int(numpy.prod(val.shape[1:], dtype=numpy.int64))  # (dense part of a row)
                idx_all = torch.empty((total, idx.shape[0]), dtype=torch.int64)
                self.comm.allgatherv(idx.t().contiguous().cpu().numpy().reshape(-1),
                                     idx_all.numpy().reshape(-1),
                                     [int(n) * idx.shape[0] for n in all_nnz])
                val_all = torch.empty((total,) + tuple(val.shape[1:]), dtype=val.dtype)
                va, dt = _array(val_all)
                self.comm.allgatherv(_array(val)[0].reshape(-1), va.reshape(-1),
                                     [int(n) * per_row for n in all_nnz], dtype=dt)
                total_t = torch.sparse_coo_tensor(idx_all.t(), val_all, t.shape).coalesce()
                with torch.no_grad():
                    t.copy_(total_t.to(t.device))
        return self._submit(run, tensors, opts)

    def broadcast(self, tensors, opts=None):
        root = opts.rootRank if opts is not None else 0
        staged = [_Staged(t) for t in tensors]

        def run():
            for s in staged:
                self.comm.bcast(s.arr, root=root, dtype=s.dtype)
                s.put()
        return self._submit(run, tensors, opts)

    def reduce(self, tensors, opts=None):
        op = _op_name(opts.reduceOp if opts is not None else dist.ReduceOp.SUM)
        root = opts.rootRank if opts is not None else 0
        staged = [_Staged(t) for t in tensors]

        def run():
            for s in staged:
                self.comm.reduce(s.arr, op=op, root=root, dtype=s.dtype)
                if self.comm.rank == root:
                    s.put()
        return self._submit(run, tensors, opts)

    def allgather(self, output_tensors, input_tensors, opts=None):
        pairs = [([_Staged(o) for o in outs], _Staged(i))
                 for outs, i in zip(output_tensors, input_tensors)]

        def run():
            for outs, i in pairs:
                flat = torch.empty((self.comm.size,) + tuple(i.host.shape), dtype=i.host.dtype)
                arr, dt = _array(flat)
                self.comm.allgather(i.arr, out=arr, dtype=dt)
                for r, o in enumerate(outs):
                    o.host.copy_(flat[r])
                    o.put()
        return self._submit(run, output_tensors, opts)

    def allgather_coalesced(self, output_lists, input_list, opts=None):
        """One allgather of the inputs laid end to end (they share a dtype;
        their shapes may differ, alike on every rank)."""
        _same_dtype(input_list, "allgather_coalesced")
        ins = [_Staged(t) for t in input_list]
        outs = [[_Staged(o) for o in outs] for outs in output_lists]

        def run():
            flat = torch.cat([i.host.reshape(-1) for i in ins])
            every = torch.empty((self.comm.size, flat.numel()), dtype=flat.dtype)
            arr, dt = _array(flat)
            self.comm.allgather(arr, out=_array(every)[0], dtype=dt)
            for r, row in enumerate(outs):
                at = 0
                for k, o in enumerate(row):
                    n = ins[k].host.numel()
                    o.host.reshape(-1).copy_(every[r, at:at + n])
                    at += n
                    o.put()
        return self._submit(run, output_lists, opts)

    def _allgather_base(self, output, input, opts=None):
        o, i = _Staged(output), _Staged(input)

        def run():
            self.comm.allgather(i.arr, out=o.arr, dtype=i.dtype)
            o.put()
        return self._submit(run, [output], opts)

    def reduce_scatter(self, output_tensors, input_tensors, opts=None):
        op = _op_name(opts.reduceOp if opts is not None else dist.ReduceOp.SUM)
        pairs = [(_Staged(o), [_Staged(i) for i in ins])
                 for o, ins in zip(output_tensors, input_tensors)]

        def run():
            for o, ins in pairs:
                flat = torch.cat([i.host.reshape(-1) for i in ins])
                arr, dt = _array(flat)
                self.comm.reduce_scatter(arr, out=o.arr, op=op, dtype=dt)
                o.put()
        return self._submit(run, output_tensors, opts)

    def _reduce_scatter_base(self, output, input, opts=None):
        op = _op_name(opts.reduceOp if opts is not None else dist.ReduceOp.SUM)
        o, i = _Staged(output), _Staged(input)

        def run():
            self.comm.reduce_scatter(i.arr, out=o.arr, op=op, dtype=i.dtype)
            o.put()
        return self._submit(run, [output], opts)

    def barrier(self, opts=None):
        return self._submit(self.comm.barrier, [], opts)

    def gather(self, output_tensors, input_tensors, opts=None):
        root = opts.rootRank if opts is not None else 0
        i = _Staged(input_tensors[0])
        outs = [_Staged(o) for o in output_tensors[0]] if self.comm.rank == root else []

        def run():
            flat = None
            if outs:
                flat = torch.empty((self.comm.size,) + tuple(i.host.shape), dtype=i.host.dtype)
            self.comm.gather(i.arr, out=_array(flat)[0] if flat is not None else None, root=root,
                             dtype=i.dtype)
            for r, o in enumerate(outs):
                o.host.copy_(flat[r])
                o.put()
        return self._submit(run, output_tensors, opts)

    def scatter(self, output_tensors, input_tensors, opts=None):
        root = opts.rootRank if opts is not None else 0
        o = _Staged(output_tensors[0])
        ins = [_Staged(t) for t in input_tensors[0]] if self.comm.rank == root else []

        def run():
            flat = torch.cat([t.host.reshape(-1) for t in ins]) if ins else None
            self.comm.scatter(_array(flat)[0] if flat is not None else None, o.arr, root=root,
                              dtype=o.dtype)
            o.put()
        return self._submit(run, output_tensors, opts)

    def alltoall(self, output_tensors, input_tensors, opts=None):
        outs = [_Staged(t) for t in output_tensors]
        ins = [_Staged(t) for t in input_tensors]

        def run():
            flat_in = torch.cat([t.host.reshape(-1) for t in ins])
            flat_out = torch.empty_like(flat_in)
            arr, dt = _array(flat_in)
            self.comm.alltoall(arr, _array(flat_out)[0], dtype=dt)
            n = flat_in.numel() // len(outs)
            for r, o in enumerate(outs):
                o.host.reshape(-1).copy_(flat_out[r * n:(r + 1) * n])
                o.put()
        return self._submit(run, output_tensors, opts)

    def alltoall_base(self, output, input, output_split_sizes, input_split_sizes, opts=None):
        o, i = _Staged(output), _Staged(input)
        if not output_split_sizes and not input_split_sizes:
            def run():
                self.comm.alltoall(i.arr, o.arr, dtype=i.dtype)
                o.put()
            return self._submit(run, [output], opts)
        # split sizes count rows (the first dimension); rlx_alltoallv counts items
        n = self.comm.size
        row_in = input.numel() // input.shape[0] if input.dim() and input.shape[0] else 1
        row_out = output.numel() // output.shape[0] if output.dim() and output.shape[0] else 1
        sc = [s * row_in for s in input_split_sizes] or [input.numel() // n] * n
        rc = [s * row_out for s in output_split_sizes] or [output.numel() // n] * n

        def runv():
            self.comm.alltoallv(i.arr.reshape(-1), sc, o.arr.reshape(-1), rc, dtype=i.dtype)
            o.put()
        return self._submit(runv, [output], opts)

    # -- messages ------------------------------------------------------------
    def send(self, tensors, dstRank, tag=0):
        staged = [_Staged(t) for t in tensors]
        reqs = [self.comm.isend(s.arr, dstRank, tag=tag, dtype=s.dtype) for s in staged]
        return _MsgWork(reqs, staged, False)

    def recv(self, tensors, srcRank, tag=0):
        staged = [_Staged(t) for t in tensors]
        reqs = [self.comm.irecv(s.arr, source=srcRank, tag=tag, dtype=s.dtype) for s in staged]
        return _MsgWork(reqs, staged, True)

    def recv_anysource(self, tensors, tag=0):
        return self.recv(tensors, rlxcoll.ANY_SOURCE, tag)


# ---- wiring -------------------------------------------------------------------------

def _my_address():
    """An address of this host the other ranks can reach: the one it uses
    to reach rlxrun's rendezvous (a route lookup, no packet sent)."""
    rdv = os.environ.get("RLX_RENDEZVOUS", "")
    host = rdv.rsplit(":", 1)[0].strip("[]") if ":" in rdv else ""
    if host:
        try:
            with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
                s.connect((host, 9))
                return s.getsockname()[0]
        except OSError:
            pass
    return "127.0.0.1"


def _store_from_rlxcoll(timeout):
    """rlxcoll is wired (rlxrun, by hand, PMIx): rank 0 hosts the TCPStore
    torch needs, its address goes to every rank with a broadcast."""
    rlxcoll.init()
    w = rlxcoll.world()
    if w.size == 1:
        return dist.HashStore(), 0, 1
    buf = bytearray(64)
    if w.rank == 0:
        store = dist.TCPStore("0.0.0.0", 0, w.size, True, timeout=timeout, wait_for_workers=False)
        where = ("%s:%d" % (_my_address(), store.port)).encode()
        buf[:len(where)] = where
    w.bcast(buf, root=0)
    if w.rank != 0:
        host, port = buf.rstrip(b"\0").decode().rsplit(":", 1)
        store = dist.TCPStore(host, int(port), w.size, False, timeout=timeout)
    return store, w.rank, w.size


def _rlx_rendezvous(url, timeout=datetime.timedelta(minutes=30), **kwargs):
    store, rank, size = _store_from_rlxcoll(timeout)
    yield (store, rank, size)


def _wire_through_store(store, rank, size):
    """Under torchrun (no RLX_* environment): rank 0 hosts rlxcoll's
    rendezvous and publishes where, and a fresh job key, in torch's store."""
    if rank == 0:
        with socket.socket() as s:
            s.bind(("0.0.0.0", 0))
            port = s.getsockname()[1]
        host = os.environ.get("MASTER_ADDR", "127.0.0.1")
        store.set("rlxcoll/rendezvous", "%s:%d" % (host, port))
        store.set("rlxcoll/key", secrets.token_hex(32))
    os.environ["RLX_RENDEZVOUS"] = store.get("rlxcoll/rendezvous").decode()
    os.environ["RLX_JOB_KEY"] = store.get("rlxcoll/key").decode()
    os.environ["RLX_RANK"] = str(rank)
    os.environ["RLX_SIZE"] = str(size)
    if "LOCAL_RANK" in os.environ and "LOCAL_WORLD_SIZE" in os.environ:
        os.environ.setdefault("RLX_LOCAL_RANK", os.environ["LOCAL_RANK"])
        os.environ.setdefault("RLX_LOCAL_SIZE", os.environ["LOCAL_WORLD_SIZE"])


def _create(store, rank, size, timeout):
    if not rlxcoll.initialized():
        if "RLX_RANK" not in os.environ and "PMIX_RANK" not in os.environ and size > 1:
            _wire_through_store(store, rank, size)
        rlxcoll.init()
    w = rlxcoll.world()
    if (w.rank, w.size) == (rank, size):  # every rank: the default group (or all of them again)
        pg = ProcessGroupRlx(w.dup())
    else:
        # A subgroup (new_group): torch calls this on its members only, and
        # gives the group's store; each member puts its world rank there
        # under its group rank, and they make the group alone.
        store.set("rlxcoll/world_rank/%d" % rank, str(w.rank))
        ranks = [int(store.get("rlxcoll/world_rank/%d" % r)) for r in range(size)]
        pg = ProcessGroupRlx(w.create_group(ranks))
    # The group's timeout bounds each of its calls (Timeout raised), as
    # for gloo; torch's default one (30 min, passed when the program gave
    # none) leaves RLX_TIMEOUT's (default 300 s) in force.
    if timeout is not None and timeout != default_pg_timeout:
        pg.comm.timeout = timeout.total_seconds()
    return pg


_handlers = dist.rendezvous.__globals__["_rendezvous_handlers"]
_env_handler = _handlers["env"]


def _env_or_rlx(url, timeout=datetime.timedelta(minutes=30), **kwargs):
    """env:// as torch has it when MASTER_ADDR is set; else, in a process
    that rlxcoll can wire (rlxrun's RLX_RANK, or PMIx), rlxcoll's own."""
    if "MASTER_ADDR" not in os.environ and ("RLX_RANK" in os.environ or "PMIX_RANK" in os.environ):
        return _rlx_rendezvous(url, timeout=timeout, **kwargs)
    return _env_handler(url, timeout=timeout, **kwargs)


dist.Backend.register_backend("rlx", _create, **({"devices": ["cpu", "cuda"]} if TORCH2 else {}))
_handlers["rlx"] = _rlx_rendezvous
_handlers["env"] = _env_or_rlx
