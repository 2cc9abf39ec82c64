"""A fused row softmax: the first Triton kernel (Triton's tutorial 02).

One program per row: it loads the row once from slow memory, subtracts the
maximum, exponentiates, normalises and stores, with every intermediate in
registers. PyTorch's unfused version reads and writes the matrix once per
step.
"""

import torch

from ._launch import tl, triton


@triton.jit
def softmax_kernel(X, Y, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)  # this program's row
    cols = tl.arange(0, BLOCK)  # a power of two >= n_cols
    inside = cols < n_cols
    x = tl.load(X + row * n_cols + cols, mask=inside, other=float("-inf"))
    x = x.to(tl.float32)
    z = tl.exp(x - tl.max(x, axis=0))
    y = z / tl.sum(z, axis=0)
    tl.store(Y + row * n_cols + cols, y.to(Y.dtype.element_ty), mask=inside)


def softmax(x: torch.Tensor) -> torch.Tensor:
    """softmax over the last dimension of a contiguous (rows, n) tensor."""
    y = torch.empty_like(x)
    block = triton.next_power_of_2(x.shape[1])
    softmax_kernel[(x.shape[0],)](x, y, x.shape[1], BLOCK=block)
    return y
