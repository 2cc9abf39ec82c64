"""Chapter 16's figures: the kernel's grid of programs over the tiles, the
decoding split and the paged cache, the roofline, and the GPU timings."""

import matplotlib.pyplot as plt
from matplotlib.patches import FancyArrowPatch, Rectangle

from .._checks import require_int_in, require_positive
from ..kernels.tiles import FULL, MASKED, SKIPPED, kernel_tiles, tile_counts

TILE_COLOURS = {SKIPPED: "0.93", FULL: "#4c8cc4", MASKED: "#f0a04b"}
TILE_NAMES = {
    SKIPPED: "skipped (never loaded)",
    FULL: "computed, no mask",
    MASKED: "computed and masked",
}


def _box(ax, x, y, w, h, colour, text=None, size=8.5, hatch=None):
    ax.add_patch(
        Rectangle(
            (x, y),
            w,
            h,
            facecolor=colour,
            edgecolor="0.3",
            linewidth=0.8,
            hatch=hatch,
        )
    )
    if text:
        ax.text(
            x + w / 2, y + h / 2, text, ha="center", va="center", fontsize=size
        )


def _arrow(ax, start, end, colour="0.25"):
    ax.add_patch(
        FancyArrowPatch(
            start,
            end,
            arrowstyle="-|>",
            mutation_scale=10,
            color=colour,
            lw=1.0,
        )
    )


def draw_tiles(ax, tiles, highlight_row=None):
    """The tiles (query blocks down, key blocks across) coloured by class;
    ``highlight_row``: one program's row, outlined."""
    if not isinstance(ax, plt.Axes):
        raise TypeError(
            f"ax must be a matplotlib Axes, got {type(ax).__name__}"
        )
    tile_counts(tiles)  # checks: a 2-D int8 grid of tile classes
    if tiles.numel() > 64 * 64 or tiles.min() < 0 or tiles.max() > 2:
        raise ValueError(
            "tiles must hold at most 64 x 64 classes 0, 1, 2 (SKIPPED, FULL, "
            f"MASKED), got shape {tuple(tiles.shape)}"
        )
    if highlight_row is not None:
        require_int_in("highlight_row", highlight_row, 0, tiles.shape[0] - 1)
    rows, cols = tiles.shape
    for i in range(rows):
        for j in range(cols):
            _box(ax, j, rows - 1 - i, 1, 1, TILE_COLOURS[int(tiles[i, j])])
    if highlight_row is not None:
        ax.add_patch(
            Rectangle(
                (0, rows - 1 - highlight_row),
                cols,
                1,
                fill=False,
                edgecolor="C3",
                lw=2.2,
            )
        )
    ax.set_xlim(-0.1, cols + 0.1)
    ax.set_ylim(-0.1, rows + 0.1)
    ax.set_aspect("equal")
    ax.axis("off")


def draw_kernel_grid(blocks: int = 6, row: int = 3):
    """Left: the causal kernel's tiles for ``blocks`` query and key blocks;
    program ``row`` (outlined) holds Q_row, m, ℓ and its accumulator in
    registers while K_j, V_j stream in from HBM, left to right, up to the
    diagonal. Right: the launch grid, one program per (query block, head).
    Returns the figure."""
    require_int_in("blocks", blocks, 2, 16)
    require_int_in("row", row, 0, blocks - 1)
    fig, (left, right) = plt.subplots(
        1, 2, figsize=(8.6, 3.7), gridspec_kw={"width_ratios": [1.25, 1]}
    )
    tiles = kernel_tiles(blocks * 16, blocks * 16, 16, 16, causal=True)
    draw_tiles(left, tiles, highlight_row=row)
    y = blocks - 1 - row + 0.5
    left.text(
        -0.25,
        y,
        f"program {row + 1}:\n$Q_{{{row + 1}}}$, $m$, $\\ell$,"
        "\nacc in\nregisters",
        ha="right",
        va="center",
        fontsize=8,
    )
    for j in range(row + 1):
        left.text(
            j + 0.5,
            blocks + 0.35,
            f"$K_{j + 1}, V_{j + 1}$",
            ha="center",
            fontsize=7.5,
        )
    _arrow(left, (0.1, blocks + 0.9), (row + 0.9, blocks + 0.9))
    left.text(
        (row + 1) / 2,
        blocks + 1.15,
        "streamed from HBM",
        ha="center",
        fontsize=8,
    )
    left.set_ylim(-0.1, blocks + 1.5)
    left.set_xlim(-2.6, blocks + 0.1)
    for k, name in TILE_NAMES.items():
        left.add_patch(
            Rectangle((0, 0), 0, 0, color=TILE_COLOURS[k], label=name)
        )
    left.legend(
        loc="upper center",
        bbox_to_anchor=(0.6, -0.0),
        ncol=3,
        fontsize=7.5,
        frameon=False,
    )
    heads = 3
    for h in range(heads):
        for i in range(blocks):
            colour = "#f6c6c6" if (i == row and h == 0) else "white"
            _box(
                right,
                h * 1.2,
                blocks - 1 - i,
                1,
                0.85,
                colour,
                text=f"({i + 1}, {h + 1})",
                size=7.5,
            )
    right.text(
        heads * 1.2 / 2 - 0.1,
        blocks + 0.2,
        "grid: (⌈n / B_r⌉, batch × heads)\none program each,\n"
        "spread over the GPU's SMs",
        ha="center",
        fontsize=8,
    )
    right.set_xlim(-0.3, heads * 1.2 + 0.2)
    right.set_ylim(-0.3, blocks + 1.3)
    right.axis("off")
    fig.subplots_adjust(
        left=0.02, right=0.98, top=0.98, bottom=0.1, wspace=0.05
    )
    return fig


