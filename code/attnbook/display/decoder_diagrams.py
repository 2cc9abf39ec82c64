"""Chapter 10's diagrams: the encoder-decoder Transformer with its decoder
block, and the key-value cache during generation.

Each function draws one diagram on a new figure and returns it. Plotting
layer: no tensor math lives here.
"""

import matplotlib.pyplot as plt
from matplotlib.patches import Rectangle

from .._checks import require_int
from .diagrams import STAGE_COLOURS, stage_box, up_arrow
from .figures import require_figsize


def _column(ax, x, ys, stages, width):
    """Boxes ``stages`` (label, kind) at heights ``ys`` in a column at x,
    joined by arrows."""
    for i, ((label, kind), y) in enumerate(zip(stages, ys)):
        stage_box(ax, y, label, width=width, colour=STAGE_COLOURS[kind], x=x)
        if i + 1 < len(stages):
            up_arrow(ax, (x, y + 0.4), (x, ys[i + 1] - 0.4))


def _residual(ax, x, rail, y_from, y_to, width):
    """A residual line from below the box at y_from round the side to the
    add & norm box at y_to."""
    ax.plot(
        [x, rail, rail], [y_from, y_from, y_to], color="0.25", linewidth=1.0
    )
    up_arrow(ax, (rail, y_to), (x + width / 2, y_to))


def _frame(ax, x, bottom, top, width, label, times_left=False):
    from matplotlib.patches import FancyBboxPatch

    ax.add_patch(
        FancyBboxPatch(
            (x - width / 2, bottom),
            width,
            top - bottom,
            boxstyle="round,pad=0.1",
            facecolor="0.96",
            edgecolor="0.5",
            linestyle="--",
            zorder=0,
        )
    )
    ax.text(
        x - width / 2 + 0.1, top - 0.05, label, ha="left", va="top",
        fontsize=8, color="0.35",
    )  # fmt: skip
    side = x - width / 2 - 0.15 if times_left else x + width / 2 + 0.15
    ax.text(
        side, (bottom + top) / 2, "$\\times N$",
        ha="right" if times_left else "left", va="center", fontsize=11,
    )  # fmt: skip


DECODER_STAGES = (
    ("masked self-attention", "attention"),
    ("add & norm", "norm"),
    ("cross-attention", "attention"),
    ("add & norm", "norm"),
    ("feed-forward network", "ffn"),
    ("add & norm", "norm"),
)


def draw_decoder_block(figsize=(7.2, 7.0)):
    """The encoder-decoder Transformer, bottom up (post-LN, as in the book).

    Left: the encoder (embedding + positions, N encoder blocks) turns the
    source into the memory. Right: the decoder: target embedding +
    positions, then N blocks of masked self-attention (causal mask), add &
    norm, cross-attention (queries from the decoder, keys and values from
    the memory, padding mask of the source), add & norm, feed-forward
    network, add & norm; then a linear layer to scores over the target
    vocabulary. Residual connections run round the side. Returns the figure.
    """
    fig, ax = plt.subplots(figsize=require_figsize(figsize))
    ax.set_xlim(0, 11)
    ax.set_ylim(-0.3, 12.3)
    ax.axis("off")
    enc_x, dec_x, width = 2.3, 7.0, 3.6

    # encoder column
    stage_box(ax, 0.9, "embedding + positions", width, 0.7, "#e4e4e4", enc_x)
    ax.text(enc_x, 0.0, "source ids $(B, n_{src})$", ha="center", fontsize=9)
    enc_ys = [3.0, 4.2, 5.4, 6.6]
    enc_stages = [
        ("self-attention", "attention"),
        ("add & norm", "norm"),
        ("feed-forward", "ffn"),
        ("add & norm", "norm"),
    ]
    up_arrow(ax, (enc_x, 1.25), (enc_x, enc_ys[0] - 0.4))
    _frame(ax, enc_x, 2.3, 7.55, width + 0.4, "encoder block", True)
    _column(ax, enc_x, enc_ys, enc_stages, width)
    memory_y = 8.4
    up_arrow(ax, (enc_x, enc_ys[-1] + 0.4), (enc_x, memory_y - 0.3))
    ax.text(
        enc_x, memory_y, "memory $(B, n_{src}, d_{model})$",
        ha="center", va="center", fontsize=9,
    )  # fmt: skip

    # decoder column
    stage_box(ax, 0.9, "embedding + positions", width, 0.7, "#e4e4e4", dec_x)
    ax.text(
        dec_x, 0.0, "BOS, $y_1, \\dots, y_{T-1}$ $(B, T)$",
        ha="center", fontsize=9,
    )  # fmt: skip
    dec_ys = [2.6 + 1.35 * i for i in range(len(DECODER_STAGES))]
    up_arrow(ax, (dec_x, 1.25), (dec_x, dec_ys[0] - 0.4))
    _frame(ax, dec_x, 1.9, dec_ys[-1] + 0.95, width + 0.4, "decoder block")
    _column(ax, dec_x, dec_ys, DECODER_STAGES, width)
    rail = dec_x + width / 2 + 0.1
    for attend, add in ((0, 1), (2, 3), (4, 5)):
        _residual(ax, dec_x, rail, dec_ys[attend] - 0.55, dec_ys[add], width)
    # the memory feeds the cross-attention's keys and values
    cross_y = dec_ys[2]
    ax.plot(
        [enc_x + 1.55, 4.6, 4.6], [memory_y, memory_y, cross_y],
        color="tab:blue", linewidth=1.3,
    )  # fmt: skip
    up_arrow(ax, (4.6, cross_y), (dec_x - width / 2, cross_y))
    ax.text(
        4.5, cross_y + 1.2, "keys,\nvalues", ha="right",
        fontsize=8, color="tab:blue",
    )  # fmt: skip
    out_y = dec_ys[-1] + 1.5
    up_arrow(ax, (dec_x, dec_ys[-1] + 0.4), (dec_x, out_y - 0.35))
    stage_box(ax, out_y, "linear: vocabulary scores", width, 0.7,
               "#e4e4e4", dec_x)  # fmt: skip
    ax.text(
        dec_x, out_y + 0.65, "predicts $y_1, \\dots, y_T$, EOS",
        ha="center", fontsize=9,
    )  # fmt: skip
    ax.set_title("Encoder-decoder Transformer (post-LN)", fontsize=10)
    return fig


