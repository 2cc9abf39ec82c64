"""Chapter 3's diagram: soft attention as the expectation of the selected
input, hard attention as one sample, and where the gradient goes in each."""

import matplotlib.pyplot as plt

from .attention_steps import require_weights
from .diagrams import arrow, box
from .figures import require_figsize

_INPUT, _SAMPLER, _OUTPUT = "#fde8cf", "#e6f2e1", "#fbe3e1"


def _check(weights, chosen) -> list:
    """2 to 6 non-negative weights summing to 1; chosen an index into them."""
    weights = require_weights(weights)
    if (
        not isinstance(chosen, int)
        or isinstance(chosen, bool)
        or not 0 <= chosen < len(weights)
    ):
        raise ValueError(
            f"chosen must be an index 0 to {len(weights) - 1} into the "
            f"{len(weights)} weights, got {chosen!r:.20}"
        )
    return weights


def _inputs(ax, x, rows, weights):
    """The input boxes x_i and their weights alpha_i, one row each."""
    for i, (y, w) in enumerate(zip(rows, weights), start=1):
        box(ax, x, y, 0.8, 0.55, f"$\\mathbf{{x}}_{i}$", _INPUT, 9)
        label = f"$\\alpha_{i}$ = {w:.2f}"
        ax.text(x - 0.5, y, label, ha="right", va="center", fontsize=8)


def draw_soft_hard(
    weights=(0.15, 0.5, 0.25, 0.1), chosen=2, figsize=(6.7, 3.1)
):
    """Soft attention (left): every input x_i reaches the output
    sum_i alpha_i x_i, with a line as wide as its weight, and the gradient
    reaches every alpha_i. Hard attention (right): z ~ alpha picks one input
    (``chosen``, counted from 0), only x_z reaches the output, and no
    gradient reaches alpha. Returns the figure."""
    weights = _check(weights, chosen)
    n = len(weights)
    fig, ax = plt.subplots(figsize=require_figsize(figsize))
    ax.set_xlim(0, 13.4)
    ax.set_ylim(-1.3, n + 0.8)
    ax.axis("off")
    rows = [n - i - 0.5 for i in range(n)]  # input i + 1 from the top
    middle = n / 2
    titles = {
        3.2: "soft attention: the expectation",
        10.0: "hard attention: one sample",
    }
    for x, title in titles.items():
        ax.text(x, n + 0.45, title, ha="center", fontsize=9)
    # soft: every input, weighted
    _inputs(ax, 1.5, rows, weights)
    for y, w in zip(rows, weights):
        ax.plot([1.9, 4.6], [y, middle], color="0.3", lw=0.5 + 6 * w)
    box(
        ax, 5.4, middle, 1.5, 0.8,
        "$\\sum_i \\alpha_i \\mathbf{x}_i$", _OUTPUT, 10,
    )  # fmt: skip
    ax.text(
        3.2, -0.75, "gradient reaches every $\\alpha_i$",
        ha="center", fontsize=8,
    )  # fmt: skip
    # hard: a draw z ~ alpha selects one input
    _inputs(ax, 8.3, rows, weights)
    box(ax, 10.3, middle, 1.3, 0.8, "$z \\sim \\alpha$", _SAMPLER, 10)
    for i, y in enumerate(rows):
        picked = i == chosen
        ax.plot(
            [8.7, 9.65], [y, middle],
            color="0.3" if picked else "0.75",
            lw=2.0 if picked else 0.8,
            linestyle="-" if picked else ":",
        )  # fmt: skip
    arrow(ax, (10.95, middle), (11.9, middle))
    box(
        ax, 12.5, middle, 1.1, 0.8,
        f"$\\mathbf{{x}}_z = \\mathbf{{x}}_{chosen + 1}$", _OUTPUT, 9,
    )  # fmt: skip
    ax.text(
        10.0, -0.75, "no gradient reaches $\\alpha$: estimate it",
        ha="center", fontsize=8,
    )  # fmt: skip
    fig.tight_layout()
    return fig
