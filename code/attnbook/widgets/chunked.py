"""Chapter 11 explorer: sequence length and chunk size -> score memory, and
one query's online softmax."""

import math

import matplotlib.pyplot as plt
import torch

from .._checks import require_int_in
from .._random import seeded_generator
from ..core.attention import attention
from ..core.chunked import StreamingAttention
from ..measure.memory import score_matrix_bytes
from ..measure.threads import single_thread
from ._explorer import live_explorer
from ._frames import Choices
from ._live import draws_view

LENGTHS = tuple(2**p for p in range(8, 15))  # 256 ... 16,384
CHUNK_SIZES = tuple(2**p for p in range(5, 13))  # 32 ... 4,096

_MIB = 2**20
MAX_VIEW_LENGTH = (
    2**17
)  # the view draws n random keys and values: at most 2 x 131,072 x d floats
# Fixed axis ranges that hold every setting the explorer's menus allow (d = 64,
# seed 0; tests/core/test_chunked.py checks all of them): the figure is drawn
# in full only once.
MEMORY_RANGE_MIB = (
    0.015,
    3000.0,
)  # one block at n = 256, chunk 32: 0.03 MiB; full n = 16,384: 1,024 MiB
LENGTH_RANGE = (180, 23000)  # 256 ... 16,384 on a log axis, with a margin
RUNNING_MAX_RANGE = (
    2.0,
    4.2,
)  # the running max m over all settings: 2.2 ... 4.0
RUNNING_SUM_RANGE = (
    3.0,
    1000.0,
)  # the running sum ℓ over all settings: 6.3 ... 532 (log axis)


def chunked_view(
    n: int = 4096, chunk_size: int = 512, d: int = 64, seed: int = 0
) -> dict:
    """Everything the explorer shows for one setting of its controls.

    n: sequence length (n queries, n keys); chunk_size: keys per block; d:
    feature size. Returns a dict with the float32 bytes of the full score
    matrix (``full_bytes``) and of one block (``tile_bytes``) and their
    ``ratio``; the same over ``lengths`` (``LENGTHS`` and n) for the plot
    (``curve_full``, ``curve_tile``); and, for one random query meeting n
    random keys, after each of the ``num_chunks`` blocks: the number of keys
    seen so far (``keys_seen``), the running ``maximum`` and ``total``, and the
    ``rescale`` factor the block applied to the old sums (lists of num_chunks
    floats); and ``max_error``, the largest gap between the streamed output and
    ``attention``.
    """
    require_int_in("n", n, 1, MAX_VIEW_LENGTH)
    require_int_in("chunk_size", chunk_size, 1, MAX_VIEW_LENGTH)
    require_int_in("d", d, 1, 1024)
    require_int_in("seed", seed, 0, 2**63 - 1)
    # tiny tensors: one thread never waits for another (fast on a busy machine)
    with single_thread():
        generator = seeded_generator(seed)
        query = torch.randn(1, d, generator=generator)
        keys = torch.randn(n, d, generator=generator)
        values = torch.randn(n, d, generator=generator)
        state = StreamingAttention(query)
        maxima, totals = (
            [],
            [],
        )  # one (1, 1) tensor per block: read out together at the end
        for start in range(0, n, chunk_size):
            state.update(
                keys[start : start + chunk_size],
                values[start : start + chunk_size],
            )
            maxima.append(state.maximum)
            totals.append(state.total)
        max_error = (
            (state.output() - attention(query, keys, values)[0])
            .abs()
            .max()
            .item()
        )
    maximum, total = (
        torch.cat(maxima).flatten().tolist(),
        torch.cat(totals).flatten().tolist(),
    )
    rescale = [1.0] + [
        math.exp(old - new) for old, new in zip(maximum, maximum[1:])
    ]
    full, tile = score_matrix_bytes(n, n), score_matrix_bytes(n, n, chunk_size)
    lengths = sorted({*LENGTHS, n})
    return {
        "n": n,
        "chunk_size": chunk_size,
        "num_chunks": len(maximum),
        "full_bytes": full,
        "tile_bytes": tile,
        "ratio": full / tile,
        "lengths": lengths,
        "curve_full": [
            score_matrix_bytes(length, length) for length in lengths
        ],
        "curve_tile": [
            score_matrix_bytes(length, length, chunk_size)
            for length in lengths
        ],
        "keys_seen": [
            min(start + chunk_size, n) for start in range(0, n, chunk_size)
        ],
        "maximum": maximum,
        "total": total,
        "rescale": rescale,
        "max_error": max_error,
    }


def _megabytes(num_bytes: int) -> str:
    mib = num_bytes / _MIB
    return f"{mib:,.0f} MiB" if mib >= 10 else f"{mib:.2g} MiB"


def _covering(fixed: tuple, values: list, margin: float = 1.0) -> tuple:
    """``fixed`` (low, high), widened where needed to hold every value
    (times/over ``margin``)."""
    return min(fixed[0], min(values) / margin), max(
        fixed[1], max(values) * margin
    )


