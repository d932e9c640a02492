#!/usr/bin/env python3
"""PyTorch's own distributed test suite against the rlx backend.

    torch_suite.py [--backend rlx|gloo] [--name rlx|gloo] [-n 3] [-k PATTERN ...] [--exact] [--list]

Runs distributed_test.py's _DistTestBase (torch.testing._internal, shipped
with torch) the way torch's own test_distributed_spawn.py does: one test at
a time, each in WORLD_SIZE fresh processes spawned by the suite.

--backend is the backend every process group is really created with.
--name is the name the suite's own checks see (its BACKEND). With
--name rlx, rlx is added to the suite's tables for third-party backends
("plugin", "ddp", "subgroup"), and the tests the suite ties to the names
"gloo"/"nccl" are skipped. With --backend rlx --name gloo the suite runs
every test it would run for Gloo while each group (init_process_group,
new_group) is created as rlx: the test of "everything Gloo passes". The
default is --backend rlx --name gloo.

Prints one line per test (unittest -v) and a summary line
"torch_suite: backend B as N, n=W: P passed, F failed, E errors, S skipped".
"""
import os
import sys
import tempfile

# Children of the suite are spawned (multiprocessing "spawn"): they import
# this file again as __mp_main__ and take their settings from the
# environment the parent set here, so everything below runs in both.
if __name__ == "__main__":
    import argparse
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--backend", choices=("rlx", "gloo"), default="rlx")
    ap.add_argument("--name", choices=("rlx", "gloo"), default="gloo")
    ap.add_argument("-n", type=int, default=3, help="ranks (WORLD_SIZE), default 3")
    ap.add_argument("-k", action="append", default=[],
                    help="run only tests whose name contains this (repeatable)")
    ap.add_argument("--exact", action="store_true", help="-k names whole tests, not parts")
    ap.add_argument("--list", action="store_true", help="list the tests that would run")
    args = ap.parse_args()
    os.environ["RLX_SUITE_BACKEND"] = args.backend
    os.environ["BACKEND"] = args.name
    os.environ["WORLD_SIZE"] = str(args.n)
    os.environ.setdefault("TEMP_DIR", tempfile.mkdtemp(prefix="rlx-suite-"))

try:
    import expecttest  # noqa: F401
except ImportError:
    sys.path.append(os.path.join(os.path.dirname(os.path.abspath(__file__)), "shim"))

REAL = os.environ["RLX_SUITE_BACKEND"]
SEEN = os.environ["BACKEND"]

import torch.distributed as dist  # noqa: E402
import rlxcoll.torch  # noqa: E402,F401  (registers "rlx")
from torch.testing._internal.common_distributed import DistTestCases  # noqa: E402

if SEEN == "rlx":
    for feature in ("plugin", "ddp", "subgroup"):
        DistTestCases.backend_feature[feature].add("rlx")

if REAL != SEEN:
    # The suite names its backend in init_process_group and new_group;
    # create each group with the real one instead.
    def _real(backend):
        return REAL if backend is None or str(backend).lower() == SEEN else backend

    _init, _new = dist.init_process_group, dist.new_group

    def init_process_group(backend=None, *a, **kw):
        _init(_real(backend), *a, **kw)
        if dist.get_backend() != REAL:  # (else the suite would test another backend)
            raise RuntimeError("torch_suite: the group is %s, not %s" % (dist.get_backend(), REAL))

    def new_group(ranks=None, timeout=None, backend=None, *a, **kw):
        return _new(ranks, timeout if timeout is not None else dist.default_pg_timeout,
                    _real(backend), *a, **kw)

    dist.init_process_group, dist.new_group = init_process_group, new_group
    import torch.distributed.distributed_c10d as c10d  # noqa: E402
    c10d.init_process_group, c10d.new_group = init_process_group, new_group

from torch.testing._internal.distributed.distributed_test import (  # noqa: E402
    DistributedTest, TestDistBackend)


class TestDistBackendWithSpawn(TestDistBackend, DistributedTest._DistTestBase):
    def setUp(self):
        super().setUp()
        self._spawn_processes()


if __name__ == "__main__":
    import unittest
    loader = unittest.TestLoader()
    names = loader.getTestCaseNames(TestDistBackendWithSpawn)
    if args.k:
        names = [t for t in names if any(k == t if args.exact else k in t for k in args.k)]
        if args.exact and len(names) != len(set(args.k)):
            sys.exit("torch_suite: no such test: %s" % " ".join(sorted(set(args.k) - set(names))))
    if args.list:
        print("\n".join(names))
        sys.exit(0)
    suite = unittest.TestSuite(TestDistBackendWithSpawn(t) for t in names)
    result = unittest.TextTestRunner(verbosity=2, stream=sys.stdout).run(suite)
    ran = result.testsRun
    skipped = len(result.skipped)
    failed, errors = len(result.failures), len(result.errors)
    print("torch_suite: backend %s as %s, n=%s: %d passed, %d failed, %d errors, %d skipped"
          % (REAL, SEEN, os.environ["WORLD_SIZE"], ran - skipped - failed - errors - len(
              result.unexpectedSuccesses), failed, errors, skipped))
    sys.exit(0 if result.wasSuccessful() else 1)
