"""The rlxcoll module through numpy, on every rank of a job (rlxrun -n N):
    check_numpy.py collectives   every dtype x op x count, in place and not,
                                 against numpy's reference; the results
                                 bitwise equal on every rank; bcast, reduce,
                                 allgather, reduce_scatter, barrier,
                                 iallreduce, split, dup, bytearray,
                                 memoryview; bad arguments raise
    check_numpy.py messages      send/recv/isend/irecv around a ring for
                                 every dtype, from any source (the status
                                 names the sender), a truncated receive
                                 raises Truncated, bad arguments raise
    check_numpy.py mismatch      one rank passes another count: Mismatch,
                                 naming both calls, on every rank; counts
                                 that disagree in allgatherv, gatherv and
                                 scatterv (uneven_mismatch)
    check_numpy.py kill          rank 1 dies: PeerLost on every survivor
                                 within 2 s, and shrink() goes on
    check_numpy.py interrupt     SIGINT (Ctrl-C) at rank 0 stuck in a
                                 barrier: KeyboardInterrupt there, and the
                                 others' barrier fails naming it
Each rank prints "check_numpy: rank R: PASS" at the end."""
import os
import signal
import sys
import time

import numpy as np
import rlxcoll

DTYPES = [np.int8, np.uint8, np.int32, np.uint32, np.int64, np.uint64, np.float16, np.float32,
          np.float64]
OPS = ["sum", "prod", "min", "max", "avg", "band", "bor", "bxor"]
BITWISE = {"band": np.bitwise_and, "bor": np.bitwise_or, "bxor": np.bitwise_xor}


def data(rank, dtype, count):
    rng = np.random.default_rng(1000 + rank * 7919 + count)
    if np.issubdtype(dtype, np.floating):
        return rng.uniform(-2, 2, count).astype(dtype)
    info = np.iinfo(dtype)
    lo, hi = max(info.min, -100), min(info.max, 100)
    return rng.integers(lo, hi + 1, count).astype(dtype)


def reference(dtype, op, count, size):
    xs = [data(r, dtype, count) for r in range(size)]
    if np.issubdtype(dtype, np.floating):  # half precision reduces in float32
        acc = np.float64 if dtype == np.float64 else np.float32
        xs = [x.astype(acc) for x in xs]
    with np.errstate(over="ignore"):
        out = xs[0].copy()
        for x in xs[1:]:
            if op in ("sum", "avg"):
                out = out + x
            elif op == "prod":
                out = out * x
            elif op == "min":
                out = np.minimum(out, x)
            elif op in BITWISE:
                out = BITWISE[op](out, x)
            else:
                out = np.maximum(out, x)
    if op == "avg":
        out = out / size
    return out.astype(dtype)


def close(got, want, dtype, op):
    if not np.issubdtype(dtype, np.floating) or op in ("min", "max"):
        return np.array_equal(got, want)
    tol = {np.float16: 2e-3, np.float32: 1e-5, np.float64: 1e-12}[dtype]
    g, w = got.astype(np.float64), want.astype(np.float64)
    return bool(np.all(np.abs(g - w) <= tol * np.maximum(1.0, np.abs(w))))


def same_everywhere(w, arr):
    """The result's bytes equal on every rank."""
    b = np.frombuffer(arr.tobytes(), dtype=np.uint8)
    if b.size == 0:
        return True
    out = np.zeros(b.size * w.size, dtype=np.uint8)
    w.allgather(b.copy(), out=out)
    rows = out.reshape(w.size, -1)
    return all(np.array_equal(rows[0], rows[r]) for r in range(w.size))


def fail(w, what):
    print("check_numpy: rank %d: FAIL: %s" % (w.rank, what), flush=True)
    sys.exit(1)


