"""Chapter 18's diagram of one multi-query associative recall sequence: the
key-value pairs, then the queries, each query joined by an arc to the pair
whose value it must answer."""

import matplotlib.pyplot as plt
from matplotlib.patches import FancyArrowPatch, Rectangle

from .._checks import require_int, require_tensor


def draw_recall_sequence(tokens, targets, num_keys: int):
    """Draw one sequence as a row of boxes: keys (blue), values (orange),
    queries (grey, the answer written under each), and an arc from each
    query back to the value it must recall.

    tokens, targets: (n,) integer tensors as ``tasks.recall.recall_batch``
    returns per row (targets -1 where there is no answer); num_keys: the
    key tokens are 0 .. num_keys - 1, the others values. Returns the figure.
    """
    require_int("num_keys", num_keys)
    for name, value in (("tokens", tokens), ("targets", targets)):
        require_tensor(name, value)
        if value.dim() != 1 or value.is_floating_point():
            raise ValueError(
                f"{name} must be a 1-d integer tensor, got "
                f"{tuple(value.shape)} {value.dtype}"
            )
    tokens, targets = tokens.tolist(), targets.tolist()
    if len(tokens) != len(targets):
        raise ValueError(
            f"tokens ({len(tokens)}) and targets ({len(targets)}) must have "
            "the same length"
        )
    n = len(tokens)
    queries = [t for t in range(n) if targets[t] >= 0]
    first_query = queries[0] if queries else n
    spans = [t - tokens.index(tokens[t]) - 1 for t in queries]
    top = 1.0 + 0.19 * max(spans, default=0)
    width = max(6.0, 0.42 * n)
    fig, ax = plt.subplots(figsize=(width, width * (top + 1.0) / (n + 0.4)))
    for t, token in enumerate(tokens):
        if t >= first_query:
            colour, text = "0.85", f"k{token}"
        elif token < num_keys:
            colour, text = "#9ecae1", f"k{token}"
        else:
            colour, text = "#fdae6b", f"v{token - num_keys}"
        ax.add_patch(
            Rectangle((t, 0), 0.92, 0.8, facecolor=colour, edgecolor="0.3")
        )
        ax.text(t + 0.46, 0.4, text, ha="center", va="center", fontsize=7)
    for t in queries:
        answer = targets[t]
        ax.text(
            t + 0.46,
            -0.3,
            f"v{answer - num_keys}",
            ha="center",
            va="center",
            fontsize=7,
            color="C3",
        )
        source = tokens.index(tokens[t]) + 1  # the value after the key
        arc = FancyArrowPatch(
            (t + 0.46, 0.82),
            (source + 0.46, 0.82),
            connectionstyle="arc3,rad=0.35",
            arrowstyle="->",
            mutation_scale=7,
            color="C3",
            lw=0.8,
            alpha=0.7,
        )
        ax.add_patch(arc)
    ax.text(first_query / 2, -0.75, "key-value pairs", ha="center", fontsize=8)
    ax.text(
        (first_query + n) / 2,
        -0.75,
        "queries (red: the answer asked for)",
        ha="center",
        fontsize=8,
    )
    ax.set_xlim(-0.2, n + 0.2)
    ax.set_ylim(-1.0, top)
    ax.set_aspect("equal")
    ax.axis("off")
    fig.tight_layout()
    return fig
