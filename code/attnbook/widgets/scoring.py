"""Chapter 2 explorer: dimension, scaling and temperature -> score variance,
softmax sharpness, saturation."""

import math
from functools import lru_cache

import matplotlib.pyplot as plt
import torch

from .._checks import require_finite_number, require_flag, require_int_in
from ..experiments.score_scaling import (
    SATURATION,
    random_scores,
    softmax_statistics,
)
from ._explorer import live_explorer
from ._frames import Choices
from ._live import draws_view

#: The temperatures the explorer offers in the HTML book (frames drawn in
#: advance); 32 = sqrt(1024) turns the unscaled scores of d = 1024 into the
#: scaled ones.
FRAME_TEMPERATURES = (0.1, 1.0, 3.0, 10.0, 32.0)

#: The temperatures of the live explorer's slider.
TEMPERATURES = (0.1, 0.2, 0.3, 0.5, 1.0, 2.0, 3.0, 5.0, 10.0, 20.0, 32.0)

DIMS = (4, 8, 16, 32, 64, 128, 256, 512, 1024)


@lru_cache(maxsize=2 * len(DIMS))
def _scores(dim: int, scaled: bool) -> torch.Tensor:
    """Seeded random scores (256 trials x 16 keys), drawn once per dim and
    reused.

    The scaled scores are the unscaled ones divided by sqrt(dim): the same
    random vectors.
    """
    if scaled:
        return _scores(dim, False) / math.sqrt(dim)
    return random_scores(dim, False, n_trials=256, n_keys=16, seed=0)


@lru_cache(maxsize=1)
def _all_scores() -> torch.Tensor:
    """The scores of every d in ``DIMS``, scaled first then unscaled: (2,
    len(DIMS), 256, 16)."""
    return torch.stack(
        [
            torch.stack([_scores(dim, scaled) for dim in DIMS])
            for scaled in (True, False)
        ]
    )


@lru_cache(maxsize=64)
def _saturation_curves(temperature: float) -> dict:
    """For scaled True and False, the fraction of saturated trials at every d
    in ``DIMS``.

    Each entry equals
    ``softmax_statistics(_scores(dim, scaled), temperature)["saturated"]``; all
    2 x len(DIMS) sets of scores go through the softmax in one batch, and each
    temperature is computed once. Returns {True: tuple, False: tuple},
    len(DIMS) floats each.
    """
    weights = torch.softmax(_all_scores() / temperature, dim=-1)
    saturated = (
        (weights.amax(dim=-1) > SATURATION).double().mean(dim=-1)
    )  # (2, len(DIMS))
    return {
        scaled: tuple(row.tolist())
        for scaled, row in zip((True, False), saturated)
    }


def scoring_view(
    dim: int = 64, scaled: bool = True, temperature: float = 1.0
) -> dict:
    """Everything the explorer shows for one setting of its controls.

    Returns a dict with the controls, ``stats`` (``softmax_statistics`` of the
    random scores at this dim: variance, max_weight, entropy, saturated,
    median_max_jacobian), ``sorted_weights`` (16,): the attention weights
    sorted from largest to smallest and averaged over the trials (a sharpness
    profile), and ``curves``: for scaled True and False, the fraction of
    saturated trials at every d in ``DIMS``.
    """
    require_int_in("dim", dim, 1, 4096)
    require_flag("scaled", scaled)
    require_finite_number(
        "temperature", temperature, low=0.0, include_low=False
    )
    scores = _scores(dim, scaled)
    return {
        "dim": dim,
        "scaled": scaled,
        "temperature": temperature,
        "stats": softmax_statistics(scores, temperature),
        "sorted_weights": torch.softmax(scores / temperature, dim=-1)
        .sort(dim=-1, descending=True)
        .values.mean(dim=0),
        "dims": DIMS,
        "curves": {
            scaled: list(curve)
            for scaled, curve in _saturation_curves(temperature).items()
        },
    }