def collectives(w):
    n, r = w.size, w.rank
    checked = 0
    for dtype in DTYPES:
        for op in OPS:
            if (op == "avg") != np.issubdtype(dtype, np.floating) and op in ("avg",) + tuple(BITWISE):
                try:
                    w.allreduce(data(r, dtype, 3), op=op)
                except rlxcoll.ArgumentError:
                    continue
                fail(w, "%s on %s did not raise ArgumentError" % (op, np.dtype(dtype)))
            if op == "prod" and np.issubdtype(dtype, np.floating):
                pass
            for count in (0, 1, 7, 1023, 65539):
                want = reference(dtype, op, count, n)
                x = data(r, dtype, count)
                w.allreduce(x, op=op)  # in place
                out = np.empty(count, dtype=dtype)
                w.allreduce(data(r, dtype, count), op=op, out=out)
                for got, how in ((x, "in place"), (out, "out=")):
                    if not close(got, want, dtype, op):
                        fail(w, "allreduce %s %s count %d %s: %s against %s" % (
                            np.dtype(dtype), op, count, how, got[:4], want[:4]))
                if not same_everywhere(w, x) or not np.array_equal(x, out):
                    fail(w, "allreduce %s %s count %d: results differ between ranks or calls"
                         % (np.dtype(dtype), op, count))
                checked += 1
    # bcast, reduce, allgather, reduce_scatter, barrier
    for dtype in (np.int32, np.float64, np.uint8):
        root = n - 1
        b = data(root, dtype, 101) if r == root else np.zeros(101, dtype=dtype)
        w.bcast(b, root=root)
        if not np.array_equal(b, data(root, dtype, 101)):
            fail(w, "bcast %s" % np.dtype(dtype))
        x = data(r, dtype, 33)
        res = np.zeros(33, dtype=dtype)
        w.reduce(x, op="max", root=0, out=res)
        if r == 0 and not np.array_equal(res, reference(dtype, "max", 33, n)):
            fail(w, "reduce %s" % np.dtype(dtype))
        g = np.zeros(33 * n, dtype=dtype)
        w.allgather(x, out=g)
        if not np.array_equal(g, np.concatenate([data(k, dtype, 33) for k in range(n)])):
            fail(w, "allgather %s" % np.dtype(dtype))
        full = data(r, dtype, 5 * n)
        part = np.zeros(5, dtype=dtype)
        w.reduce_scatter(full, out=part, op="min")
        allmin = np.minimum.reduce([data(k, dtype, 5 * n) for k in range(n)])
        if not np.array_equal(part, allmin[5 * r:5 * (r + 1)]):
            fail(w, "reduce_scatter %s" % np.dtype(dtype))
    w.barrier()
    # nonblocking, bytearray and memoryview, split and dup
    req = w.iallreduce(np.full(1000, r, dtype=np.float32), op="sum")
    res = req.wait()
    if not (req.test() and np.all(res == n * (n - 1) / 2)):
        fail(w, "iallreduce")
    ba = bytearray(b"rlxcoll!" if r == 0 else bytes(8))
    w.bcast(ba)
    mv = memoryview(np.full(4, r + 1, dtype=np.int64))
    w.allreduce(mv, op="prod")
    if bytes(ba) != b"rlxcoll!" or list(mv) != [int(np.prod(np.arange(1, n + 1)))] * 4:
        fail(w, "bytearray bcast or memoryview allreduce")
    half = w.split(r % 2, key=-r)
    if half.size != (n + 1 - r % 2) // 2 or half.rank != sorted(
            [k for k in range(n) if k % 2 == r % 2], reverse=True).index(r):
        fail(w, "split: rank %d of %d" % (half.rank, half.size))
    none = w.split(None)
    d = w.dup()
    s = np.array([1.0])
    d.allreduce(s)
    half.free()
    d.free()
    if none is not None or s[0] != n:
        fail(w, "split(None) or dup")
    # bad arguments raise, and change nothing
    for bad, exc in ((lambda: w.allreduce(b"read-only"), TypeError),
                     (lambda: w.allreduce(np.zeros(3, dtype=np.complex64)), TypeError),
                     (lambda: w.allreduce(np.zeros(3), op="xor"), ValueError),
                     (lambda: w.allreduce(np.zeros(3), out=np.zeros(4)), ValueError),
                     (lambda: w.allgather(np.zeros(3), out=np.zeros(3 * w.size + 1)), ValueError),
                     (lambda: w.allreduce(np.zeros(4, dtype=np.int16)), TypeError)):
        try:
            bad()
        except exc:
            continue
        fail(w, "a bad argument did not raise %s" % exc.__name__)
    half16 = np.zeros(3, dtype=np.int16)
    w.allreduce(half16, dtype="bfloat16")  # 2-byte items as bfloat16: fine
    w.barrier()
    return checked


