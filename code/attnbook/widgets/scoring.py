"""Chapter 2 explorer: dimension, scaling and temperature -> score variance, softmax sharpness, gradient."""

import math
from functools import lru_cache

import matplotlib.pyplot as plt
import torch

from ..score_scaling import random_scores, softmax_statistics
from ._live import figure_explorer

DIMS = (4, 8, 16, 32, 64, 128, 256, 512, 1024)


@lru_cache(maxsize=2 * len(DIMS))
def _scores(dim: int, scaled: bool) -> torch.Tensor:
    """Seeded random scores (256 trials x 16 keys), drawn once per dim and reused.

    The scaled scores are the unscaled ones divided by sqrt(dim): the same random vectors.
    """
    if scaled:
        return _scores(dim, False) / math.sqrt(dim)
    return random_scores(dim, False, n_trials=256, n_keys=16, seed=0)


def scoring_view(dim: int = 64, scaled: bool = True, temperature: float = 1.0) -> dict:
    """Everything the explorer shows for one setting of its controls.

    Returns a dict with the controls, ``stats`` (``softmax_statistics`` of the random
    scores at this dim: variance, max_weight, entropy, max_gradient, saturated),
    ``sorted_weights`` (16,): the attention weights sorted from largest to smallest and
    averaged over the trials (a sharpness profile), and ``curves``: for
    scaled True and False, the mean largest softmax-gradient entry at every D in ``DIMS``.
    """
    scores = _scores(dim, scaled)
    return {
        "dim": dim,
        "scaled": scaled,
        "temperature": temperature,
        "stats": softmax_statistics(scores, temperature),
        "sorted_weights": torch.softmax(scores / temperature, dim=-1).sort(dim=-1, descending=True).values.mean(dim=0),
        "dims": DIMS,
        "curves": {
            flag: [softmax_statistics(_scores(d, flag), temperature)["max_gradient"] for d in DIMS]
            for flag in (True, False)
        },
    }


def plot_scoring(view: dict):
    """Mean sorted attention weights (left); largest softmax gradient vs D (right)."""
    stats = view["stats"]
    fig, (left, right) = plt.subplots(1, 2, figsize=(9, 3.2))
    ranks = range(1, len(view["sorted_weights"]) + 1)
    left.bar(ranks, view["sorted_weights"].numpy(), color="tab:red")
    left.set_ylim(0, 1)
    left.set_xticks([1, 4, 8, 12, 16])
    left.set_xlabel("key, ranked by weight")
    left.set_ylabel("mean attention weight")
    left.set_title(
        f"D={view['dim']}, {'scaled' if view['scaled'] else 'unscaled'}, T={view['temperature']:.2g}: "
        f"score var {stats['variance']:.3g}",
        fontsize=9,
    )
    for flag, style in ((True, "o-"), (False, "s--")):
        right.plot(view["dims"], view["curves"][flag], style, label="xᵀq/√D" if flag else "xᵀq")
    right.plot([view["dim"]], [stats["max_gradient"]], "k*", markersize=14, label="current")
    right.set_xscale("log", base=2)
    right.set_ylim(0, 0.26)
    right.set_xlabel("dimension D")
    right.set_ylabel("largest |∂softmax/∂score|")
    right.set_title(f"max weight {stats['max_weight']:.2f}, entropy {stats['entropy']:.2f} nats", fontsize=9)
    right.legend(fontsize=8)
    # Fixed margins: tight_layout would draw the whole figure once just to measure it.
    fig.subplots_adjust(left=0.08, right=0.98, bottom=0.16, top=0.9, wspace=0.3)
    return fig


def scoring_explorer(dim: int = 64, scaled: bool = True, temperature: float = 1.0):
    """Controls for D, scaling on/off and the softmax temperature; redraws both panels."""
    import ipywidgets as widgets

    controls = {
        "dim": widgets.SelectionSlider(options=DIMS, value=dim, description="D", continuous_update=False),
        "scaled": widgets.Checkbox(value=scaled, description="divide by √D"),
        "temperature": widgets.FloatLogSlider(
            value=temperature, base=10, min=-1, max=1, step=0.05, description="temperature",
            continuous_update=False,
        ),
    }
    return figure_explorer(controls, lambda **values: plot_scoring(scoring_view(**values)))
