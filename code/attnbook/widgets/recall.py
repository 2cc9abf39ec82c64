"""Chapter 18 explorer: the recall lab's shipped results, one model and one
state size (query-key features per head, d_k) at a time.

Left: the chosen model's accuracy against the number of key-value pairs P,
one thin line per seed and their mean, with softmax attention for
reference. Right: the recall/memory frontier, every trained (model, d_k)
as a point (mean accuracy at the largest P against the numbers its mixers
keep per sequence), the chosen one ringed. Models trained only at the
default d_k are shown there whatever d_k is chosen (the title says so).
"""

import matplotlib.pyplot as plt

from ..tasks.recall import KEY_DIMS, MODELS, PAIRS, pretrained_results
from ._explorer import buttons_explorer
from ._live import draws_view

_LABELS = {
    "softmax": "softmax",
    "sliding_window": "sliding window",
    "linear": "linear",
    "deltanet": "DeltaNet",
    "gated_deltanet": "gated DeltaNet",
    "hybrid": "hybrid",
}


def recall_view(model: str = "deltanet", key_dim: int = 32) -> dict:
    """What the explorer draws for ``model`` (a name of ``MODELS``) with
    ``key_dim`` query-key features per head (one of ``KEY_DIMS``), from the
    shipped results; a model trained only at the default d_k is shown at
    it ("trained" says which d_k is shown).

    Returns a dict: "pairs", "seeds" (one accuracy list per seed),
    "mean", "softmax" (softmax attention's mean), "frontier"
    ({(model, d_k): (state numbers, mean accuracy at the largest P)}),
    "setting" (model, d_k shown), "asked" (the d_k asked for).
    """
    results = pretrained_results()
    if model not in MODELS:
        raise ValueError(
            f"model must be one of {tuple(MODELS)}, got {model!r:.40}"
        )
    if key_dim not in KEY_DIMS:
        raise ValueError(
            f"key_dim must be one of {KEY_DIMS}, got {key_dim!r:.40}"
        )
    largest = str(max(PAIRS))

    def runs(name, k):
        return [
            r
            for r in results["runs"]
            if r["model"] == name and r["key_dim"] == k
        ]

    def mean_curve(name, k):
        chosen = runs(name, k)
        return [
            sum(r["accuracy"][str(p)] for r in chosen) / len(chosen)
            for p in PAIRS
        ]

    frontier = {}
    for r in results["runs"]:
        setting = (r["model"], r["key_dim"])
        if setting not in frontier:
            chosen = runs(*setting)
            accuracy = sum(c["accuracy"][largest] for c in chosen)
            state = chosen[0]["state_numbers"][largest]
            frontier[setting] = (state, accuracy / len(chosen))
    shown = key_dim if (model, key_dim) in frontier else KEY_DIMS[-1]
    return {
        "setting": (model, shown),
        "asked": key_dim,
        "pairs": list(PAIRS),
        "seeds": [
            [r["accuracy"][str(p)] for p in PAIRS] for r in runs(model, shown)
        ],
        "mean": mean_curve(model, shown),
        "softmax": mean_curve("softmax", KEY_DIMS[-1]),
        "frontier": frontier,
    }


@draws_view
def plot_recall(view: dict):
    """Two panels: accuracy against P (left), the frontier (right)."""
    fig, (left, right) = plt.subplots(1, 2, figsize=(8.4, 3.3))
    pairs = view["pairs"]
    left.plot(pairs, view["softmax"], "k:", lw=1.2, label="softmax")
    for _ in view["seeds"]:
        left.plot(pairs, pairs, "-", color="C0", lw=0.8, alpha=0.45)
    left.plot(pairs, view["mean"], "o-", color="C0", lw=2, label="mean")
    left.set_xscale("log", base=2)
    left.set_xticks(pairs, [str(p) for p in pairs])
    left.set_xlabel("key-value pairs P")
    left.set_ylabel("held-out recall accuracy")
    left.set_ylim(0, 1.03)
    left.legend(fontsize=8, loc="lower left")
    for k, name in enumerate(MODELS):
        points = sorted(
            v for (m, _), v in view["frontier"].items() if m == name
        )
        right.plot(
            [s for s, _ in points],
            [a for _, a in points],
            "o-",
            color=f"C{k}",
            ms=4,
            lw=1,
            label=_LABELS[name],
        )
    right.plot([], [], "o", ms=11, mfc="none", mec="k", mew=1.5)
    right.set_xscale("log")
    right.set_xlabel(f"numbers kept per sequence (P = {max(pairs)})")
    right.set_ylabel(f"accuracy at P = {max(pairs)}")
    right.set_ylim(0, 1.03)
    right.legend(fontsize=8, loc="lower right")
    left.set_title(" ", fontsize=9)
    right.set_title(" ", fontsize=9)
    fig.subplots_adjust(left=0.08, right=0.98, top=0.88, bottom=0.16)
    fig.subplots_adjust(wspace=0.3)
    update_recall_figure(fig, view)
    return fig


@draws_view
def update_recall_figure(fig, view: dict) -> list:
    """Show ``view`` in a figure made by ``plot_recall``; returns the
    artists that changed."""
    left, right = fig.axes
    pairs = view["pairs"]
    softmax, *seed_lines, mean = left.lines
    softmax.set_ydata(view["softmax"])
    for line, accuracy in zip(seed_lines, view["seeds"]):
        line.set_data(pairs, accuracy)
    mean.set_ydata(view["mean"])
    ring = right.lines[-1]
    state, accuracy = view["frontier"][view["setting"]]
    ring.set_data([state], [accuracy])
    model, key_dim = view["setting"]
    note = "" if key_dim == view["asked"] else " (only trained at)"
    left.title.set_text(
        f"{_LABELS[model]}, d_k = {key_dim}{note}: {view['mean'][-1]:.1%} "
        f"at P = {pairs[-1]}"
    )
    right.title.set_text(f"{state:,} numbers kept at P = {pairs[-1]}")
    return [softmax, *seed_lines, mean, ring, left.title, right.title]


def recall_explorer(model: str = "deltanet", key_dim: int = 32):
    """Buttons for the model, a slider for d_k; redraws the accuracy
    against P and rings the model on the frontier."""
    options = {
        "model": [(_LABELS[name], name) for name in MODELS],
        "key_dim": [(str(k), k) for k in KEY_DIMS],
    }
    labels = {"model": "model", "key_dim": "d_k"}
    first = {"model": model, "key_dim": key_dim}
    return buttons_explorer(
        options,
        labels,
        first,
        "key_dim",
        recall_view,
        plot_recall,
        update_recall_figure,
    )