def _cells(ax, x0, y, count, colour, new=False, label=""):
    """A row of ``count`` unit cells from x0 at height y; the last one
    outlined in red if ``new``."""
    for i in range(count):
        last = new and i == count - 1
        ax.add_patch(
            Rectangle(
                (x0 + i, y), 0.9, 0.8, facecolor=colour,
                edgecolor="tab:red" if last else "0.3",
                linewidth=2.0 if last else 0.8,
            )
        )  # fmt: skip
    if label:
        ax.text(x0 - 0.3, y + 0.4, label, ha="right", va="center", fontsize=9)


def draw_kv_cache(steps=(3, 4), n_src: int = 5, figsize=(7.6, 4.4)):
    """One decoder layer's caches at two generation steps, side by side.

    At step t the self-attention cache holds t keys and t values (one column
    per generated position; the new position's, outlined red, was just
    appended), and the new query reads all of them; the cross-attention keys
    and values (``n_src`` columns) were computed from the memory once,
    before step 1, and never change. Returns the figure (one axes per step).
    """
    if not isinstance(steps, (tuple, list)) or len(steps) != 2:
        raise ValueError(f"steps must hold two step numbers, got {steps!r}")
    for t in steps:
        require_int("steps", t)
    require_int("n_src", n_src)
    if max(max(steps), n_src) > 9:
        raise ValueError(
            f"steps and n_src must be at most 9 to stay readable, got "
            f"steps={steps}, n_src={n_src}"
        )
    fig, axes = plt.subplots(1, 2, figsize=require_figsize(figsize))
    width = max(max(steps), n_src) + 3.2
    for ax, t in zip(axes, steps):
        ax.set_xlim(-1.6, width)
        ax.set_ylim(-1.0, 6.4)
        ax.axis("off")
        ax.set_title(f"step {t}", fontsize=10)
        x0 = 1.4
        _cells(ax, x0, 4.6, t, "#fde2c8", new=True, label="self K")
        _cells(ax, x0, 3.6, t, "#fde2c8", new=True, label="self V")
        _cells(ax, x0, 1.6, n_src, "#cfe3f5", label="cross K")
        _cells(ax, x0, 0.6, n_src, "#cfe3f5", label="cross V")
        ax.text(
            x0, 5.65, f"grows by one column per step ({t} now)",
            fontsize=8, color="0.3",
        )  # fmt: skip
        ax.text(
            x0, 2.65, f"from the memory, computed once ({n_src})",
            fontsize=8, color="0.3",
        )  # fmt: skip
        ax.text(
            x0, -0.5, f"query $q_{t}$ reads all {t} self and {n_src} "
            "cross columns", fontsize=8, color="tab:red",
        )  # fmt: skip
    fig.tight_layout()
    return fig
