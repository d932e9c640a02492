"""What the torch side-by-side benchmarks share (bench/torch_p2p.py,
bench/torch_a2a.py): their arguments ([max_bytes [rounds]]), one thread,
the default group on "rlx" with a "gloo" group over the same ranks, and
rounds that alternate the two, reduced to medians."""
import statistics
import sys

import torch
import torch.distributed as dist

import rlxcoll.torch  # noqa: F401


def start(default_max_bytes):
    """(max_bytes, rounds, gloo group, rank, size), the groups made."""
    max_bytes = int(sys.argv[1]) if len(sys.argv) > 1 else default_max_bytes
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 3
    torch.set_num_threads(1)
    dist.init_process_group("rlx")
    gloo = dist.new_group(backend="gloo")
    return max_bytes, rounds, gloo, dist.get_rank(), dist.get_world_size()


def medians(timed, gloo, rounds):
    """(rlx, gloo): medians of timed(group) over rounds, the two alternating."""
    r, g = [], []
    for _ in range(rounds):
        r.append(timed(None))
        g.append(timed(gloo))
    return statistics.median(r), statistics.median(g)