def draw_decoding(splits: int = 4, pages: int = 6):
    """Top: Flash-Decoding, one query's keys split over ``splits`` programs,
    each writing (o_s, L_s), merged by their log-sum-exp. Bottom: a paged
    cache, logical pages mapped to shuffled physical pages by the block
    table. Returns the figure."""
    require_int_in("splits", splits, 1, 8)
    require_int_in("pages", pages, 1, 6)
    fig, (top, bottom) = plt.subplots(2, 1, figsize=(8.6, 4.6))
    width = 8.0 / splits
    for s in range(splits):
        x = s * width
        _box(
            top,
            x,
            2.2,
            width - 0.1,
            0.55,
            "#d8e6f2",
            text=f"keys {s * 1024:,} to {(s + 1) * 1024 - 1:,}",
            size=7.5,
        )
        _arrow(top, (x + width / 2, 2.15), (x + width / 2, 1.55))
        _box(
            top,
            x + 0.15,
            0.95,
            width - 0.4,
            0.55,
            "#fde3c6",
            text=f"program {s + 1}: $o_{s + 1}, L_{s + 1}$",
            size=7.5,
        )
        _arrow(top, (x + width / 2, 0.9), (4.0, 0.45))
    _box(
        top,
        2.6,
        -0.15,
        2.8,
        0.55,
        "#d9ead3",
        text=r"merge: $o = \sum_s e^{L_s - L}\, o_s$",
        size=8,
    )
    top.text(8.15, 2.47, "one query\n$q$, d numbers", fontsize=8, va="center")
    top.set_xlim(-0.1, 9.6)
    top.set_ylim(-0.3, 2.9)
    top.axis("off")
    order = [4, 0, 5, 2, 1, 3][:pages]
    for p in range(pages):
        _box(
            bottom,
            p * 1.1,
            1.5,
            1.0,
            0.5,
            "#d8e6f2",
            text=f"logical {p}",
            size=7.5,
        )
        _box(
            bottom,
            order[p] * 1.1,
            0.0,
            1.0,
            0.5,
            "#fde3c6",
            text=f"page {order[p]}",
            size=7.5,
        )
        _arrow(bottom, (p * 1.1 + 0.5, 1.45), (order[p] * 1.1 + 0.5, 0.55))
    bottom.text(
        pages * 1.1 + 0.2,
        1.75,
        "one sequence's positions,\nin pages of 16",
        fontsize=8,
        va="center",
    )
    bottom.text(
        pages * 1.1 + 0.2,
        0.95,
        f"block table: {order}",
        fontsize=8,
        va="center",
        family="monospace",
    )
    bottom.text(
        pages * 1.1 + 0.2,
        0.25,
        "the shared pool\n(GPU memory)",
        fontsize=8,
        va="center",
    )
    bottom.set_xlim(-0.1, 9.6)
    bottom.set_ylim(-0.2, 2.2)
    bottom.axis("off")
    fig.subplots_adjust(
        left=0.02, right=0.98, top=0.98, bottom=0.02, hspace=0.15
    )
    return fig


