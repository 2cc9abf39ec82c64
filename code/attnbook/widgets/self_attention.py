"""Chapter 7 explorer: pick a token and see its attention row; add positions to
break the tie.

A toy self-attention layer reads a sentence of random (seeded) word vectors.
Without positional information two copies of the same word are the same input
vector, so they get identical attention rows; adding the sinusoidal positional
encoding separates them.
"""

import zlib
from functools import lru_cache, partial

import matplotlib.pyplot as plt
import matplotlib.transforms as transforms
import torch

from .._checks import require_flag, require_int, require_int_in, require_text
from .._memory import require_matrix_fits
from .._random import keep_global_rng
from ..core.positional import sinusoidal_encoding
from ..nn.self_attention import SelfAttention
from ._explorer import live_explorer
from ._frames import Choices
from ._live import draws_view

DEFAULT_SENTENCE = "the cat sat on the mat"


def word_vector(word: str, dim: int = 16, seed: int = 0) -> torch.Tensor:
    """A fixed random vector (dim,) for ``word``: the same on every run and
    machine.

    The generator is seeded from a CRC-32 of the word (Python's ``hash`` of a
    str changes from run to run), so equal words always get equal vectors.
    """
    require_text("word", word)
    require_int("dim", dim)
    require_int("seed", seed, minimum=0)
    require_matrix_fits("the vector", (dim,), torch.float32)
    generator = torch.Generator().manual_seed(
        zlib.crc32(word.encode("utf-8")) + seed
    )
    return torch.randn(dim, generator=generator)


@lru_cache(maxsize=8)
def toy_self_attention(dim: int = 16, seed: int = 0) -> SelfAttention:
    """A seeded ``SelfAttention(dim)``, the standard layer with its own
    W_q, W_k and W_v, untrained. Built once per (dim, seed) and reused."""
    with (
        keep_global_rng()
    ):  # seeded here; the reader's random stream is left as it was
        torch.manual_seed(seed)
        layer = SelfAttention(dim)
    return layer.eval()


def self_attention_view(
    sentence: str = DEFAULT_SENTENCE,
    token: int = 0,
    positions: bool = False,
    dim: int = 16,
    seed: int = 0,
) -> dict:
    """Everything the explorer shows for one token of ``sentence``, with or
    without positions.

    Returns a dict with ``tokens`` (list of n words), ``token`` (the chosen
    index), ``positions``, ``weights`` (n, n) attention matrix, ``row`` (n,)
    the chosen token's attention row, ``copies`` (indices of every occurrence
    of the chosen word) and ``copy_gap``: the largest difference between the
    attention rows of those copies (0.0 when the word occurs once; 0 up to
    float rounding for repeated words without positions).
    """
    tokens = require_text("sentence", sentence).split()
    if not tokens:
        raise ValueError("sentence has no words")
    require_flag("positions", positions)
    require_int_in("dim", dim, 1, 1024)
    require_int_in("seed", seed, 0, 2**32 - 1)
    if (
        isinstance(token, bool)
        or not isinstance(token, int)
        or not 0 <= token < len(tokens)
    ):
        raise ValueError(
            f"token must be an index in [0, {len(tokens) - 1}], got {token!r}"
        )
    x = torch.stack(
        [word_vector(word, dim, seed) for word in tokens]
    )  # (n, dim)
    if positions:
        x = x + sinusoidal_encoding(len(tokens), dim)
    with torch.no_grad():
        _, weights = toy_self_attention(dim, seed)(x)
    copies = [j for j, word in enumerate(tokens) if word == tokens[token]]
    copy_rows = weights[copies]
    return {
        "tokens": tokens,
        "token": token,
        "positions": positions,
        "weights": weights,
        "row": weights[token],
        "copies": copies,
        "copy_gap": float((copy_rows - copy_rows[0]).abs().max()),
    }