def exchanges(w):
    """gather, scatter, alltoall of every dtype, to and from every root."""
    n, r = w.size, w.rank
    for dtype in DTYPES:
        for count in (1, 1023):
            blocks = [data(q * 31 + r, dtype, count) for q in range(n)]  # mine for rank q
            for root in range(n):
                out = np.zeros(n * count, dtype=dtype) if r == root else None
                got = w.gather(blocks[root], out, root=root)
                if r == root and not np.array_equal(
                        got, np.concatenate([data(root * 31 + q, dtype, count) for q in range(n)])):
                    fail(w, "gather %s x %d to %d" % (np.dtype(dtype), count, root))
                one = np.zeros(count, dtype=dtype)
                w.scatter(np.concatenate(blocks) if r == root else None, one, root=root)
                if not np.array_equal(one, data(r * 31 + root, dtype, count)):
                    fail(w, "scatter %s x %d from %d" % (np.dtype(dtype), count, root))
            out = np.zeros(n * count, dtype=dtype)
            w.alltoall(np.concatenate(blocks), out)
            want = np.concatenate([data(r * 31 + q, dtype, count) for q in range(n)])
            if not np.array_equal(out, want):
                fail(w, "alltoall %s x %d" % (np.dtype(dtype), count))
    # alltoallv: rank r sends q + r items to rank q (some none)
    sc = [q + r for q in range(n)]
    rcnt = [r + q for q in range(n)]
    src = np.concatenate([np.full(sc[q], 100 * r + q, dtype=np.int32) for q in range(n)])
    dst = np.zeros(sum(rcnt), dtype=np.int32)
    w.alltoallv(src, sc, dst, rcnt)
    want = np.concatenate([np.full(rcnt[q], 100 * q + r, dtype=np.int32) for q in range(n)])
    if not np.array_equal(dst, want):
        fail(w, "alltoallv: %r" % dst[:8])
    uneven(w)
    nonblocking(w)
    evens = list(range(0, n, 2))[::-1]  # made by the even ranks alone, highest first
    if r in evens:
        g = w.create_group(evens, tag=3)
        x = np.array([r], dtype=np.int64)
        g.allreduce(x)
        if x[0] != sum(evens) or g.rank != evens.index(r) or g.size != len(evens):
            fail(w, "create_group(%r): rank %d of %d, sum %d" % (evens, g.rank, g.size, x[0]))
        g.free()
    try:
        w.create_group([r, r])
        fail(w, "create_group took a rank twice")
    except rlxcoll.ArgumentError:
        pass
    try:
        w.alltoall(np.zeros(n * 2 + 1), np.zeros(n * 2 + 1))
        fail(w, "alltoall took a buffer that does not split in %d" % n) if n > 1 else None
    except ValueError:
        pass


def uneven(w):
    """gatherv, scatterv, allgatherv, reduce_scatterv (and their i-forms):
    rank q's block has (3q + 1) % 4 items, some none."""
    n, r = w.size, w.rank
    cnt = [(3 * q + 1) % 4 for q in range(n)]
    mine = np.arange(cnt[r], dtype=np.int64) + 10 * r
    want = np.concatenate([np.arange(cnt[q], dtype=np.int64) + 10 * q for q in range(n)])
    for i, root in enumerate(range(n)):
        call = w.gatherv if i % 2 == 0 else (lambda *a, **k: w.igatherv(*a, **k).wait())
        out = np.zeros(sum(cnt), dtype=np.int64) if r == root else None
        call(mine, out, cnt if r == root else None, root=root)
        if r == root and not np.array_equal(out, want):
            fail(w, "gatherv to %d: %r" % (root, out))
        one = np.zeros(cnt[r], dtype=np.int64)
        w.scatterv(want if r == root else None, cnt if r == root else None, one, root=root)
        if not np.array_equal(one, mine):
            fail(w, "scatterv from %d: %r" % (root, one))
    every = np.zeros(sum(cnt), dtype=np.int64)
    w.iallgatherv(mine, every, cnt).wait()
    if not np.array_equal(every, want):
        fail(w, "iallgatherv: %r" % every)
    every[:] = 0
    w.allgatherv(mine, every, cnt)
    if not np.array_equal(every, want):
        fail(w, "allgatherv: %r" % every)
    # reduce_scatterv: every rank's input is want + rank; block r is mine, summed
    for op, call in (("sum", w.reduce_scatterv), ("max", w.ireduce_scatterv)):
        got = np.zeros(cnt[r], dtype=np.int64)
        res = call(want + r, got, cnt, op=op)
        res = res.wait() if call == w.ireduce_scatterv else res
        exp = mine * n + n * (n - 1) // 2 if op == "sum" else mine + n - 1
        if res is not got or not np.array_equal(got, exp):
            fail(w, "reduce_scatterv %s: %r, not %r" % (op, got, exp))
    try:
        w.reduce_scatterv(want, np.zeros(cnt[r] + 1, dtype=np.int64), cnt)
        fail(w, "reduce_scatterv took an out of the wrong size")
    except ValueError:
        pass


