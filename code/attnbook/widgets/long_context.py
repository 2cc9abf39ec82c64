"""Chapter 15 explorer: what RoPE scaling does to the rotation frequencies,
and to the score between a vector and itself as the distance grows.

The model is fixed, RoPE with head size 128 and base 10,000 trained on
4,096 positions (Llama 2's setting); the controls choose a scaling method
and the factor s by which the context grows. Left: each pair's frequency
after scaling divided by its frequency before (1: kept, 1/s: interpolated),
against the frequency. Right: the score of a vector with itself at each
distance, relative to distance 0 (``rope_score_by_distance``), unscaled
and scaled, out to s times the training length.
"""

import math

import matplotlib.pyplot as plt
import torch

from .._checks import require_int_in
from ..core.long_context import rope_frequencies, rope_score_by_distance
from ._explorer import buttons_explorer
from ._live import draws_view

HEAD_DIM, BASE, TRAINED = 128, 10000.0, 4096
SCALINGS = (None, "linear", "ntk", "yarn")
FACTORS = (1, 2, 4, 8, 16, 32)
_POINTS = 400


def rope_scaling_view(scaling=None, factor: int = 8) -> dict:
    """Frequencies and self-scores of RoPE (head size ``HEAD_DIM``, base
    ``BASE``, trained on ``TRAINED`` positions) with ``scaling`` (None,
    "linear", "ntk" or "yarn") and context factor ``factor``. With None the
    frequencies stay and only the distances reach factor x TRAINED.

    Returns a dict: "original", "scaled" (frequencies, (HEAD_DIM/2,)),
    "ratio" (scaled / original), "distances", "score", "score_scaled"
    (``rope_score_by_distance``), "turns" (each pair's turns over the
    trained length), "setting" (scaling, factor).
    """
    if scaling not in SCALINGS:
        raise ValueError(
            f"scaling must be one of {SCALINGS}, got {scaling!r:.40}"
        )
    require_int_in("factor", factor, 1, 1024)
    original = rope_frequencies(HEAD_DIM, BASE)
    if scaling is None or factor == 1:
        scaled = original.clone()
    else:
        extra = {"original_context": TRAINED} if scaling == "yarn" else {}
        scaled = rope_frequencies(HEAD_DIM, BASE, scaling, factor, **extra)
    distances = torch.logspace(
        0, math.log10(factor * TRAINED), _POINTS, dtype=torch.float64
    )
    return {
        "setting": (scaling, factor),
        "original": original,
        "scaled": scaled,
        "ratio": scaled / original,
        "turns": TRAINED * original / (2 * math.pi),
        "distances": distances,
        "score": rope_score_by_distance(original, distances),
        "score_scaled": rope_score_by_distance(scaled, distances),
    }


@draws_view
def plot_rope_scaling(view: dict):
    """Two panels: the frequency ratio per pair (log-log) and the
    self-score against distance, with the trained length marked."""
    fig, (left, right) = plt.subplots(1, 2, figsize=(8.4, 3.3))
    left.loglog(view["original"], view["ratio"], "o", ms=3, color="C0")
    for turns, style in ((1, ":"), (32, "--")):
        left.axvline(
            2 * math.pi * turns / TRAINED,
            color="0.5",
            ls=style,
            lw=1,
            label=f"{turns} turn{'s' * (turns > 1)} in {TRAINED:,}",
        )
    left.set_xlabel("frequency before scaling (radians/position)")
    left.set_ylabel("after / before")
    left.set_ylim(1 / 48, 1.6)
    left.legend(fontsize=8, loc="lower right")
    right.plot([], [], color="0.6", lw=1, label="RoPE, no scaling")
    right.plot([], [], color="C0", lw=1.5, label="scaled")
    right.axvline(TRAINED, color="k", ls=":", lw=1, label="trained length")
    right.axvline(TRAINED, color="C3", ls="--", lw=1, label="new length")
    right.set_xscale("log")
    right.set_xlim(1, max(FACTORS) * TRAINED)
    right.set_xlabel("distance (positions)")
    right.set_ylabel("self-score (1 at distance 0)")
    right.set_ylim(-0.25, 1.05)
    right.legend(fontsize=8, loc="lower left")
    left.set_title(" ", fontsize=9)
    right.set_title(" ", fontsize=9)
    fig.subplots_adjust(left=0.08, right=0.98, top=0.88, bottom=0.16)
    fig.subplots_adjust(wspace=0.3)
    update_rope_scaling_figure(fig, view)
    return fig


@draws_view
def update_rope_scaling_figure(fig, view: dict) -> list:
    """Show ``view`` in a figure made by ``plot_rope_scaling``; returns the
    artists that changed."""
    left, right = fig.axes
    points = left.lines[0]
    points.set_data(view["original"], view["ratio"])
    plain, scaled, _, target = right.lines
    distances = view["distances"]
    plain.set_data(distances, view["score"])
    scaled.set_data(distances, view["score_scaled"])
    target.set_xdata([distances[-1].item()] * 2)
    scaling, factor = view["setting"]
    name = {None: "no scaling", "linear": "position interpolation"}.get(
        scaling, scaling.upper() if scaling == "ntk" else "YaRN"
    )
    kept = int((view["ratio"] > 0.99).sum())
    left.title.set_text(f"{name}, s = {factor}: {kept} of 64 pairs kept")
    right.title.set_text(
        f"self-score out to {round(distances[-1].item()):,} positions"
    )
    return [points, plain, scaled, target, left.title, right.title]


def rope_scaling_explorer(scaling="ntk", factor: int = 8):
    """Buttons for the scaling method, a slider for the factor; redraws the
    frequency ratios and the self-score."""
    options = {
        "scaling": [
            ("none", None),
            ("linear (PI)", "linear"),
            ("NTK", "ntk"),
            ("YaRN", "yarn"),
        ],
        "factor": [(str(s), s) for s in FACTORS],
    }
    labels = {"scaling": "scaling", "factor": "factor s"}
    first = {"scaling": scaling, "factor": factor}
    return buttons_explorer(
        options,
        labels,
        first,
        "factor",
        rope_scaling_view,
        plot_rope_scaling,
        update_rope_scaling_figure,
    )
