"""What the PyTorch training benchmarks share (bench/torch_ddp_step.py,
bench/torch_train_loop.py): Fashion-MNIST read from its gzip'd IDX files,
and examples/train's MLP (784-hidden...-10, ReLU) built from seed 1."""
import gzip
import os
import struct

import numpy as np
import torch


def idx(path):
    with gzip.open(path + ".gz", "rb") as f:
        raw = f.read()
    dims = raw[3]
    shape = struct.unpack(">" + "I" * dims, raw[4:4 + 4 * dims])
    return np.frombuffer(raw, dtype=np.uint8, offset=4 + 4 * dims).reshape(shape)


def load(d, split, normalise=False):
    """Images as float32 rows (p/255, or with train's mean and deviation
    taken out when normalise) and int64 labels, on the host."""
    x = idx(os.path.join(d, "%s-images-idx3-ubyte" % split)).reshape(-1, 784).astype(np.float32)
    x = (x / 255.0 - 0.2860) / 0.3530 if normalise else x / 255.0
    y = idx(os.path.join(d, "%s-labels-idx1-ubyte" % split))
    return torch.from_numpy(x), torch.from_numpy(y.astype(np.int64))


def mlp(hidden):
    """The widths (784, hidden..., 10) and the model, initialised from seed 1."""
    widths = [784] + hidden + [10]
    torch.manual_seed(1)
    layers = []
    for i in range(len(widths) - 1):
        layers.append(torch.nn.Linear(widths[i], widths[i + 1]))
        if i < len(widths) - 2:
            layers.append(torch.nn.ReLU())
    return widths, torch.nn.Sequential(*layers)
