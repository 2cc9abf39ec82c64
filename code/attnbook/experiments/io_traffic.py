"""Slow-memory traffic of attention: plain against tiled (FlashAttention).

A GPU holds Q, K, V and O in its large, slow memory (HBM) and computes in a
small, fast one (SRAM) of M numbers. What limits attention there is how many
numbers travel between the two. ``tiled_attention`` runs the FlashAttention
forward pass (Dao et al., 2022, Algorithm 1, in the loop order of
FlashAttention-2: query blocks outside, key blocks inside) on explicit tiles
and counts every number it loads from and stores to slow memory;
``plain_attention_traffic`` counts the same for the standard algorithm, which
writes S and P to slow memory and reads them back.
"""

import math
from dataclasses import dataclass

import torch

from .._checks import (
    all_finite,
    require_float,
    require_int,
    require_same_device,
    require_same_dtype,
)


@dataclass
class SlowMemory:
    """Counts the numbers moved between slow and fast memory."""

    reads: int = 0
    writes: int = 0

    def load(self, tile: torch.Tensor) -> torch.Tensor:
        self.reads += _numel(tile)
        return tile

    def store(self, tile: torch.Tensor) -> torch.Tensor:
        self.writes += _numel(tile)
        return tile

    @property
    def total(self) -> int:
        return self.reads + self.writes


def _numel(tile) -> int:
    if not isinstance(tile, torch.Tensor):
        raise TypeError(f"tile must be a tensor, got {type(tile).__name__}")
    return tile.numel()


def on_chip_numbers(rows: int, cols: int, d: int, d_v=None) -> int:
    """Numbers one step of ``tiled_attention`` holds in fast memory.

    Q_i (rows, d), the output accumulator (rows, d_v), m and l (rows each),
    K_j (cols, d), V_j (cols, d_v) and the tile of scores S_ij (rows, cols),
    which P_ij overwrites. d_v: None means d.
    """
    for name, value in (("rows", rows), ("cols", cols), ("d", d)):
        require_int(name, value)
    d_v = d if d_v is None else require_int("d_v", d_v)
    return rows * (d + d_v + 2) + cols * (d + d_v) + rows * cols


def block_sizes(sram_size: int, d: int, d_v=None) -> tuple:
    """(B_r, B_c): tiles for a fast memory of M = ``sram_size`` numbers.

    FlashAttention's Algorithm 1 (Dao et al. 2022, line 1) runs the key
    blocks in the outer loop and takes B_c = ceil(M / 4d) keys and
    B_r = min(ceil(M / 4d), d) queries. With the queries outside (the order
    of FlashAttention-2, used here) the two roles swap: B_r = ceil(M / 4d)
    queries stay on chip while blocks of B_c = min(B_r, d) keys stream past.
    M / 4d is a constant-factor choice, and at small M its tiles overflow M
    (64 x 64 tiles at M = 16,384, d = 64 hold 20,608 numbers), so B_r is
    lowered until ``on_chip_numbers`` fits in M. d_v: None means d.
    """
    require_int("d", d)
    d_v = d if d_v is None else require_int("d_v", d_v)
    _require_room(sram_size, d, d_v)
    rows = math.ceil(sram_size / (4 * d))
    while on_chip_numbers(rows, min(rows, d), d, d_v) > sram_size:
        rows -= 1
    return rows, min(rows, d)


def tiled_attention(q, k, v, sram_size: int):
    """softmax(q k^T / sqrt(d)) v, one (B_r x B_c) tile at a time.

    q: (n_q, d), k: (n_k, d), v: (n_k, d_v); ``sram_size``: the fast memory, in
    numbers (it sets the tiles, ``block_sizes``). Returns (output, lse,
    memory): output (n_q, d_v), the log-sum-exp per query (n_q,), and the
    ``SlowMemory`` counts of the numbers loaded and stored.
    """
    _check(q, k, v, sram_size)
    (n_q, d), n_k = q.shape, k.shape[0]
    rows, cols = block_sizes(sram_size, d, v.shape[1])
    hbm = SlowMemory()
    out = q.new_empty(n_q, v.shape[1])  # on q's device, in q's dtype
    lse = q.new_empty(n_q)
    for i in range(0, n_q, rows):
        q_i = hbm.load(q[i : i + rows]) / math.sqrt(d)
        m = q.new_full((q_i.shape[0], 1), -math.inf)
        total = torch.zeros_like(m)
        acc = q.new_zeros(q_i.shape[0], v.shape[1])
        for j in range(0, n_k, cols):
            k_j, v_j = hbm.load(k[j : j + cols]), hbm.load(v[j : j + cols])
            s = q_i @ k_j.T  # the tile of scores: on chip only
            m_new = torch.maximum(m, s.max(dim=1, keepdim=True).values)
            p = torch.exp(s - m_new)
            rescale = torch.exp(m - m_new)
            total = rescale * total + p.sum(dim=1, keepdim=True)
            acc = rescale * acc + p @ v_j
            m = m_new
        out[i : i + rows] = hbm.store(acc / total)
        lse[i : i + rows] = hbm.store((m + torch.log(total)).squeeze(1))
    return out, lse, hbm


def plain_attention_traffic(n_q: int, n_k: int, d: int, d_v=None) -> int:
    """Numbers the standard algorithm moves (Dao et al. 2022, Algorithm 0):
    read Q and K, write S; read S, write P; read P and V, write O."""
    for name, value in (("n_q", n_q), ("n_k", n_k), ("d", d)):
        require_int(name, value)
    d_v = d if d_v is None else require_int("d_v", d_v)
    scores = n_q * n_k
    return (
        (n_q * d + n_k * d + scores)  # S = Q K^T
        + (scores + scores)  # P = softmax(S)
        + (scores + n_k * d_v + n_q * d_v)  # O = P V
    )


def _check(q, k, v, sram_size) -> None:
    for name, tensor in (("q", q), ("k", k), ("v", v)):
        require_float(name, tensor)
        if tensor.dim() != 2 or 0 in tensor.shape:
            raise ValueError(
                f"{name} must be a non-empty matrix, got shape "
                f"{tuple(tensor.shape)}"
            )
    require_same_device(q=q, k=k, v=v)
    dtype = require_same_dtype(q=q, k=k, v=v)
    if dtype not in (torch.float32, torch.float64):
        raise TypeError(f"q, k and v must be float32 or float64, got {dtype}")
    for name, tensor in (("q", q), ("k", k), ("v", v)):
        if not all_finite(tensor):
            raise ValueError(f"{name} holds NaN or infinite numbers")
    if k.shape[1] != q.shape[1] or v.shape[0] != k.shape[0]:
        raise ValueError(
            "q (n_q, d), k (n_k, d) and v (n_k, d_v) do not fit: got "
            f"{tuple(q.shape)}, {tuple(k.shape)}, {tuple(v.shape)}"
        )
    _require_room(sram_size, q.shape[1], v.shape[1])


def _require_room(sram_size, d, d_v) -> None:
    """sram_size: an int that holds the tiles of one query and one key."""
    require_int("sram_size", sram_size)
    smallest = on_chip_numbers(1, 1, d, d_v)
    if sram_size < smallest:
        raise ValueError(
            f"sram_size = {sram_size} cannot hold the tiles of one query and "
            f"one key with d = {d}, d_v = {d_v}: it needs at least "
            f"{smallest} numbers"
        )
