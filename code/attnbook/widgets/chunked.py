"""Chapter 9 explorer: sequence length and chunk size -> score memory, and one query's online softmax."""

import matplotlib.pyplot as plt
import torch

from ..attention import attention
from ..chunked import StreamingAttention, score_matrix_bytes
from ..threads import single_thread
from ._live import figure_explorer

LENGTHS = tuple(2**p for p in range(8, 15))  # 256 ... 16,384
CHUNK_SIZES = tuple(2**p for p in range(5, 13))  # 32 ... 4,096


def chunked_view(n: int = 4096, chunk_size: int = 512, d: int = 64, seed: int = 0) -> dict:
    """Everything the explorer shows for one setting of its controls.

    n: sequence length (n queries, n keys); chunk_size: keys per block; d: feature size.
    Returns a dict with the float32 bytes of the full score matrix (``full_bytes``) and of
    one block (``tile_bytes``) and their ``ratio``; the same over ``lengths`` for the plot
    (``curve_full``, ``curve_tile``); and, for one random query meeting n random keys,
    the running ``maximum`` and ``total`` after each of the ``num_chunks`` blocks, the
    ``rescale`` factor each block applied to the old sums, and ``max_error``, the largest
    gap between the streamed output and ``attention``.
    """
    if n < 1 or chunk_size < 1:
        raise ValueError(f"n and chunk_size must be positive, got n={n}, chunk_size={chunk_size}")
    with single_thread():  # tiny tensors: one thread never waits for another (fast on a busy machine)
        generator = torch.Generator().manual_seed(seed)
        query = torch.randn(1, d, generator=generator)
        keys = torch.randn(n, d, generator=generator)
        values = torch.randn(n, d, generator=generator)
        state = StreamingAttention(query)
        maximum, total, rescale = [], [], []
        for start in range(0, n, chunk_size):
            old_maximum = state.maximum.item()
            state.update(keys[start:start + chunk_size], values[start:start + chunk_size])
            maximum.append(state.maximum.item())
            total.append(state.total.item())
            rescale.append(1.0 if start == 0 else float(torch.exp(torch.tensor(old_maximum - maximum[-1]))))
        max_error = (state.output() - attention(query, keys, values)[0]).abs().max().item()
    full, tile = score_matrix_bytes(n, n), score_matrix_bytes(n, n, chunk_size)
    lengths = [length for length in LENGTHS if length >= chunk_size] or [n]
    return {
        "n": n,
        "chunk_size": chunk_size,
        "num_chunks": len(maximum),
        "full_bytes": full,
        "tile_bytes": tile,
        "ratio": full / tile,
        "lengths": lengths,
        "curve_full": [score_matrix_bytes(length, length) for length in lengths],
        "curve_tile": [score_matrix_bytes(length, length, chunk_size) for length in lengths],
        "maximum": maximum,
        "total": total,
        "rescale": rescale,
        "max_error": max_error,
    }


def _megabytes(num_bytes: int) -> str:
    mib = num_bytes / 2**20
    return f"{mib:,.0f} MiB" if mib >= 10 else f"{mib:.2g} MiB"


def plot_chunked(view: dict):
    """Score memory against n, full vs one block (left); one query's running max and sum (right)."""
    fig, (left, right) = plt.subplots(1, 2, figsize=(9, 3.2))
    mib = 2**20
    left.loglog(view["lengths"], [b / mib for b in view["curve_full"]], "o-", label="full n × n scores")
    left.loglog(view["lengths"], [b / mib for b in view["curve_tile"]], "s-", label=f"one block, n × {view['chunk_size']}")
    left.plot([view["n"]] * 2, [view["tile_bytes"] / mib, view["full_bytes"] / mib], "k:", lw=1)
    left.set_xlabel("sequence length n")
    left.set_ylabel("float32 scores (MiB)")
    left.set_title(f"n = {view['n']}: {_megabytes(view['full_bytes'])} vs {_megabytes(view['tile_bytes'])}", fontsize=9)
    left.legend(fontsize=8)
    blocks = range(1, view["num_chunks"] + 1)
    right.step(blocks, view["maximum"], where="post", color="C3", label="running max m")
    right.set_xlabel("blocks of keys processed")
    right.set_ylabel("running max m", color="C3")
    twin = right.twinx()
    twin.plot(blocks, view["total"], ".-", color="C0", markersize=3, label="running sum ℓ")
    twin.set_ylabel("running sum ℓ = Σ exp(s − m)", color="C0")
    right.set_title(f"one query, {view['num_chunks']} blocks: error vs attention {view['max_error']:.0e}", fontsize=9)
    # Fixed margins: tight_layout would draw the whole figure once just to measure it (~100 ms).
    fig.subplots_adjust(left=0.08, right=0.91, bottom=0.15, top=0.9, wspace=0.42)
    return fig


def chunked_explorer(n: int = 4096, chunk_size: int = 512):
    """Menus for the sequence length and the chunk size; redraws memory and the running statistics."""
    import ipywidgets as widgets

    controls = {
        "n": widgets.SelectionSlider(options=LENGTHS, value=n, description="length n", continuous_update=False),
        "chunk_size": widgets.SelectionSlider(
            options=CHUNK_SIZES, value=chunk_size, description="chunk size", continuous_update=False
        ),
    }
    return figure_explorer(controls, lambda **values: plot_chunked(chunked_view(**values)))
