"""Chapter 16 explorer: which tiles an attention kernel visits.

Choose the mask (none, causal, a causal sliding window of 256 keys), the
block size B (B_r = B_c = B) and the sequence length n. The picture shows
every tile of the n x n score matrix: skipped (never loaded), computed
without a mask, or computed and masked. For no mask and the causal mask the
tiles are the ones the book's forward kernel visits (its loop bounds,
``kernels.tiles.kernel_tiles``); the window is what a block mask such as
FlexAttention's would give (``mask_tiles``), the kernel of exercise 1.
"""

import matplotlib.pyplot as plt

from .._checks import require_int_in
from ..core.masking import sliding_window_mask
from ..display.kernels import TILE_COLOURS, TILE_NAMES
from ..kernels.tiles import kernel_tiles, mask_tiles, tile_counts
from ._explorer import buttons_explorer
from ._live import draws_view

MASKS = ("none", "causal", "window")
BLOCKS = (16, 32, 64, 128)
LENGTHS = (512, 1024, 2048)
WINDOW = 256


def tiles_view(mask: str = "causal", block: int = 64, n: int = 1024) -> dict:
    """The tile classes (query blocks, key blocks) for ``mask`` at block
    size ``block`` and length ``n``, their counts, and the share of the
    score matrix's multiply-adds the kernel does."""
    if mask not in MASKS:
        raise ValueError(f"mask must be one of {MASKS}, got {mask!r:.40}")
    require_int_in("block", block, 16, 1024)
    require_int_in("n", n, 1, 8192)
    if mask == "window":
        tiles = mask_tiles(sliding_window_mask(n, n, WINDOW), block, block)
    else:
        tiles = kernel_tiles(n, n, block, block, causal=mask == "causal")
    counts = tile_counts(tiles)
    total = tiles.numel()
    return {
        "setting": (mask, block, n),
        "tiles": tiles,
        "counts": counts,
        "computed": (counts["full"] + counts["masked"]) / total,
    }


@draws_view
def plot_tiles(view: dict):
    """The tiles as an image, a legend, and the counts in the title."""
    from matplotlib.colors import ListedColormap
    from matplotlib.patches import Patch

    fig, ax = plt.subplots(figsize=(5.6, 4.6))
    colours = ListedColormap([TILE_COLOURS[k] for k in sorted(TILE_COLOURS)])
    ax.imshow(
        view["tiles"].numpy(),
        cmap=colours,
        vmin=0,
        vmax=2,
        interpolation="nearest",
    )
    from matplotlib.ticker import MaxNLocator

    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_xlabel("key block")
    ax.set_ylabel("query block (one program each)")
    handles = [
        Patch(color=TILE_COLOURS[k], label=TILE_NAMES[k])
        for k in sorted(TILE_NAMES)
    ]
    fig.legend(
        handles=handles,
        loc="lower center",
        ncol=3,
        fontsize=7.5,
        frameon=False,
    )
    ax.set_title(" ", fontsize=9)
    fig.subplots_adjust(left=0.12, right=0.97, top=0.88, bottom=0.17)
    update_tiles_figure(fig, view)
    return fig


@draws_view
def update_tiles_figure(fig, view: dict) -> list:
    """Show ``view`` in a figure made by ``plot_tiles``; returns the artists
    that changed."""
    ax = fig.axes[0]
    (image,) = ax.images
    tiles = view["tiles"].numpy()
    image.set_data(tiles)
    rows, cols = tiles.shape
    image.set_extent((-0.5, cols - 0.5, rows - 0.5, -0.5))
    ax.set_xlim(-0.5, cols - 0.5)
    ax.set_ylim(rows - 0.5, -0.5)
    mask, block, n = view["setting"]
    c = view["counts"]
    ax.title.set_text(
        f"{mask}, B = {block}, n = {n:,}: {c['full'] + c['masked']} of "
        f"{tiles.size} tiles computed ({view['computed']:.0%}), "
        f"{c['masked']} masked"
    )
    return [ax]  # its limits and ticks change with the block size


def tiles_explorer(mask: str = "causal", block: int = 64, n: int = 1024):
    """Buttons for the mask, the block size and the length; redraws the
    tiles a kernel visits."""
    options = {
        "mask": [(m, m) for m in MASKS],
        "block": [(str(b), b) for b in BLOCKS],
        "n": [(f"{v:,}", v) for v in LENGTHS],
    }
    labels = {"mask": "mask", "block": "block B", "n": "length n"}
    first = {"mask": mask, "block": block, "n": n}
    return buttons_explorer(
        options,
        labels,
        first,
        "n",
        tiles_view,
        plot_tiles,
        update_tiles_figure,
    )