def nonblocking(w):
    """Every collective's i-form gives what the blocking one gives; several
    in flight at once, waited for in reverse."""
    n, r = w.size, w.rank
    x = np.arange(6, dtype=np.float64) + r
    a, red, b = x.copy(), np.zeros(6), np.full(6, float(r))
    g, s = np.zeros(6 * n), np.zeros(6)
    ga, a2a = np.zeros(6 * n), np.zeros(6 * n)
    reqs = [w.iallreduce(a), w.ireduce(x, out=red, root=n - 1), w.ibcast(b, root=0),
            w.iallgather(x, g), w.ibarrier(), w.igather(x, ga if r == 0 else None, root=0),
            w.iscatter(np.tile(x, n) if r == 0 else None, s, root=0),
            w.ialltoall(np.tile(x, n), a2a)]
    rsout = np.zeros(6)
    reqs.append(w.ireduce_scatter(np.tile(x, n), rsout))
    for q in reversed(reqs):
        q.wait()
    tot = np.arange(6) * n + n * (n - 1) / 2
    ok = (np.array_equal(a, tot) and (r != n - 1 or np.array_equal(red, tot)) and
          np.array_equal(b, np.zeros(6)) and
          np.array_equal(g, np.concatenate([np.arange(6.0) + q for q in range(n)])) and
          (r != 0 or np.array_equal(ga, g)) and np.array_equal(s, np.arange(6.0)) and
          np.array_equal(a2a, g) and np.array_equal(rsout, (np.arange(6.0) * n + n * (n - 1) / 2)))
    if not ok:
        fail(w, "nonblocking forms: allreduce %r reduce %r bcast %r allgather %r gather %r "
             "scatter %r alltoall %r reduce_scatter %r" % (a, red, b, g, ga, s, a2a, rsout))


def messages(w):
    n, r = w.size, w.rank
    to, frm = (r + 1) % n, (r - 1) % n
    for i, dtype in enumerate(DTYPES):
        for count in (0, 1, 1023, 100003):
            out = data(r, dtype, count)
            got = np.zeros(count + 5, dtype=dtype)
            req = w.isend(out, to, tag=i)
            if req.status is not None:
                fail(w, "a send's request has a status")
            st = w.recv(got, source=frm, tag=i)
            req.wait()
            if st != (frm, i, count) or got[:count].tobytes() != data(frm, dtype, count).tobytes():
                fail(w, "ring %s x %d: status %r" % (np.dtype(dtype).name, count, st))
            back = np.zeros(count, dtype=dtype)
            rreq = w.irecv(back, tag=50 + i)  # from any source
            w.send(out, frm, tag=50 + i)
            rreq.wait()
            if rreq.status != (to, 50 + i, count) or back.tobytes() != data(to, dtype, count).tobytes():
                fail(w, "irecv from any source %s x %d: status %r" %
                     (np.dtype(dtype).name, count, rreq.status))
    w.barrier()
    if n > 1:
        if r == 1:
            w.send(np.arange(100, dtype=np.int32), 0, tag=3)
            w.send(np.arange(3, dtype=np.int32), 0, tag=3)
        if r == 0:
            small = np.zeros(10, dtype=np.int32)
            try:
                w.recv(small, 1, 3)
                fail(w, "a long message fit a short receive")
            except rlxcoll.Truncated as e:
                if "has 400 bytes, the receive room for 40" not in str(e):
                    fail(w, "Truncated says: %s" % e)
            if w.recv(small, 1, 3) != (1, 3, 3) or list(small[:3]) != [0, 1, 2]:
                fail(w, "the message after a truncated one")
    for bad in (lambda: w.send(np.zeros(1), n), lambda: w.send(np.zeros(1), 0, tag=-1),
                lambda: w.recv(np.zeros(1), source=n)):
        try:
            bad()
            fail(w, "a bad argument was taken")
        except rlxcoll.ArgumentError:
            pass
    try:
        w.recv(b"read-only", 0)
        fail(w, "received into a read-only buffer")
    except TypeError:
        pass
    w.barrier()


