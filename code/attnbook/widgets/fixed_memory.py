"""Chapter 17 explorer: what a d x d state recalls after P writes, pair by
pair, for a sum of outer products (linear attention) and for the delta
rule, with or without a decay gate.

The controls: the key size d, the gate (1: none) and the number of pairs
written (the slider). The figure: the retrieval error of every stored pair,
oldest first, for both rules; the title gives their means.
"""

import matplotlib.pyplot as plt
import torch

from .._checks import require_finite_number, require_int_in
from ..experiments.memory_retrieval import random_pairs, retrieval_errors
from ._explorer import buttons_explorer
from ._live import draws_view

KEY_DIMS = (16, 32, 64)
GATES = (1.0, 0.95)
PAIRS = (8, 16, 32, 64, 128)
RULES = ("linear", "delta")
_COLORS = {"linear": "C0", "delta": "C3"}


def memory_view(key_dim: int = 32, gate: float = 1.0, pairs: int = 32):
    """The retrieval error of each of ``pairs`` random unit key-value pairs
    (seed 0) written into a ``key_dim`` x ``key_dim`` state, oldest first,
    for each rule of ``RULES`` (delta: beta = 1); gate: the decay before
    each write (1: none)."""
    require_int_in("key_dim", key_dim, 1, 512)
    require_int_in("pairs", pairs, 1, 1024)
    require_finite_number("gate", gate, low=0.0, high=1.0, include_low=False)
    keys, values = random_pairs(pairs, key_dim, key_dim, seed=0)
    gates = None
    if gate != 1.0:
        gates = torch.full((pairs,), float(gate), dtype=torch.float64)
    errors = {
        rule: retrieval_errors(rule, keys, values, gate=gates).tolist()
        for rule in RULES
    }
    return {"setting": (key_dim, gate, pairs), "errors": errors}


@draws_view
def plot_memory(view: dict):
    """Error per pair (oldest left) for both rules, on fixed axes."""
    fig, ax = plt.subplots(figsize=(8, 3.3))
    for rule in RULES:
        ax.plot(
            [],
            [],
            "o-",
            ms=3,
            lw=1,
            color=_COLORS[rule],
            label={
                "linear": "sum of outer products (linear attention)",
                "delta": "delta rule, β = 1",
            }[rule],
        )
    ax.axhline(1.0, color="0.6", ls=":", lw=1)
    ax.set_xlim(0.5, max(PAIRS) + 0.5)
    ax.set_ylim(0, 4)
    ax.set_xlabel("pair, in the order written (oldest left)")
    ax.set_ylabel("retrieval error |S k − v|²")
    ax.legend(fontsize=8, loc="upper right")
    ax.set_title(" ", fontsize=9)
    fig.subplots_adjust(left=0.09, right=0.97, top=0.88, bottom=0.16)
    update_memory_figure(fig, view)
    return fig


@draws_view
def update_memory_figure(fig, view: dict) -> list:
    """Show ``view`` in a figure made by ``plot_memory``; returns the
    artists that changed."""
    (ax,) = fig.axes
    lines = ax.lines[: len(RULES)]
    for line, rule in zip(lines, RULES):
        errors = view["errors"][rule]
        line.set_data(range(1, len(errors) + 1), errors)
    key_dim, gate, pairs = view["setting"]
    means = {r: sum(e) / len(e) for r, e in view["errors"].items()}
    gate_text = "no gate" if gate == 1.0 else f"gate {gate}"
    ax.title.set_text(
        f"{pairs} pairs in a {key_dim}×{key_dim} state, {gate_text}: mean "
        f"error {means['linear']:.2f} (sum), {means['delta']:.2f} (delta)"
    )
    return [*lines, ax.title]


def memory_explorer(key_dim: int = 32, gate: float = 1.0, pairs: int = 32):
    """Buttons for the key size and the gate, a slider for the pairs
    written; redraws each pair's retrieval error."""
    options = {
        "key_dim": [(str(d), d) for d in KEY_DIMS],
        "gate": [("none" if g == 1.0 else str(g), g) for g in GATES],
        "pairs": [(str(p), p) for p in PAIRS],
    }
    labels = {"key_dim": "key size d", "gate": "gate", "pairs": "pairs"}
    first = {"key_dim": key_dim, "gate": gate, "pairs": pairs}
    return buttons_explorer(
        options,
        labels,
        first,
        "pairs",
        memory_view,
        plot_memory,
        update_memory_figure,
    )
