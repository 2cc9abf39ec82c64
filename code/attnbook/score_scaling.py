"""Why dot-product scores are scaled: score variance, softmax sharpness and gradient size.

For queries and keys with independent unit-variance entries, the dot product of two
D-dimensional vectors has variance D. Large scores saturate the softmax, and a
saturated softmax passes almost no gradient back to the scores. These functions
measure that on seeded random vectors, in float64 so that the numbers do not depend
on the machine or the thread count.
"""

import math

import torch

from ._checks import require_float, require_int, require_positive
from .scoring import dot_score, scaled_dot_score


def softmax_jacobian(weights: torch.Tensor) -> torch.Tensor:
    """Jacobian of the softmax at its output: d weights_i / d scores_j = w_i (delta_ij - w_j).

    weights: (..., n), softmax outputs (each row sums to 1). Returns (..., n, n).
    """
    require_float("weights", weights)
    return torch.diag_embed(weights) - weights.unsqueeze(-1) * weights.unsqueeze(-2)


def random_scores(dim: int, scaled: bool = True, n_trials: int = 256, n_keys: int = 16, seed: int = 0) -> torch.Tensor:
    """Scores of random queries against random keys, one row per trial.

    Each trial draws one query (dim,) and ``n_keys`` keys (n_keys, dim) with independent
    N(0, 1) entries (float64, seeded) and scores them with ``scaled_dot_score`` (or
    ``dot_score`` if ``scaled`` is False). Returns (n_trials, n_keys).
    """
    for name, value, low in (("dim", dim, 1), ("n_trials", n_trials, 1), ("n_keys", n_keys, 2)):
        require_int(name, value, minimum=low)
    generator = torch.Generator().manual_seed(seed)
    queries = torch.randn(n_trials, 1, dim, generator=generator, dtype=torch.float64)
    keys = torch.randn(n_trials, n_keys, dim, generator=generator, dtype=torch.float64)
    score = scaled_dot_score if scaled else dot_score
    return score(queries, keys).squeeze(-2)


def softmax_statistics(scores: torch.Tensor, temperature: float = 1.0) -> dict:
    """How sharp ``softmax(scores / temperature)`` is and how much gradient it passes.

    scores: (n_trials, n_keys). Returns a dict of floats, averaged over the trials:
    ``variance`` of the scores (before the temperature), ``max_weight`` (the largest
    weight), ``entropy`` in nats (``max_entropy`` = log n_keys is the uniform case),
    ``max_gradient`` (the largest |entry| of the softmax Jacobian) and ``saturated``
    (the fraction of trials whose largest weight exceeds 0.99).
    """
    require_float("scores", scores)
    require_positive("temperature", temperature)
    weights = torch.softmax(scores / temperature, dim=-1)
    plogp = torch.where(weights > 0, weights * weights.log(), torch.zeros_like(weights))
    max_weight = weights.max(dim=-1).values
    return {
        "temperature": temperature,
        "variance": scores.var().item(),
        "max_weight": max_weight.mean().item(),
        "entropy": (-plogp.sum(dim=-1)).mean().item(),
        "max_entropy": math.log(scores.shape[-1]),
        "max_gradient": softmax_jacobian(weights).abs().amax(dim=(-2, -1)).mean().item(),
        "saturated": (max_weight > 0.99).double().mean().item(),
    }


def random_score_statistics(
    dim: int, scaled: bool = True, temperature: float = 1.0, n_trials: int = 256, n_keys: int = 16, seed: int = 0
) -> dict:
    """``softmax_statistics`` of ``random_scores``, plus ``dim`` and ``scaled``."""
    stats = softmax_statistics(random_scores(dim, scaled, n_trials, n_keys, seed), temperature)
    return {"dim": dim, "scaled": scaled, **stats}
