"""rlxcoll: collectives between the processes of a job, from Python.

    import numpy as np, rlxcoll
    rlxcoll.init()                      # rlxrun's environment, PMIx, or a world of one
    comm = rlxcoll.world()
    x = np.full(4, comm.rank, dtype=np.float32)
    comm.allreduce(x, op="sum")         # in place; out= for another buffer
    print(comm.rank, comm.size, comm.leader, x)

Buffers are anything with the buffer protocol, C-contiguous: numpy arrays
of int8/uint8/int32/uint32/int64/uint64/float16/float32/float64, bytearray,
memoryview, array.array; the dtype comes from the buffer's format (pass
dtype='bfloat16' for 2-byte bfloat16 data viewed as integers). Failures
raise rlxcoll.Error subclasses (PeerLost, Mismatch, Timeout, Revoked, ...)
whose str() names the ranks and the call. The GIL is released while a call
waits; Ctrl-C (KeyboardInterrupt) stops it here and fails it on the other
ranks. rlxcoll.torch is the "rlx" backend of torch.distributed. See
rlxcoll-python(7).
"""
import atexit as _atexit

from ._rlxcoll import (Comm, Request, Error, ArgumentError, NoMemory, StateError,
                       BootstrapError, AuthError, PeerLost, Timeout, Mismatch, Corrupt,
                       Revoked, DeviceError, SysError, Interrupted, Truncated, init,
                       finalize, initialized, world, joined, ANY_SOURCE, ANY_TAG)

__all__ = ["Comm", "Request", "Error", "ArgumentError", "NoMemory", "StateError",
           "BootstrapError", "AuthError", "PeerLost", "Timeout", "Mismatch", "Corrupt",
           "Revoked", "DeviceError", "SysError", "Interrupted", "Truncated", "init",
           "finalize", "initialized", "world", "joined", "ANY_SOURCE", "ANY_TAG"]


def _at_exit():
    # Leave the job cleanly if the program did not; a failure here (a peer
    # gone) is not worth a traceback at exit.
    try:
        finalize()
    except Error:
        pass


_atexit.register(_at_exit)
