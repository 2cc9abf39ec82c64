"""Which tiles of the score matrix a kernel visits, and which it masks.

A tile is a block of BLOCK_M queries by BLOCK_N keys. ``kernel_tiles``
replays the loop bounds of ``flash_forward_kernel`` in plain Python (no
triton): each program loops over key blocks up to ``end`` and masks only
those from ``unmasked`` on. ``mask_tiles`` classifies the tiles of any
keep-mask the way FlexAttention's block mask does: a tile with no kept
entry is skipped, a tile whose entries are all kept (its keys all inside
the matrix; rows past the last query are computed and dropped, so they
count as kept) needs no mask, any other tile is masked. For the causal mask the
two agree (tests/kernels/test_tiles.py).
"""

import torch

from .._checks import require_int, require_int_in, require_tensor

MAX_TILES = 2**20

SKIPPED, FULL, MASKED = 0, 1, 2


def kernel_tiles(n_q, n_k, block_m, block_n, causal: bool) -> torch.Tensor:
    """(query blocks, key blocks) of SKIPPED / FULL / MASKED, as the forward
    kernel's loop bounds decide them."""
    for name, value in (
        ("n_q", n_q),
        ("n_k", n_k),
        ("block_m", block_m),
        ("block_n", block_n),
    ):
        require_int(name, value)
    rows, cols = -(-n_q // block_m), -(-n_k // block_n)
    _require_few_tiles(rows, cols, "n_q, n_k, block_m and block_n")
    tiles = torch.full((rows, cols), SKIPPED, dtype=torch.int8)
    offset = n_k - n_q
    for i in range(rows):
        start = i * block_m
        end, unmasked = n_k, n_k // block_n * block_n
        if causal:
            end = min(n_k, start + block_m + offset)
            unmasked = (start + offset + 1) // block_n * block_n
        for j in range(0, end, block_n):
            tiles[i, j // block_n] = FULL if j < unmasked else MASKED
    return tiles


def mask_tiles(keep: torch.Tensor, block_m: int, block_n: int):
    """(query blocks, key blocks) of SKIPPED / FULL / MASKED for a boolean
    keep-mask (n_q, n_k), True = keep."""
    _require_tile_grid("keep", keep, torch.bool, limit=2**26)
    n_q, n_k = keep.shape
    require_int_in("block_m", block_m, 1, 2**16)
    require_int_in("block_n", block_n, 1, 2**16)
    rows, cols = -(-n_q // block_m), -(-n_k // block_n)
    _require_few_tiles(rows, cols, "keep, block_m and block_n")
    # Padded rows count as kept: the kernel computes them and drops them at
    # the store, so they never need a mask; padded keys do.
    padded = torch.ones(rows * block_m, cols * block_n, dtype=torch.bool)
    padded[:, n_k:] = False
    padded[:n_q, :n_k] = keep
    real = torch.zeros_like(padded)
    real[:n_q, :n_k] = True
    blocks = padded.view(rows, block_m, cols, block_n).transpose(1, 2)
    reals = real.view(rows, block_m, cols, block_n).transpose(1, 2)
    any_kept = (blocks & reals).flatten(2).any(-1)
    all_kept = blocks.flatten(2).all(-1)
    tiles = torch.full((rows, cols), MASKED, dtype=torch.int8)
    tiles[~any_kept] = SKIPPED
    tiles[all_kept] = FULL
    return tiles


def tile_counts(tiles: torch.Tensor) -> dict:
    """How many tiles are skipped, full and masked."""
    _require_tile_grid("tiles", tiles, torch.int8)
    return {
        "skipped": int((tiles == SKIPPED).sum()),
        "full": int((tiles == FULL).sum()),
        "masked": int((tiles == MASKED).sum()),
    }


def _require_tile_grid(name: str, grid, dtype, limit=MAX_TILES) -> None:
    require_tensor(name, grid)
    if grid.dtype != dtype or grid.dim() != 2 or 0 in grid.shape:
        raise ValueError(
            f"{name} must be a non-empty 2-D {dtype} tensor, got "
            f"{grid.dtype} of shape {tuple(grid.shape)}"
        )
    if grid.numel() > limit:
        raise ValueError(
            f"{name} of shape {tuple(grid.shape)} has more than {limit:,} "
            "entries"
        )


def _require_few_tiles(rows: int, cols: int, names="the sizes") -> None:
    if rows * cols > MAX_TILES:
        raise ValueError(
            f"{names} give {rows:,} x {cols:,} tiles, more than "
            f"{MAX_TILES:,}: use larger blocks or a shorter sequence"
        )