def mismatch(w):
    uneven_mismatch(w)
    try:
        w.allreduce(np.zeros(3 if w.rank == w.size - 1 else 2, dtype=np.float32))
    except rlxcoll.Mismatch as e:
        if "count=3" not in str(e) or "count=2" not in str(e) or e.code != -8:
            fail(w, "Mismatch does not name both calls: %s" % e)
        return
    fail(w, "no Mismatch")


def uneven_mismatch(w):
    """Counts that disagree in the uneven calls (each on a dup of its own,
    in the shared segment on one host): allgatherv whose last rank passes
    other counts (same total): Mismatch on every rank; gatherv whose last
    rank sends 2 items where the root (rank 0) expects 1, scatterv whose
    last rank expects 2 where the root sends 1: Mismatch on the rank that
    reads the block, naming both sizes; a rank whose part was done raises
    Mismatch or finds its next call revoked."""
    n, r, odd = w.size, w.rank, w.size - 1
    c = w.dup()
    cnt = [2] * n if r != odd else [3] + [2] * (n - 2) + [1]
    try:
        c.allgatherv(np.zeros(cnt[r], dtype=np.float64), np.zeros(sum(cnt)), cnt)
        fail(w, "allgatherv with counts that disagree: no Mismatch")
    except rlxcoll.Mismatch as e:
        if "recvcounts" not in str(e):
            fail(w, "allgatherv's Mismatch does not name the counts: %s" % e)
    for call in ("gatherv", "scatterv"):
        c = w.dup()
        two = np.zeros(2 if r == odd else 1)
        try:
            if call == "gatherv":
                c.gatherv(two, np.zeros(n) if r == 0 else None, [1] * n if r == 0 else None, root=0)
            else:
                c.scatterv(np.zeros(n) if r == 0 else None, [1] * n if r == 0 else None, two, root=0)
        except rlxcoll.Mismatch as e:
            if " expected " not in str(e) or "rlx_" + call not in str(e):
                fail(w, "%s's Mismatch does not name both sizes: %s" % (call, e))
            continue
        reader = 0 if call == "gatherv" else odd
        if r == reader:
            fail(w, "%s: the rank reading the wrong size returned" % call)
            continue
        try:  # its part was done: the next call learns it
            c.barrier()
            c.barrier()
            fail(w, "%s: the next calls after a mismatch succeeded" % call)
        except (rlxcoll.Revoked, rlxcoll.Mismatch):
            pass


def kill(w):
    w.barrier()
    if w.rank == 1:
        os.kill(os.getpid(), signal.SIGKILL)
    t0 = time.monotonic()
    try:
        w.allreduce(np.zeros(1000, dtype=np.float32))
    except rlxcoll.PeerLost as e:
        took = time.monotonic() - t0
        if took > 2.0 * float(os.environ.get("RLX_TEST_TIME_SCALE", "1")):
            fail(w, "PeerLost after %.2f s" % took)
        if "rank 1" not in str(e):
            fail(w, "PeerLost does not name rank 1: %s" % e)
        print("check_numpy: rank %d: PeerLost after %.2f s: %s" % (w.rank, took, e), flush=True)
        s = w.shrink()
        x = np.ones(1)
        s.allreduce(x)
        if x[0] != w.size - 1:
            fail(w, "allreduce after shrink")
        return
    fail(w, "no PeerLost")


