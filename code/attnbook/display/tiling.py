"""The tiling of FlashAttention's forward pass, drawn (chapter 11)."""

import matplotlib.pyplot as plt
from matplotlib.patches import FancyArrowPatch, Patch, Rectangle

from .._checks import require_int


def _tile(ax, x, y, width, height, colour, hatch=None, text=None):
    ax.add_patch(
        Rectangle(
            (x, y), width, height, facecolor=colour, edgecolor="0.3",
            hatch=hatch, linewidth=0.8,
        )
    )  # fmt: skip
    if text:
        ax.text(x + width / 2, y + height / 2, text, ha="center",
                va="center", fontsize=8.5)  # fmt: skip


def _arrow(ax, start, end, text, side=0.0, bend=0.0):
    ax.add_patch(
        FancyArrowPatch(start, end, arrowstyle="-|>", mutation_scale=11,
                        color="0.25", linewidth=1.0,
                        connectionstyle=f"arc3,rad={bend}")
    )  # fmt: skip
    middle = ((start[0] + end[0]) / 2 + side, (start[1] + end[1]) / 2)
    ax.text(*middle, text, ha="center", va="center", fontsize=8.5,
            backgroundcolor="white")  # fmt: skip


def draw_tiling(blocks: int = 4, row: int = 1, column: int = 2):
    """Left: the n x n scores cut into ``blocks`` x ``blocks`` tiles; the
    query block ``row`` (0-based) is on chip, its tiles left of ``column``
    are done and thrown away, tile (row, column) is being computed. Right:
    what travels between slow memory (HBM) and fast memory (SRAM) for it.
    Returns the figure."""
    require_int("blocks", blocks, 2)
    for name, value in (("row", row), ("column", column)):
        require_int(name, value, 0)
        if value >= blocks:
            raise ValueError(f"{name} must be below blocks = {blocks}")
    fig, (left, right) = plt.subplots(
        1, 2, figsize=(9.2, 4.2), gridspec_kw={"width_ratios": [1.15, 1]}
    )
    size = 1.0
    top = blocks * size
    for i in range(blocks):  # the query blocks, a column left of S
        colour = "C0" if i == row else "0.93"
        _tile(left, -1.0, top - (i + 1) * size, 0.6, size, colour,
              text=f"$Q_{i + 1}$")  # fmt: skip
    for j in range(blocks):  # the key blocks, a row above S
        colour = "C2" if j == column else "0.93"
        _tile(left, j * size, top + 0.3, size, 0.6, colour,
              text=f"$K_{j + 1}^\\top$")  # fmt: skip
    for i in range(blocks):
        for j in range(blocks):
            y = top - (i + 1) * size
            if i == row and j == column:
                _tile(left, j, y, size, size, "C1",
                      text="$S_{ij}$\non chip")  # fmt: skip
            elif i == row and j < column:
                _tile(left, j, y, size, size, "0.85", hatch="///")
            else:
                _tile(left, j, y, size, size, "white")
    left.text(blocks / 2, -0.35, "scores $S$: never stored whole",
              ha="center", va="top", fontsize=9)  # fmt: skip
    left.legend(
        handles=[
            Patch(facecolor="C1", edgecolor="0.3", label="on chip now"),
            Patch(facecolor="0.85", edgecolor="0.3", hatch="///",
                  label="done: folded into $m$, $\\ell$, acc., discarded"),
            Patch(facecolor="white", edgecolor="0.3", label="still to come"),
        ],
        loc="upper center", bbox_to_anchor=(0.5, 0.0), fontsize=8,
        frameon=False, ncol=1,
    )  # fmt: skip
    left.set_xlim(-1.2, blocks + 0.2)
    left.set_ylim(-0.8, top + 1.1)
    left.set_aspect("equal")
    left.axis("off")
    left.set_title("tiles of $S = QK^\\top/\\sqrt{d}$", fontsize=9.5)

    _tile(right, 0.0, 0.2, 1.6, 3.2, "0.95")
    right.text(0.8, 3.55, "HBM (slow, large)", ha="center", fontsize=9)
    for k, name in enumerate(("$Q$", "$K$", "$V$", "$O$, $L$")):
        right.text(0.8, 2.9 - 0.72 * k, name, ha="center", fontsize=9)
    _tile(right, 3.0, 0.9, 1.8, 1.9, "0.95")
    right.text(3.9, 2.95, "SRAM (fast, $M$ numbers)", ha="center",
               fontsize=9)  # fmt: skip
    right.text(3.9, 2.3, "$Q_i$, $m$, $\\ell$, acc.", ha="center",
               fontsize=8.5)  # fmt: skip
    right.text(3.9, 1.7, "$K_j$, $V_j$", ha="center", fontsize=8.5)
    right.text(3.9, 1.15, "$S_{ij}$, $P_{ij}$", ha="center", fontsize=8.5)
    _arrow(right, (1.65, 2.9), (2.95, 2.3), "$Q_i$ once")
    _arrow(right, (1.65, 2.0), (2.95, 1.7), "$K_j, V_j$\nevery $j$")
    _arrow(right, (2.95, 1.1), (1.65, 0.7), "$O_i, L_i$ once")
    _arrow(right, (4.55, 1.05), (4.55, 2.2), "", bend=0.6)
    right.text(5.05, 1.65, "update $m$, $\\ell$\nacc. += $P_{ij}V_j$\non chip",
               ha="left", va="center", fontsize=8)  # fmt: skip
    right.set_xlim(-0.1, 6.3)
    right.set_ylim(0.0, 3.8)
    right.axis("off")
    right.set_title("what moves for query block $i$", fontsize=9.5)
    fig.tight_layout()
    return fig