@draws_view
def plot_self_attention(view: dict):
    """The whole attention matrix with the chosen row framed (left), that row
    as bars (right).

    Labels are plain text objects rather than axis ticks: matplotlib lays ticks
    out anew on every draw, and with ticks an explorer update took about twice
    as long.
    """
    tokens = view["tokens"]
    n = len(tokens)
    fig, (left, right) = plt.subplots(
        1, 2, figsize=(7.5, 2.6), gridspec_kw={"width_ratios": [1, 1.6]}
    )
    fig.subplots_adjust(
        left=0.1, right=0.98, bottom=0.14, top=0.88, wspace=0.25
    )
    left.imshow(torch.zeros(n, n).numpy(), cmap="Reds", vmin=0, vmax=1)
    left.add_patch(
        plt.Rectangle(
            (-0.5, -0.5), n, 1, fill=False, edgecolor="black", linewidth=2
        )
    )
    right.bar(range(n), torch.zeros(n).numpy())
    right.set_ylim(0, 1)
    under_bars = transforms.blended_transform_factory(
        right.transData, right.transAxes
    )
    for j, word in enumerate(tokens):
        left.text(-0.7, j, f"{j}:{word}", ha="right", va="center", fontsize=8)
        right.text(
            j,
            -0.03,
            f"{j}:{word}",
            ha="center",
            va="top",
            fontsize=8,
            transform=under_bars,
        )
    for level in (0.0, 0.5, 1.0):
        right.axhline(level, color="0.85", linewidth=0.8, zorder=0)
        right.text(
            -0.01,
            level,
            f"{level:g}",
            ha="right",
            va="center",
            fontsize=8,
            transform=right.get_yaxis_transform(),
        )
    for ax in (left, right):
        ax.set_xticks([])
        ax.set_yticks([])
    left.set_xlabel("keys, in the same order", fontsize=8)
    update_self_attention_figure(fig, view)
    return fig


@draws_view
def update_self_attention_figure(fig, view: dict) -> list:
    """Show ``view`` in a figure made by ``plot_self_attention`` for the same
    sentence; returns the changed artists.

    Only data, colours and titles change (no new axes, no layout pass): the
    matrix image (n, n), the frame round the chosen row, the n bars and both
    titles, the same artists in the same order for every view of the sentence.
    """
    left, right = fig.axes
    token, n = view["token"], len(view["tokens"])
    if len(right.patches) != n:
        raise ValueError(
            f"figure has {len(right.patches)} bars but the view has {n} tokens"
        )
    (image,) = left.images
    image.set_data(view["weights"].numpy())
    (frame,) = left.patches
    frame.set_y(token - 0.5)
    left.set_title(
        "attention matrix, "
        + ("with positions" if view["positions"] else "no positions"),
        fontsize=9,
    )
    bars = list(right.patches)
    for j, (bar, height) in enumerate(zip(bars, view["row"].tolist())):
        bar.set_height(height)
        bar.set_color("tab:red" if j in view["copies"] else "tab:gray")
    title = f"attention row of {token}:{view['tokens'][token]}"
    if len(view["copies"]) > 1:
        title += f"; its copies' rows differ by {view['copy_gap']:.3f}"
    right.set_title(title, fontsize=9)
    return [image, frame, left.title, *bars, right.title]


def self_attention_explorer(
    sentence: str = DEFAULT_SENTENCE, token: int = 0, positions: bool = False
):
    """A token slider and a positional-encoding switch; redraws the
    attention row."""
    import ipywidgets as widgets

    tokens = sentence.split()
    token_options = [(f"{j}: {word}", j) for j, word in enumerate(tokens)]
    controls = {
        "token": widgets.SelectionSlider(
            options=token_options,
            value=token,
            description="token",
            continuous_update=False,
        ),
        "positions": widgets.Checkbox(
            value=positions, description="add positional encoding"
        ),
    }
    view = partial(self_attention_view, sentence)
    frames = {
        "token": Choices("token", token_options, value=token),
        "positions": Choices(
            "add positional encoding",
            [("no", False), ("yes", True)],
            kind="buttons",
            value=positions,
        ),
    }
    return live_explorer(
        controls,
        view,
        plot_self_attention,
        update_self_attention_figure,
        frames=frames,
    )
