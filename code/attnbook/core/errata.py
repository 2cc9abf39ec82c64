"""Errata: code from the sources as they printed it, errors included.

Chapter 8 and the "Sources and errata" page compare these reproductions with
the correct mechanisms, to show what each error does. Nothing in the package
uses them; do not build on them.

Erratum 2, source 002's positional encoding: ``source_002_encoding`` (the
table it computes) and ``Source002PositionalEncoding`` (its module). The
correct encoding is ``attnbook.core.positional.sinusoidal_encoding``.
"""

import torch
from torch import nn

from .._checks import require_int, require_probability
from .._memory import require_matrix_fits
from .._random import restores_rng_on_error
from .positional import check_sequence


def source_002_encoding(num_positions: int, dim: int) -> torch.Tensor:
    """What source 002's ``PositionalEncoding`` class computes, bugs included
    (erratum 2). Do not use.

    A reproduction of a flawed source, kept to show its errors. Shape
    (num_positions, dim), float32, computed as the source does (float32
    throughout):
      column 2l   = sin(pos * 10000^(2l/dim))
      column 2l+1 = cos(pos * 10000^((2l+1)/dim))
    bug a: the position is MULTIPLIED by 10000^(2l/dim), so frequencies rise;
    bug b: exponents from arange(1, dim, 2), so a pair's cosine has its own
    frequency.
    The correct encoding is ``sinusoidal_encoding``: pos / 10000^(2l/dim) in
    both columns.
    """
    require_int("num_positions", num_positions, minimum=0)
    require_int("dim", dim)
    require_matrix_fits(
        "the encoding",
        (num_positions, dim),
        torch.float32,
        hint="use smaller sizes, or",
    )
    pos = torch.arange(num_positions, dtype=torch.float32)[:, None]
    sine_factor = torch.pow(
        torch.tensor(10000.0), torch.arange(0, dim, 2).float() / dim
    )
    cosine_factor = torch.pow(
        torch.tensor(10000.0), torch.arange(1, dim, 2).float() / dim
    )
    encoding = torch.zeros(num_positions, dim)
    encoding[:, 0::2] = torch.sin(pos * sine_factor)
    encoding[:, 1::2] = torch.cos(pos * cosine_factor)
    return encoding


class Source002PositionalEncoding(nn.Module):
    """Source 002's module as the source wrote it (erratum 2). Do not use.

    A reproduction of a flawed source: ``source_002_encoding`` stored as
    (max_len, 1, dim) for inputs laid out (seq, batch, dim); ``forward``
    returns x + encoding[: x.shape[0]]. The dropout layer is created and never
    applied, as in the source; a batch-first input (batch, seq, dim) is not
    refused but gets position b added to every token of sequence b.
    """

    @restores_rng_on_error
    def __init__(self, dim: int, dropout: float = 0.1, max_len: int = 512):
        super().__init__()
        require_probability("dropout", dropout)
        self.dropout = nn.Dropout(
            dropout
        )  # declared, never called: the source's dead line
        self.register_buffer(
            "encoding", source_002_encoding(max_len, dim)[:, None, :]
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        check_sequence(
            x, self.encoding.shape[-1], len(self.encoding), seq_dim=0
        )
        return x + self.encoding[: x.shape[0], :]
