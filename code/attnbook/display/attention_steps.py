"""Chapter 1's diagram: soft attention as a soft table lookup, from a query
and n key-value pairs to scores, weights and the weighted average of the
values."""

import math

import matplotlib.pyplot as plt
from matplotlib.patches import Rectangle

from .._checks import is_finite_number
from .diagrams import arrow, box, weight_line
from .figures import require_figsize

_QUERY, _KEY, _VALUE, _OUTPUT = "#e6f2e1", "#dbe9f6", "#fde8cf", "#fbe3e1"


def require_weights(weights) -> list:
    """2 to 6 non-negative numbers summing to 1, as floats."""
    if not isinstance(weights, (list, tuple)) or not all(
        is_finite_number(w) and w >= 0 for w in weights
    ):
        raise ValueError(
            f"weights must be non-negative numbers, got {weights!r:.60}"
        )
    if not 2 <= len(weights) <= 6:
        raise ValueError(
            f"the diagram has room for 2 to 6 key-value pairs, got "
            f"{len(weights)} weights"
        )
    if not math.isclose(sum(weights), 1.0, abs_tol=1e-6):
        raise ValueError(f"weights must sum to 1, got {sum(weights):.6g}")
    return [float(w) for w in weights]


def draw_attention_steps(weights=(0.1, 0.55, 0.3, 0.05), figsize=(6.7, 3.0)):
    """One query attending over n key-value pairs (one row each), left to
    right: query q, keys k_i, scores s(q, k_i), the softmax, weights
    alpha_i, values v_i, output sum_i alpha_i v_i.

    weights: the alpha_i drawn (2 to 6, non-negative, summing to 1); the line
    from value i to the output is as wide as its weight. Returns the figure.
    """
    weights = require_weights(weights)
    n = len(weights)
    fig, ax = plt.subplots(figsize=require_figsize(figsize))
    ax.set_xlim(0, 13.6)
    ax.set_ylim(-0.9, n + 0.9)
    ax.axis("off")
    rows = [n - i - 0.5 for i in range(n)]  # row i + 1 from the top
    columns = {
        "query": 0.8,
        "keys": 2.7,
        "scores": 4.7,
        "softmax": 6.5,
        "weights": 8.2,
        "values": 10.4,
        "output": 12.6,
    }
    for name, x in columns.items():
        ax.text(x, n + 0.45, name, ha="center", fontsize=8, color="0.3")
    for y in rows:  # one band per key-value pair: one entry of the table
        ax.add_patch(
            Rectangle((1.9, y - 0.42), 9.0, 0.84, color="0.94", zorder=0)
        )
    middle = n / 2
    box(ax, columns["query"], middle, 0.9, 0.6, "$\\mathbf{q}$", _QUERY, 10)
    softmax_height = n - 0.3
    box(ax, columns["softmax"], middle, 1.0, softmax_height, "", "white")
    ax.text(
        columns["softmax"], middle, "softmax", rotation=90, fontsize=9,
        ha="center", va="center",
    )  # fmt: skip
    output_y = middle
    box(
        ax, columns["output"], output_y, 1.7, 0.8,
        "$\\sum_i \\alpha_i \\mathbf{v}_i$", _OUTPUT, 10,
    )  # fmt: skip
    for i, (y, w) in enumerate(zip(rows, weights), start=1):
        arrow(
            ax, (columns["query"] + 0.47, middle), (columns["keys"] - 0.47, y)
        )
        box(ax, columns["keys"], y, 0.9, 0.6, f"$\\mathbf{{k}}_{i}$", _KEY)
        ax.text(
            columns["scores"], y, f"$s(\\mathbf{{q}}, \\mathbf{{k}}_{i})$",
            ha="center", va="center", fontsize=9,
        )  # fmt: skip
        arrow(ax, (columns["keys"] + 0.47, y), (columns["scores"] - 0.8, y))
        arrow(ax, (columns["scores"] + 0.8, y), (columns["softmax"] - 0.52, y))
        ax.text(
            columns["weights"], y, f"$\\alpha_{i} = {w:.2f}$",
            ha="center", va="center", fontsize=9, color="tab:red",
        )  # fmt: skip
        arrow(
            ax, (columns["softmax"] + 0.52, y), (columns["weights"] - 0.8, y)
        )
        arrow(ax, (columns["weights"] + 0.8, y), (columns["values"] - 0.47, y))
        box(ax, columns["values"], y, 0.9, 0.6, f"$\\mathbf{{v}}_{i}$", _VALUE)
        weight_line(
            ax,
            (columns["values"] + 0.46, y),
            (columns["output"] - 0.86, output_y),
            w,
        )
    ax.text(
        (columns["scores"] + columns["weights"]) / 2, -0.55,
        "step 1: attention distribution", ha="center", fontsize=8,
        color="0.3",
    )  # fmt: skip
    ax.text(
        (columns["values"] + columns["output"]) / 2, -0.55,
        "step 2: weighted average", ha="center", fontsize=8, color="0.3",
    )  # fmt: skip
    return fig
