"""Chapter 17's diagrams: the regrouping that turns attention into a
fixed-size state, its three forms, the delta rule's step, and the curves of
what a state recalls."""

import matplotlib.pyplot as plt
from matplotlib.patches import FancyArrowPatch, Rectangle

from .._checks import require_int_in

_GREY, _BLUE, _ORANGE, _RED = "0.85", "#9ecae1", "#fdae6b", "#d62728"


def _box(ax, x, y, w, h, label="", color=_BLUE, fontsize=10, **kwargs):
    ax.add_patch(
        Rectangle((x, y), w, h, facecolor=color, edgecolor="k", lw=1, **kwargs)
    )
    if label:
        ax.text(
            x + w / 2,
            y + h / 2,
            label,
            ha="center",
            va="center",
            fontsize=fontsize,
        )


def _arrow(ax, start, end, label="", color="k"):
    ax.add_patch(
        FancyArrowPatch(
            start,
            end,
            arrowstyle="-|>",
            mutation_scale=12,
            color=color,
            lw=1.2,
        )
    )
    if label:
        mid = ((start[0] + end[0]) / 2, (start[1] + end[1]) / 2 + 0.25)
        ax.text(*mid, label, ha="center", va="bottom", fontsize=9)


def _blank(ax, width, height):
    ax.set_xlim(0, width)
    ax.set_ylim(0, height)
    ax.set_aspect("equal")
    ax.axis("off")


def draw_regrouping():
    """Two ways to multiply phi(Q) phi(K)^T V: left, the n x n weights
    first (attention: grows with n squared); right, phi(K)^T V first (a
    d x d_v state, the same size for every n)."""
    fig, (left, right) = plt.subplots(1, 2, figsize=(9, 3.2))
    _blank(left, 12, 7)
    _box(left, 0.3, 0.5, 1.2, 5, "φ(Q)\nn×d", fontsize=9)
    _box(left, 2.0, 4.3, 5, 1.2, "φ(K)ᵀ  d×n", fontsize=9)
    _box(left, 2.0, 0.5, 5, 3.3, "weights\nn × n", color=_ORANGE)
    _box(left, 7.5, 0.5, 1.2, 3.3, "V\nn×d_v", color=_GREY, fontsize=9)
    _box(left, 9.6, 0.5, 1.2, 3.3, "out\nn×d_v", color=_GREY, fontsize=8)
    _arrow(left, (8.8, 2.1), (9.5, 2.1))
    left.set_title("(φ(Q) φ(K)ᵀ) V: attention, n² numbers", fontsize=10)
    _blank(right, 12, 7)
    _box(right, 0.3, 4.3, 5, 1.2, "φ(K)ᵀ  d×n", fontsize=9)
    _box(right, 5.8, 0.5, 1.2, 5, "V\nn×d_v", color=_GREY, fontsize=9)
    _box(right, 7.6, 4.0, 1.6, 1.6, "S\nd×d_v", color=_RED, alpha=0.7)
    _arrow(right, (7.1, 4.8), (7.5, 4.8))
    _box(right, 7.6, 0.5, 1.2, 3.0, "φ(Q)\nn×d", fontsize=8)
    _box(right, 9.8, 0.5, 1.2, 3.0, "out\nn×d_v", color=_GREY, fontsize=8)
    _arrow(right, (8.4, 3.9), (8.4, 3.6))
    _arrow(right, (8.9, 2.0), (9.7, 2.0))
    right.set_title("φ(Q) (φ(K)ᵀ V): a state of d × d_v numbers", fontsize=10)
    fig.tight_layout()
    return fig


def draw_three_forms(n: int = 8, chunk_size: int = 4):
    """The three forms of causal linear attention on n tokens: parallel
    (every kept weight of the n x n mask), recurrent (one state per token,
    passed on), chunked (weights inside each chunk of ``chunk_size``, a
    state between chunks)."""
    require_int_in("n", n, 1, 32)
    require_int_in("chunk_size", chunk_size, 1, n)
    fig, axes = plt.subplots(1, 3, figsize=(10, 3.6))
    parallel, recurrent, chunked = axes
    for ax in (parallel, chunked):
        _blank(ax, n, n)
    for i in range(n):
        for j in range(i + 1):
            _box(parallel, j, n - 1 - i, 1, 1, color=_ORANGE)
            inside = i // chunk_size == j // chunk_size
            _box(
                chunked,
                j,
                n - 1 - i,
                1,
                1,
                color=_ORANGE if inside else _RED,
                alpha=1 if inside else 0.5,
            )
    parallel.set_title("parallel: n × n weights", fontsize=10)
    chunked.set_title(
        "chunked: weights inside a chunk,\nstate between chunks (red)",
        fontsize=10,
    )
    _blank(recurrent, n, n)
    for t in range(n):
        y = n - 1 - t
        _box(
            recurrent,
            2.5,
            y + 0.1,
            1.6,
            0.8,
            f"S{t + 1}",
            color=_RED,
            alpha=0.7,
            fontsize=9,
        )
        recurrent.text(
            1.0,
            y + 0.5,
            f"k{t + 1},v{t + 1} →",
            ha="center",
            va="center",
            fontsize=9,
        )
        recurrent.text(
            5.6,
            y + 0.5,
            f"→ o{t + 1} = S{t + 1}q{t + 1}",
            ha="center",
            va="center",
            fontsize=9,
        )
        if t:
            _arrow(recurrent, (3.3, y + 1.1), (3.3, y + 0.9))
    recurrent.set_title("recurrent: one d × d_v state", fontsize=10)
    fig.tight_layout()
    return fig


def draw_delta_step():
    """One step of the delta rule: read the state's answer for k_t, compare
    it with v_t, write the error back along k_t."""
    fig, ax = plt.subplots(figsize=(9.5, 2.4))
    _blank(ax, 19, 4.2)
    _box(ax, 0.2, 1.2, 2.2, 1.6, "$S_{t-1}$", color=_RED, alpha=0.7)
    _box(ax, 3.4, 1.2, 3.0, 1.6, "read\n$S\\,k_t$", color=_GREY)
    _box(ax, 7.4, 1.2, 3.4, 1.6, "error\n$v_t - S\\,k_t$", color=_ORANGE)
    _box(
        ax,
        11.8,
        1.2,
        3.6,
        1.6,
        "write\n$\\beta_t\\,(\\mathrm{error})\\,k_t^\\top$",
        color=_GREY,
    )
    _box(ax, 16.4, 1.2, 2.2, 1.6, "$S_t$", color=_RED, alpha=0.7)
    for x0, x1 in ((2.4, 3.4), (6.4, 7.4), (10.8, 11.8), (15.4, 16.4)):
        _arrow(ax, (x0, 2.0), (x1, 2.0))
    ax.text(
        9.1,
        3.5,
        r"$S_t = S_{t-1} + \beta_t (v_t - S_{t-1} k_t)\,"
        r"k_t^\top$: one gradient step on $\frac{1}{2}\|S k_t - v_t\|^2$",
        ha="center",
        fontsize=10,
    )
    ax.text(
        9.1,
        0.4,
        r"linear attention skips the read: $S_t = S_{t-1} + "
        r"v_t k_t^\top$",
        ha="center",
        fontsize=9,
        color="0.3",
    )
    fig.tight_layout()
    return fig