@draws_view
def plot_scoring(view: dict):
    """Mean sorted attention weights (left); fraction of saturated trials vs d
    (right).

    Limits are fixed for every control value the explorer allows: weights and
    fractions lie in [0, 1].
    """
    fig, (left, right) = plt.subplots(1, 2, figsize=(9, 3.2))
    ranks = range(1, len(view["sorted_weights"]) + 1)
    left.bar(ranks, [0.0] * len(ranks), color="tab:red")
    left.set_xlim(-0.2, len(ranks) + 1.2)
    left.set_ylim(0, 1)
    left.set_xticks([1, 4, 8, 12, 16])
    left.set_xlabel("key, ranked by weight")
    left.set_ylabel("mean attention weight")
    left.set_title(" ", fontsize=9)
    for style, label in (("o-", "q·k/√d"), ("s--", "q·k")):
        right.plot([], [], style, label=label)
    right.plot([], [], "k*", markersize=14, label="current")
    right.set_xscale("log", base=2)
    # The log-2 axis spans DIMS with a margin of 0.4 octave on each side.
    right.set_xlim(
        2 ** (math.log2(min(view["dims"])) - 0.4),
        2 ** (math.log2(max(view["dims"])) + 0.4),
    )
    right.set_xticks(
        view["dims"][::2], [str(d) for d in view["dims"][::2]]
    )  # 4, 16, 64, 256, 1024: as in the text
    right.minorticks_off()
    right.set_ylim(-0.02, 1.02)
    right.set_xlabel("query/key size d")
    right.set_ylabel(f"fraction saturated (max weight > {SATURATION})")
    right.set_title(" ", fontsize=9)
    right.legend(fontsize=8)
    # Fixed margins: tight_layout would draw the whole figure once just to
    # measure it.
    fig.subplots_adjust(
        left=0.08, right=0.98, bottom=0.16, top=0.9, wspace=0.3
    )
    update_scoring_figure(fig, view)
    return fig


@draws_view
def update_scoring_figure(fig, view: dict) -> list:
    """Show ``view`` in a figure made by ``plot_scoring``; returns the artists
    that changed.

    The bar heights, both saturation curves (they follow the temperature), the
    star at the current d and both titles change; axes, ticks and the legend
    (listed: a curve may cross it) stay as they are.
    """
    left, right = fig.axes
    stats = view["stats"]
    (weight_bars,) = left.containers
    for bar, height in zip(weight_bars, view["sorted_weights"].tolist()):
        bar.set_height(height)
    left.title.set_text(
        f"d={view['dim']}, {'scaled' if view['scaled'] else 'unscaled'}, τ="
        f"{view['temperature']:.2g}: "
        f"score var {stats['variance']:.3g}"
    )
    scaled_curve, unscaled_curve, current = right.lines
    scaled_curve.set_data(view["dims"], view["curves"][True])
    unscaled_curve.set_data(view["dims"], view["curves"][False])
    current.set_data([view["dim"]], [stats["saturated"]])
    right.title.set_text(
        f"mean largest weight {stats['max_weight']:.2f}, entropy "
        f"{stats['entropy']:.2f} nats"
    )
    return [
        *weight_bars,
        left.title,
        scaled_curve,
        unscaled_curve,
        current,
        right.title,
        right.get_legend(),
    ]


def scoring_explorer(
    dim: int = 64, scaled: bool = True, temperature: float = 1.0
):
    """Controls for d, scaling on/off and the softmax temperature; redraws
    both panels."""
    import ipywidgets as widgets

    if temperature not in TEMPERATURES:
        raise ValueError(
            f"temperature must be one of the slider's values {TEMPERATURES}, "
            f"got {temperature!r}"
        )
    controls = {
        "dim": widgets.SelectionSlider(
            options=DIMS, value=dim, description="d", continuous_update=False
        ),
        "scaled": widgets.Checkbox(value=scaled, description="divide by √d"),
        "temperature": widgets.SelectionSlider(
            options=TEMPERATURES,
            value=temperature,
            description="temperature",
            continuous_update=False,
        ),
    }
    frames = {
        "dim": Choices("d", list(DIMS), value=dim),
        "scaled": Choices(
            "divide by √d",
            [("no", False), ("yes", True)],
            kind="buttons",
            value=scaled,
        ),
        "temperature": Choices(
            "temperature", list(FRAME_TEMPERATURES), value=temperature
        ),
    }
    return live_explorer(
        controls,
        scoring_view,
        plot_scoring,
        update_scoring_figure,
        frames=frames,
    )