def plot_roofline(peak_tflops, bandwidth_tbs, points, measured=(), title=""):
    """Attainable TFLOP/s = min(peak, intensity x bandwidth), log-log.
    ``points``: (label, FLOPs per byte) drawn on the roof; ``measured``:
    (label, FLOPs per byte, TFLOP/s) drawn as measured. Returns the
    figure."""
    import numpy as np

    for name, value in (
        ("peak_tflops", peak_tflops),
        ("bandwidth_tbs", bandwidth_tbs),
    ):
        require_positive(name, value)
        if value > 1e9:
            raise ValueError(f"{name} = {value:.3g} is beyond any chip")
    _require_points("points", points, 2)
    _require_points("measured", measured, 3)

    fig, ax = plt.subplots(figsize=(7.2, 3.6))
    x = np.logspace(-1, 4, 200)
    ax.loglog(x, np.minimum(peak_tflops, x * bandwidth_tbs), color="k", lw=1.5)
    ridge = peak_tflops / bandwidth_tbs
    ax.axvline(ridge, color="0.6", ls=":", lw=1)
    ax.text(ridge * 1.1, 0.5, f"ridge {ridge:.0f} FLOP/byte", fontsize=8)
    for k, (label, intensity) in enumerate(points):
        roof = min(peak_tflops, intensity * bandwidth_tbs)
        ax.plot(intensity, roof, "o", color=f"C{k}", label=label)
    for label, intensity, tflops in measured:
        ax.plot(intensity, tflops, "x", color="C3", ms=8)
        ax.annotate(
            label,
            (intensity, tflops),
            textcoords="offset points",
            xytext=(6, -10),
            fontsize=7.5,
            color="C3",
        )
    ax.set_xlabel("arithmetic intensity (FLOPs per byte of HBM traffic)")
    ax.set_ylabel("TFLOP/s")
    ax.set_ylim(0.3, peak_tflops * 2)
    ax.set_title(_checked_title(title), fontsize=9)
    ax.legend(fontsize=7.5, loc="lower right")
    fig.tight_layout()
    return fig


def plot_gpu_timings(rows_by_name: dict, title: str = ""):
    """Milliseconds against n (log-log), one line per implementation:
    ``rows_by_name`` maps a label to [(n, ms), ...]. Returns the figure."""
    if not isinstance(rows_by_name, dict) or not rows_by_name:
        raise TypeError(
            "rows_by_name must be a non-empty dict of label -> [(n, ms)], "
            f"got {type(rows_by_name).__name__}"
        )
    for points in rows_by_name.values():
        _require_points("rows_by_name's values", points, 2)
    fig, ax = plt.subplots(figsize=(7.2, 3.6))
    for k, (name, points) in enumerate(rows_by_name.items()):
        ns, ms = zip(*points)
        ax.loglog(ns, ms, "o-", color=f"C{k}", label=name, ms=4)
    ax.set_xscale("log", base=2)
    ns = sorted({n for pts in rows_by_name.values() for n, _ in pts})
    ax.set_xticks(ns, [f"{n:,}" for n in ns])
    ax.set_xlabel("sequence length n")
    ax.set_ylabel("milliseconds (median)")
    ax.set_title(_checked_title(title), fontsize=9)
    ax.legend(fontsize=7.5)
    fig.tight_layout()
    return fig


def _require_points(name: str, points, size: int) -> None:
    """A list of tuples of ``size``: a label or n first, then numbers."""
    ok = isinstance(points, (list, tuple)) and all(
        isinstance(p, tuple)
        and len(p) == size
        and all(
            isinstance(x, (int, float))
            and not isinstance(x, bool)
            and 0 < x < 1e30
            for x in p[1:]
        )
        for p in points
    )
    if not ok:
        raise ValueError(
            f"{name} must be a list of {size}-tuples (a label, then positive "
            f"numbers), got {str(points):.60}"
        )


def _checked_title(title) -> str:
    if not isinstance(title, str) or len(title) > 200:
        raise ValueError(
            f"title must be a string of at most 200 characters, got "
            f"{str(title):.40}"
        )
    return title