def quorum(w):
    """Every rank but 0 stops itself (SIGSTOP: silent, not known dead, as
    behind a cut link): rank 0 finds them by heartbeats, and its shrink()
    raises PeerLost saying this side is a minority and stops
    (RLX_SHRINK_QUORUM=majority, the default). The stopped ones are
    killed once rank 0 is done (a watchdog each, 60 s at most)."""
    done = os.environ["QUORUM_DONE"]
    w.barrier()
    if w.rank > 0:
        if os.fork() == 0:
            for _ in range(600):
                if os.path.exists(done):
                    break
                time.sleep(0.1)
            os.kill(os.getppid(), signal.SIGKILL)
            os._exit(0)
        os.kill(os.getpid(), signal.SIGSTOP)
        return
    try:
        w.allreduce(np.zeros(4, dtype=np.float32))
        fail(w, "quorum: the allreduce went on without the stopped ranks")
    except rlxcoll.PeerLost:
        pass
    t0 = time.monotonic()
    try:
        w.shrink()
        fail(w, "quorum: shrink() went on with 1 of %d ranks" % w.size)
    except rlxcoll.PeerLost as e:
        if "fewer than half, so this side stops" not in str(e):
            fail(w, "quorum: shrink() raised %s" % e)
        print("check_numpy: rank 0: shrink() stopped after %.2f s: %s" % (time.monotonic() - t0, e),
              flush=True)
    finally:
        open(done, "w").close()


def revoke(w):
    """Rank 1 revokes a dup while the others wait in a barrier on it: they
    raise Revoked naming it at once; shrink() gives all a working Comm."""
    c = w.dup()
    c.barrier()
    t0 = time.monotonic()
    try:
        if w.rank == 1:
            time.sleep(0.3)
            c.revoke()
        c.barrier()
    except rlxcoll.Revoked as e:
        took = time.monotonic() - t0
        if "revoked by rank 1" not in str(e) or took > 1.5 * float(
                os.environ.get("RLX_TEST_TIME_SCALE", "1")):
            fail(w, "revoke: %s after %.2f s" % (e, took))
        print("check_numpy: rank %d: Revoked after %.2f s: %s" % (w.rank, took, e), flush=True)
    else:
        fail(w, "the barrier went on after revoke()")
    s = c.shrink()
    x = np.ones(3, dtype=np.float32)
    s.allreduce(x)
    if s.size != w.size or not np.all(x == w.size):
        fail(w, "allreduce after revoke and shrink: %s" % x)


def interrupt(w, cold=False):
    """cold: on a new communicator, whose first call sets up its shared
    segment; rank 0 stays alive afterwards (the others must hear of the
    interrupt, not of its exit)."""
    w.barrier()
    if cold:
        w = w.dup()
    if w.rank == 0:
        print("check_numpy: rank 0 (pid %d) waits" % os.getpid(), flush=True)
        t0 = time.monotonic()
        try:
            w.barrier()  # the others come only after 3 s; the test sends SIGINT before
        except KeyboardInterrupt:
            print("check_numpy: rank 0: KeyboardInterrupt after %.2f s" % (time.monotonic() - t0),
                  flush=True)
            if cold:
                time.sleep(8)
            return
        fail(w, "the barrier was not interrupted")
    time.sleep(3)
    t0 = time.monotonic()
    try:
        w.barrier()
    except (rlxcoll.Interrupted, rlxcoll.Revoked, rlxcoll.PeerLost) as e:
        took = time.monotonic() - t0
        if "interrupted" not in str(e):
            fail(w, "the error does not say rank 0 was interrupted: %s" % e)
        if cold and took > 2.0 * float(os.environ.get("RLX_TEST_TIME_SCALE", "1")):
            fail(w, "the interrupt took %.2f s to arrive" % took)
        print("check_numpy: rank %d: %s after %.2f s: %s" % (w.rank, type(e).__name__, took, e),
              flush=True)
        return
    fail(w, "the barrier went on without rank 0")


def main():
    mode = sys.argv[1]
    rlxcoll.init()
    w = rlxcoll.world()
    if mode == "collectives":
        n = collectives(w)
        exchanges(w)
        print("check_numpy: rank %d: %d allreduce cases; gather, scatter, alltoall" % (w.rank, n))
    elif mode == "messages":
        messages(w)
    elif mode == "mismatch":
        mismatch(w)
    elif mode == "kill":
        kill(w)
    elif mode == "revoke":
        revoke(w)
    elif mode == "quorum":
        quorum(w)
    elif mode == "coldinterrupt":
        interrupt(w, cold=True)
    elif mode == "interrupt":
        interrupt(w)
    print("check_numpy: rank %d: PASS" % w.rank, flush=True)


main()
