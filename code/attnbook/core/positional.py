"""Positional encodings: telling attention where each token is.

The sinusoidal encoding of "Attention Is All You Need":
    P[pos, 2l]   = sin(pos / base^(2l/d))
    P[pos, 2l+1] = cos(pos / base^(2l/d))
Each (sin, cos) column pair shares one frequency omega_l = base^(-2l/d), which
is what makes a shift by delta positions a fixed rotation of every pair.
"""

import torch
from torch import nn

from .._checks import (
    require_finite_number,
    require_float,
    require_float_dtype,
    require_int,
    require_positive,
    require_probability,
    require_same_size,
)
from .._memory import require_matrix_fits, require_weights_fit
from .._random import restores_rng_on_error

_SMALLER = "use smaller sizes, or"


def pair_frequencies(
    dim: int, base: float = 10000.0, dtype=torch.float64
) -> torch.Tensor:
    """omega_l = base^(-2l/dim) for l = 0 .. ceil(dim/2) - 1, shape
    (ceil(dim/2),)."""
    require_int("dim", dim)
    require_float_dtype("dtype", dtype)
    require_positive("base", base)
    if not base > 1:
        raise ValueError(
            f"base must be above 1 (frequencies fall from 1 to about 1/base), "
            f"got {base}"
        )
    require_matrix_fits(
        "the frequencies", (dim,), torch.float64, hint=_SMALLER
    )
    return base ** (-torch.arange(0, dim, 2, dtype=dtype) / dim)


def sinusoidal_encoding(
    num_positions: int, dim: int, base: float = 10000.0
) -> torch.Tensor:
    """The sinusoidal position matrix P, shape (num_positions, dim), float32.

    Column 2l is sin(pos * omega_l), column 2l+1 is cos(pos * omega_l) with
    omega_l = base^(-2l/dim). An odd dim works: the last column is a sine.
    """
    require_int("num_positions", num_positions, minimum=0)
    require_int("dim", dim)
    require_matrix_fits(
        "the position table",
        (num_positions, dim),
        torch.float64,
        hint=_SMALLER,
    )
    angles = torch.arange(num_positions, dtype=torch.float64)[
        :, None
    ] * pair_frequencies(dim, base)
    encoding = torch.empty(num_positions, dim, dtype=torch.float64)
    encoding[:, 0::2] = torch.sin(angles)
    encoding[:, 1::2] = torch.cos(angles[:, : dim // 2])
    return encoding.float()


def position_shift_matrix(
    delta: float, dim: int, base: float = 10000.0
) -> torch.Tensor:
    """The matrix M, shape (dim, dim), with M @ P[i] = P[i + delta] for every
    position i.

    Block-diagonal: on each column pair (2j, 2j+1) it is the rotation
    [[cos(delta w_j), sin(delta w_j)], [-sin(delta w_j), cos(delta w_j)]]; it
    does not depend on i. For an odd dim the last (unpaired sine) column has no
    such map, so dim must be even here.
    """
    require_int("dim", dim)
    if dim % 2:
        raise ValueError(f"position_shift_matrix needs an even dim, got {dim}")
    require_matrix_fits("the matrix", (dim, dim), torch.float64, hint=_SMALLER)
    if isinstance(delta, bool) or not isinstance(delta, (int, float)):
        raise TypeError(f"delta must be a number, got {type(delta).__name__}")
    require_finite_number("delta", delta)
    angle = delta * pair_frequencies(dim, base)
    cos, sin = torch.cos(angle), torch.sin(angle)
    matrix = torch.zeros(dim, dim, dtype=torch.float64)
    rows = torch.arange(0, dim, 2)
    matrix[rows, rows] = cos
    matrix[rows, rows + 1] = sin
    matrix[rows + 1, rows] = -sin
    matrix[rows + 1, rows + 1] = cos
    return matrix.float()


def check_sequence(x, dim: int, max_len: int, seq_dim: int = -2) -> None:
    """x: float (..., n, dim), n <= max_len (n = x.shape[seq_dim])."""
    require_float("x", x)
    if x.dim() < 2:
        raise ValueError(f"x needs shape (..., n, dim), got {tuple(x.shape)}")
    require_int("dim", dim)
    require_int("max_len", max_len, minimum=0)
    axis = isinstance(seq_dim, int) and not isinstance(seq_dim, bool)
    if not axis or seq_dim not in range(-x.dim(), x.dim()):
        raise ValueError(
            f"seq_dim must be an axis of x ({x.dim()}-D), got {seq_dim!r:.24}"
        )
    require_same_size("feature size", "x", x.shape[-1], "dim", dim)
    if x.shape[seq_dim] > max_len:
        raise ValueError(
            f"sequence length {x.shape[seq_dim]} exceeds max_len {max_len}"
        )


class PositionalEncoding(nn.Module):
    """Adds the fixed sinusoidal encoding to a batch: x (B, n, dim) -> x +
    P[:n], then dropout."""

    @restores_rng_on_error
    def __init__(
        self,
        dim: int,
        max_len: int = 1024,
        dropout: float = 0.0,
        base: float = 10000.0,
    ):
        super().__init__()
        require_int("max_len", max_len)
        self.dim, self.max_len = dim, max_len
        self.dropout = nn.Dropout(require_probability("dropout", dropout))
        self.register_buffer(
            "encoding",
            sinusoidal_encoding(max_len, dim, base),
            persistent=False,
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        check_sequence(x, self.dim, self.max_len)
        return self.dropout(x + self.encoding[: x.shape[-2]].to(x.dtype))


class LearnedPositionalEmbedding(nn.Module):
    """Adds a trainable vector per position (BERT-style): x (B, n, dim) -> x
    + E[:n]."""

    @restores_rng_on_error
    def __init__(self, max_len: int, dim: int):
        super().__init__()
        require_int("max_len", max_len)
        require_int("dim", dim)
        require_weights_fit("LearnedPositionalEmbedding", (max_len, dim))
        self.dim, self.max_len = dim, max_len
        self.embedding = nn.Embedding(max_len, dim)
        nn.init.normal_(self.embedding.weight, std=0.02)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        check_sequence(x, self.dim, self.max_len)
        return x + self.embedding.weight[: x.shape[-2]].to(x.dtype)
