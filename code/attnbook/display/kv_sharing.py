"""Chapter 13's diagram: which key-value head each query head reads, in
multi-head, grouped-query and multi-query attention."""

import matplotlib.pyplot as plt
from matplotlib.colors import to_rgba
from matplotlib.patches import FancyBboxPatch

from .._checks import require_int

_TITLES = {"mha": "multi-head", "gqa": "grouped-query", "mqa": "multi-query"}


def _head(ax, x, y, text, colour):
    ax.add_patch(
        FancyBboxPatch(
            (x - 0.38, y - 0.22), 0.76, 0.44,
            boxstyle="round,pad=0.02", facecolor=to_rgba(colour, 0.45),
            edgecolor="0.3",
        )
    )  # fmt: skip
    ax.text(x, y, text, ha="center", va="center", fontsize=8)


def _panel(ax, num_heads: int, num_kv_heads: int) -> None:
    """h query heads on top, g key-value heads below, a line from each query
    head to the head it reads (query head i reads i // (h / g))."""
    group = num_heads // num_kv_heads
    for i in range(num_heads):
        _head(ax, i, 1.0, f"q{i + 1}", f"C{i // group}")
        kv_x = (i // group) * group + (group - 1) / 2
        ax.plot([i, kv_x], [0.78, 0.22], color="0.45", lw=0.8)
    for j in range(num_kv_heads):
        _head(ax, j * group + (group - 1) / 2, 0.0, f"kv{j + 1}", f"C{j}")
    kind = (
        "mha"
        if num_kv_heads == num_heads
        else "mqa"
        if num_kv_heads == 1
        else "gqa"
    )
    ax.set_title(
        f"{_TITLES[kind]}: h = {num_heads}, g = {num_kv_heads}", fontsize=9
    )
    ax.set_xlim(-0.6, num_heads - 0.4)
    ax.set_ylim(-0.4, 1.4)
    ax.axis("off")


def draw_kv_sharing(num_heads: int = 8, num_kv_heads=(8, 2, 1)):
    """One panel per entry of ``num_kv_heads`` (each a divisor of
    ``num_heads``): the query heads (top) and the key-value heads they share
    (bottom), coloured by group. Returns the figure."""
    require_int("num_heads", num_heads)
    if not 1 <= num_heads <= 16:
        raise ValueError(f"num_heads must be in [1, 16], got {num_heads}")
    if not isinstance(num_kv_heads, (tuple, list)) or not num_kv_heads:
        raise TypeError(
            f"num_kv_heads must be a non-empty tuple, got {num_kv_heads!r}"
        )
    for g in num_kv_heads:
        require_int("num_kv_heads", g)
        if num_heads % g:
            raise ValueError(
                f"each num_kv_heads must divide num_heads = {num_heads}, "
                f"got {g}"
            )
    fig, axes = plt.subplots(
        1, len(num_kv_heads), figsize=(3.4 * len(num_kv_heads), 1.9)
    )
    for ax, g in zip(list(fig.axes), num_kv_heads):
        _panel(ax, num_heads, g)
    fig.tight_layout()
    return fig
