"""Chapter 14's diagram: the two heads of an induction circuit on a
sequence ``... A B ... A``."""

import matplotlib.pyplot as plt
from matplotlib.patches import FancyArrowPatch, FancyBboxPatch

_TOKENS = ["x", "A", "B", "y", "z", "w", "A", "?"]


def _box(ax, x, y, text, colour="white"):
    ax.add_patch(
        FancyBboxPatch(
            (x - 0.32, y - 0.22), 0.64, 0.44,
            boxstyle="round,pad=0.02", facecolor=colour, edgecolor="0.3",
        )
    )  # fmt: skip
    ax.text(x, y, text, ha="center", va="center", fontsize=10)


def _arrow(ax, start, end, colour, rad):
    ax.add_patch(
        FancyArrowPatch(
            start, end, connectionstyle=f"arc3,rad={rad}",
            arrowstyle="-|>", mutation_scale=12, color=colour, lw=1.6,
        )
    )  # fmt: skip


def draw_induction_circuit():
    """Tokens x A B y z w A on a line, the prediction ? after them. Layer 0
    (orange): at B, the previous-token head reads A and writes "the token
    before me was A" into B's position. Layer 1 (blue): at the second A,
    the induction head's query ("A") matches that key, attends to B and
    copies it: the prediction is B."""
    fig, ax = plt.subplots(figsize=(8.4, 2.6))
    for i, token in enumerate(_TOKENS[:-1]):
        _box(ax, i, 0.0, token)
        ax.text(i, -0.45, str(i), ha="center", fontsize=8, color="0.4")
    _box(ax, 7.1, 0.0, "B", colour="#cfe3f3")
    ax.text(7.1, -0.45, "predicted", ha="center", fontsize=8, color="0.4")
    ax.annotate(
        "", (6.75, 0.0), (6.35, 0.0),
        arrowprops=dict(arrowstyle="-|>", color="0.3"),
    )  # fmt: skip
    _arrow(ax, (1.1, 0.25), (1.9, 0.25), "C1", -0.9)
    ax.text(
        1.5, 0.95, "layer 0: previous-token head\nat B, reads A",
        ha="center", fontsize=8, color="C1",
    )  # fmt: skip
    _arrow(ax, (5.85, -0.25), (2.15, -0.25), "C0", -0.35)
    ax.text(
        4.0, -1.25,
        "layer 1: induction head at the second A: query \u201cA\u201d "
        "matches the key \u201cmy previous token was A\u201d,\n"
        "attends to B and copies it to the output",
        ha="center", fontsize=8, color="C0",
    )  # fmt: skip
    ax.set_xlim(-0.6, 7.6)
    ax.set_ylim(-1.65, 1.45)
    ax.set_axis_off()
    return fig
