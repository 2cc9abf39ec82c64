"""The forward kernel's loop bounds visit exactly the tiles the causal mask
needs, and mask exactly those it cuts; the counts follow the triangle."""

import pytest
import torch

from attnbook import causal_mask, sliding_window_mask
from attnbook.kernels.tiles import (
    FULL,
    MASKED,
    SKIPPED,
    kernel_tiles,
    mask_tiles,
    tile_counts,
)


@pytest.mark.parametrize(
    "n_q, n_k, block_m, block_n",
    [
        (64, 64, 16, 16),
        (200, 200, 32, 16),
        (37, 53, 16, 32),
        (1, 90, 16, 16),
        (128, 128, 64, 128),
    ],
)
@pytest.mark.parametrize("causal", [False, True])
def test_kernel_bounds_match_the_mask(n_q, n_k, block_m, block_n, causal):
    keep = causal_mask(n_q, n_k) if causal else torch.ones(n_q, n_k).bool()
    assert torch.equal(
        kernel_tiles(n_q, n_k, block_m, block_n, causal),
        mask_tiles(keep, block_m, block_n),
    )


def test_causal_counts_are_the_triangle():
    counts = tile_counts(kernel_tiles(1024, 1024, 64, 64, causal=True))
    blocks = 1024 // 64
    assert counts == {
        "skipped": blocks * (blocks - 1) // 2,
        "full": blocks * (blocks - 1) // 2,
        "masked": blocks,
    }


def test_a_window_skips_more_and_the_check_can_fail():
    keep = sliding_window_mask(256, 256, window=32)
    tiles = mask_tiles(keep, 32, 32)
    assert (
        tile_counts(tiles)["skipped"]
        > tile_counts(mask_tiles(causal_mask(256), 32, 32))["skipped"]
    )
    # the kernel has no window: its causal bounds do not match this mask
    assert not torch.equal(tiles, kernel_tiles(256, 256, 32, 32, True))
    assert set(tiles.unique().tolist()) <= {SKIPPED, FULL, MASKED}
