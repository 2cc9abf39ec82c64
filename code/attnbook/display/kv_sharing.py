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
    ax.text(x, y, text, ha="center", va="center", fontsize=9)


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
        f"{_TITLES[kind]}: h = {num_heads}, g = {num_kv_heads}", fontsize=10
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


def _box(ax, x, y, text, colour, width=1.5, height=0.5):
    ax.add_patch(
        FancyBboxPatch(
            (x - width / 2, y - height / 2), width, height,
            boxstyle="round,pad=0.03", facecolor=to_rgba(colour, 0.35),
            edgecolor="0.3",
        )
    )  # fmt: skip
    ax.text(x, y, text, ha="center", va="center", fontsize=8.5)


def _arrow(ax, start, end, label=""):
    ax.annotate(
        "", xy=end, xytext=start,
        arrowprops={"arrowstyle": "->", "color": "0.35", "lw": 0.9},
    )  # fmt: skip
    if label:
        middle = ((start[0] + end[0]) / 2, (start[1] + end[1]) / 2)
        ax.text(*middle, f" {label}", fontsize=8, va="center", color="0.2")


def draw_latent_attention():
    """Multi-head latent attention (DeepSeek-V2) in two panels: left, the
    explicit form (the cached latent c_t up-projected into every head's keys
    and values); right, the absorbed form (the queries multiplied by W^UK
    score the latents directly). Returns the figure."""
    fig, (left, right) = plt.subplots(1, 2, figsize=(8.6, 3.3))
    for ax, title in (
        (left, "explicit: keys and values formed per head"),
        (right, "absorbed: the queries read the latents"),
    ):
        _box(ax, 0, 0, "token $h_t$", "0.7", width=1.3)
        _box(ax, 0, 1.2, "latent $c_t$ (cached)", "C1", width=1.9)
        _arrow(ax, (0, 0.27), (0, 0.93), "$W^{DKV}$")
        _box(ax, -2.1, 1.2, "queries $q_{t,i}$", "C0", width=1.5)
        _arrow(ax, (-0.3, 0.2), (-1.8, 0.93), "$W^{Q}$")
        ax.set_title(title, fontsize=9.5)
        ax.set_xlim(-3.1, 3.2)
        ax.set_ylim(-0.5, 3.3)
        ax.axis("off")
    for j, x in enumerate((0.75, 2.2)):
        name = "keys $k_{j,i}$" if j == 0 else "values $v_{j,i}$"
        _box(left, x, 2.2, name, "C2", width=1.3)
        weight = "$W^{UK}$" if j == 0 else "$W^{UV}$"
        _arrow(left, (0.2 + 0.5 * j, 1.47), (x - 0.2, 1.93), weight)
        _arrow(left, (x - 0.3, 2.47), (x - 0.6 - 0.5 * j, 2.73))
    _box(left, 0, 3.0, "scores, heads, $W^{O}$", "0.85", width=2.6)
    _arrow(left, (-2.1, 1.47), (-1.0, 2.73))
    _box(right, -2.1, 2.3, "$W_i^{UK\\top} q_{t,i}$", "C0", width=1.5)
    _arrow(right, (-2.1, 1.47), (-2.1, 2.03))
    _box(right, 0, 3.0, "one shared head over $c_j$;  $W^{O} W^{UV}$", "0.85",
         width=3.6)  # fmt: skip
    _arrow(right, (-2.1, 2.57), (-1.2, 2.73))
    _arrow(right, (0, 1.47), (0, 2.73))
    fig.tight_layout()
    return fig