@draws_view
def plot_chunked(view: dict):
    """Score memory against n, full vs one block (left); one query's running
    max and sum (right).

    Every axis range is fixed (it covers every setting of the explorer and
    ``view``): the right panel's x axis is the fraction of the n keys
    processed, so the same axes hold 1 block or 512; the titles give n, the
    chunk size and the number of blocks.
    """
    fig, (left, right) = plt.subplots(1, 2, figsize=(9, 3.2))
    left.set_xscale("log")
    left.set_yscale("log")
    left.plot([], [], "o-", label="full n × n scores")
    left.plot([], [], "s-", label="one block, n × chunk size")
    left.plot([], [], "k:", lw=1)
    left.set_xlim(
        *_covering(LENGTH_RANGE, view["lengths"] + [view["n"]], margin=1.4)
    )
    curves = [
        b / _MIB
        for b in view["curve_full"] + view["curve_tile"] + [view["tile_bytes"]]
    ]
    left.set_ylim(*_covering(MEMORY_RANGE_MIB, curves, margin=2.0))
    left.set_xlabel("sequence length n")
    left.set_ylabel("float32 scores (MiB)")
    # Upper left stays clear of the curves (at n <= 2,048 the full matrix is at
    # most 16 MiB): the legend is never crossed by them, so it is never redrawn
    # (the left title gives the chunk size).
    left.legend(fontsize=8, loc="upper left")

    right.plot([], [], "s-", color="C3", markersize=3, label="running max m")
    right.set_xlim(-0.02, 1.02)
    right.set_ylim(*_covering(RUNNING_MAX_RANGE, view["maximum"]))
    right.set_xlabel("fraction of the n keys processed")
    right.set_ylabel("running max m", color="C3")
    twin = right.twinx()
    twin.plot([], [], ".-", color="C0", markersize=3, label="running sum ℓ")
    twin.set_yscale("log")
    twin.set_ylim(*_covering(RUNNING_SUM_RANGE, view["total"], margin=1.5))
    twin.set_ylabel("running sum ℓ = Σ exp(s − m)", color="C0")
    for axes in (left, right):
        axes.set_title(
            " ", fontsize=9
        )  # the text follows the view: update_chunked_figure
    # Fixed margins: tight_layout would draw the whole figure once just to
    # measure it (~100 ms).
    fig.subplots_adjust(
        left=0.08, right=0.91, bottom=0.15, top=0.9, wspace=0.42
    )
    update_chunked_figure(fig, view)
    return fig


@draws_view
def update_chunked_figure(fig, view: dict) -> list:
    """Show ``view`` in a figure made by ``plot_chunked``; returns the artists
    that changed.

    The axes ranges are fixed, so the axes, their ticks and labels and the
    legend stay as they are; only the lines and the titles change.
    """
    left, right, twin = fig.axes
    full, tile, at_n = left.lines
    full.set_data(view["lengths"], [b / _MIB for b in view["curve_full"]])
    tile.set_data(view["lengths"], [b / _MIB for b in view["curve_tile"]])
    at_n.set_data(
        [view["n"]] * 2, [view["tile_bytes"] / _MIB, view["full_bytes"] / _MIB]
    )
    memory = (
        f"{_megabytes(view['full_bytes'])} vs {_megabytes(view['tile_bytes'])}"
    )
    left.title.set_text(
        f"n = {view['n']:,}, chunk {view['chunk_size']:,}: {memory}"
    )

    # Both statistics after block k, at seen_k / n: a rise of m and the
    # rescaling of l it causes show at the same block.
    seen = [0.0] + [count / view["n"] for count in view["keys_seen"]]
    (running_max,) = right.lines
    running_max.set_data(seen[1:], view["maximum"])
    (running_sum,) = twin.lines
    running_sum.set_data(seen[1:], view["total"])
    blocks = (
        f"{view['num_chunks']} block{'s' if view['num_chunks'] > 1 else ''}"
    )
    right.title.set_text(
        f"one query, {view['n']:,} keys, {blocks}: error vs attention "
        f"{view['max_error']:.0e}"
    )
    return [
        full,
        tile,
        at_n,
        left.title,
        running_max,
        running_sum,
        right.title,
    ]


def chunked_explorer(n: int = 4096, chunk_size: int = 512):
    """Menus for the sequence length and the chunk size; redraws memory and
    the running statistics."""
    import ipywidgets as widgets

    controls = {
        "n": widgets.SelectionSlider(
            options=LENGTHS,
            value=n,
            description="length n",
            continuous_update=False,
        ),
        "chunk_size": widgets.SelectionSlider(
            options=CHUNK_SIZES,
            value=chunk_size,
            description="chunk size",
            continuous_update=False,
        ),
    }
    frames = {
        "n": Choices("length n", [(f"{n:,}", n) for n in LENGTHS], value=n),
        "chunk_size": Choices(
            "chunk size",
            [(f"{c:,}", c) for c in CHUNK_SIZES],
            value=chunk_size,
        ),
    }
    return live_explorer(
        controls,
        chunked_view,
        plot_chunked,
        update_chunked_figure,
        frames=frames,
    )
