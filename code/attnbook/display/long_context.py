"""Chapter 15's diagrams: what each position scheme adds to a head's
scores, and how far RoPE's pairs turn over a training length."""

import math

import matplotlib.pyplot as plt
import torch

from .._checks import require_int
from ..core.long_context import (
    alibi_bias,
    rope_frequencies,
    rope_score_by_distance,
    t5_buckets,
)
from ..core.masking import causal_mask


def position_terms(n: int = 12) -> dict:
    """The position-dependent part of one head's scores at n positions,
    query i (rows) against key j (columns), NaN where the causal mask hides
    the key: T5's bucket of i - j (8 buckets up to distance 16, so the
    buckets widen within n), ALiBi's bias for slope 1/4, RoPE's self-score
    (head size 16) and NoPE's 0."""
    keep = causal_mask(n)
    distance = (torch.arange(n)[:, None] - torch.arange(n)).clamp(min=0)
    rope = rope_score_by_distance(rope_frequencies(16), distance.flatten())
    terms = {
        "T5: bucket of i - j": t5_buckets(distance, 8, 16).double(),
        "ALiBi: -(i - j) / 4": alibi_bias(4, n, dtype=torch.float64)[0],
        "RoPE: cos-score at i - j": rope.reshape(n, n),
        "NoPE: mask only": torch.zeros(n, n, dtype=torch.float64),
    }
    return {
        name: term.masked_fill(~keep, math.nan) for name, term in terms.items()
    }


def draw_position_terms(n: int = 12):
    """Four heat maps of ``position_terms(n)``, one colour scale each."""
    terms = position_terms(n)
    fig, axes = plt.subplots(1, 4, figsize=(8.6, 2.6))
    for ax, (name, term) in zip(axes, terms.items()):
        image = ax.imshow(term, cmap="viridis", interpolation="nearest")
        ax.set_title(name, fontsize=9)
        ax.set_xlabel("key j", fontsize=8)
        ax.set_xticks([0, n - 1])
        ax.set_yticks([0, n - 1])
        ax.tick_params(labelsize=8)
        if not torch.isnan(term).all() and term.nan_to_num().abs().max() > 0:
            bar = fig.colorbar(image, ax=ax, fraction=0.046, pad=0.04)
            bar.ax.tick_params(labelsize=8)
    axes[0].set_ylabel("query i", fontsize=8)
    fig.tight_layout()
    return fig


def draw_rope_turns(head_dim: int, trained: int, longest: int, base=1e4):
    """Per feature pair j of a RoPE head: the turns (angle / 2 pi) its
    rotation makes over the largest distance seen in training
    (trained - 1) and at the longest evaluation length (longest - 1), on a
    log scale, with the line of one full turn."""
    require_int("trained", trained, minimum=2)
    require_int("longest", longest, minimum=2)
    theta = rope_frequencies(head_dim, base)
    pairs = torch.arange(len(theta))
    fig, ax = plt.subplots(figsize=(6.4, 2.8))
    for length, style, label in (
        (trained, "o-", f"largest distance in training ({trained - 1})"),
        (longest, "s--", f"largest distance at n = {longest} ({longest - 1})"),
    ):
        turns = (length - 1) * theta / (2 * math.pi)
        ax.semilogy(pairs, turns, style, ms=4, label=label)
    ax.axhline(1, color="k", ls=":", lw=1, label="one full turn")
    ax.set_xlabel("feature pair j")
    ax.set_ylabel("turns over the distance")
    ax.legend(fontsize=8)
    fig.tight_layout()
    return fig
