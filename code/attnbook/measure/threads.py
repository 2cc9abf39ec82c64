"""How many CPU threads PyTorch uses inside a block of code.

Small models run faster on one thread (no thread pool to wake and synchronise,
which on a busy machine costs more than the arithmetic), and a fixed thread
count makes a training run repeat bit for bit on the same machine. Another CPU
still rounds differently (another SIMD width, other BLAS kernels): what must
not move there is trained in float64 or shipped as pinned weights.
"""

from contextlib import contextmanager

import torch

from .._checks import require_int


@contextmanager
def torch_threads(count: int | None):
    """Run the block with ``count`` intra-op threads (None: leave as is),
    then restore."""
    if count is not None:
        require_int("count", count)
        if count > 2**31 - 1:  # torch takes a C int
            raise ValueError(f"count must be at most 2**31 - 1, got {count}")
    before = torch.get_num_threads()
    if count is not None:
        torch.set_num_threads(count)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def single_thread():
    """Run the block on one CPU thread: ``with single_thread(): ...``."""
    return torch_threads(1)
