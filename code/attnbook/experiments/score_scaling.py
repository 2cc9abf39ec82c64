"""Why dot-product scores are scaled: score variance, softmax saturation and
how gradients spread.

For a query and a key with independent unit-variance entries, the dot product
of two d-dimensional vectors has variance d. Scores that vary by tens saturate
the softmax: one weight is close to 1, the Jacobian of the softmax is close to
0, and the gradient that reaches the query and the keys comes from a few rows
and a couple of keys. Dividing by sqrt(d) keeps the variance at 1 whatever d
is. These functions measure that on seeded random vectors, in float64 so that
the numbers do not depend on the machine or the thread count.
"""

import math

import torch

from .._checks import all_finite, require_float, require_int, require_positive
from .._memory import require_matrix_fits
from .._random import seeded_generator
from ..core.scoring import dot_score, scaled_dot_score

SATURATION = 0.99
"""A softmax row counts as saturated when its largest weight exceeds this."""


def softmax_jacobian(weights: torch.Tensor) -> torch.Tensor:
    """The softmax's Jacobian at its output w: J_ij = w_i (delta_ij - w_j).

    weights: (..., n), softmax outputs (each row sums to 1).
    Returns J = d weights / d scores, (..., n, n).
    """
    _check_rows(weights)
    outer = weights.unsqueeze(-1) * weights.unsqueeze(-2)  # w_i w_j
    return torch.diag_embed(weights) - outer


def _check_rows(weights) -> None:
    """weights: a float tensor (..., n) with n >= 1 whose Jacobian (..., n,
    n) fits the memory limit."""
    require_float("weights", weights)
    if weights.dim() == 0:
        raise ValueError(
            "weights must have at least one dimension (..., n), got a 0-d "
            "tensor"
        )
    require_matrix_fits(
        "the Jacobian",
        (*weights.shape, weights.shape[-1]),
        weights.dtype,
        hint="use fewer weights, or",
    )


def random_queries_and_keys(
    dim: int, n_trials: int = 256, n_keys: int = 16, seed: int = 0
):
    """Seeded N(0, 1) queries (n_trials, 1, dim) and keys (n_trials, n_keys,
    dim), float64."""
    for name, value, low in (
        ("dim", dim, 1),
        ("n_trials", n_trials, 1),
        ("n_keys", n_keys, 2),
    ):
        require_int(name, value, minimum=low)
    require_int("seed", seed, minimum=0)
    require_matrix_fits(
        "the keys",
        (n_trials, n_keys, dim),
        torch.float64,
        hint="use fewer, or",
    )
    generator = seeded_generator(seed)
    queries = torch.randn(
        n_trials, 1, dim, generator=generator, dtype=torch.float64
    )
    keys = torch.randn(
        n_trials, n_keys, dim, generator=generator, dtype=torch.float64
    )
    return queries, keys


def random_scores(
    dim: int,
    scaled: bool = True,
    n_trials: int = 256,
    n_keys: int = 16,
    seed: int = 0,
) -> torch.Tensor:
    """Scores of random queries against random keys, one row per trial.

    Each trial draws one query (dim,) and ``n_keys`` keys (n_keys, dim) with
    independent N(0, 1) entries (``random_queries_and_keys``) and scores them
    with ``scaled_dot_score`` (or ``dot_score`` if ``scaled`` is False).
    Returns (n_trials, n_keys).
    """
    queries, keys = random_queries_and_keys(dim, n_trials, n_keys, seed)
    score = scaled_dot_score if scaled else dot_score
    return score(queries, keys).squeeze(-2)


def softmax_statistics(scores: torch.Tensor, temperature: float = 1.0) -> dict:
    """How sharp ``softmax(scores / temperature)`` is, row by row.

    scores: (n_trials, n_keys). Returns a dict of floats: ``variance`` of the
    scores (before the temperature), ``max_weight`` (the largest weight, mean
    over rows), ``entropy`` in nats (mean; ``max_entropy`` = log n_keys is the
    uniform case), ``saturated`` (the fraction of rows whose largest weight
    exceeds ``SATURATION``) and ``median_max_jacobian`` (the median over rows
    of the largest |entry| of the softmax Jacobian with respect to its own
    input, scores / temperature).
    """
    require_float("scores", scores)
    require_positive("temperature", temperature)
    if scores.dim() != 2 or 0 in scores.shape:
        raise ValueError(
            "scores must be (n_trials, n_keys) with at least one of each, got "
            f"shape {tuple(scores.shape)}"
        )
    scaled = scores / temperature
    if not all_finite(scaled):
        raise ValueError(
            f"scores / temperature is not finite (temperature={temperature:g} "
            "is too small for these scores, or they hold NaN or inf)"
        )
    weights = torch.softmax(scaled, dim=-1)
    plogp = torch.where(
        weights > 0, weights * weights.log(), torch.zeros_like(weights)
    )
    max_weight = weights.max(dim=-1).values
    largest_jacobian_entry = softmax_jacobian(weights).abs().amax(dim=(-2, -1))
    return {
        "temperature": temperature,
        "variance": scores.var().item(),
        "max_weight": max_weight.mean().item(),
        "entropy": (-plogp.sum(dim=-1)).mean().item(),
        "max_entropy": math.log(scores.shape[-1]),
        "saturated": (max_weight > SATURATION).double().mean().item(),
        "median_max_jacobian": largest_jacobian_entry.median().item(),
    }


def keys_sharing(gradients: torch.Tensor) -> torch.Tensor:
    """How many keys share a gradient, row by row: (sum_j |g_j|)^2 / sum_j
    g_j^2.

    gradients: (..., n_keys). Returns (...): n_keys when every key gets the
    same size, 1 when one key gets everything, 2 for two keys with equal and
    opposite gradients; rows that are exactly zero give 0. The gradient a
    softmax passes to its scores sums to zero over the keys (its weights sum
    to 1), so no key gets everything: for such rows the count runs from 2 to
    n_keys.
    """
    require_float("gradients", gradients)
    squares = (gradients**2).sum(dim=-1)
    return torch.where(
        squares > 0,
        gradients.abs().sum(dim=-1) ** 2
        / squares.clamp_min(torch.finfo(gradients.dtype).tiny),
        0.0,
    )


def query_gradients(
    dim: int,
    scaled: bool = True,
    n_trials: int = 256,
    n_keys: int = 16,
    seed: int = 0,
) -> dict:
    """Back-propagate through softmax(scores) for the random trials of
    ``random_scores``.

    Each trial gets a seeded upstream gradient u (n_keys,) ~ N(0, 1) on its
    attention weights (the loss is sum_j alpha_j u_j, what any loss above the
    softmax looks like locally). Autograd gives d loss / d query (n_trials,
    dim) and d loss / d dot product (n_trials, n_keys), taken with respect to
    the raw q.k, so the 1/sqrt(dim) of the scaled version is included. Returns
    {"query": ..., "dot_product": ...}.
    """
    queries, keys = random_queries_and_keys(dim, n_trials, n_keys, seed)
    upstream = torch.randn(
        n_trials,
        n_keys,
        generator=torch.Generator().manual_seed(seed + 1),
        dtype=torch.float64,
    )
    queries.requires_grad_(True)
    dot_products = dot_score(queries, keys).squeeze(
        -2
    )  # raw q.k, (n_trials, n_keys)
    dot_products.retain_grad()
    scores = dot_products / math.sqrt(dim) if scaled else dot_products
    (torch.softmax(scores, dim=-1) * upstream).sum().backward()
    return {
        "query": queries.grad.squeeze(-2),
        "dot_product": dot_products.grad,
    }


def gradient_statistics(
    dim: int,
    scaled: bool = True,
    n_trials: int = 256,
    n_keys: int = 16,
    seed: int = 0,
) -> dict:
    """Size and spread of ``query_gradients``, as floats.

    ``median_query_gradient`` and ``mean_query_gradient``: median and mean over
    trials of |d loss / d q|; ``keys_sharing``: median over trials of
    ``keys_sharing`` of d loss / d (q.k), the number of keys that effectively
    receive gradient.
    """
    gradients = query_gradients(dim, scaled, n_trials, n_keys, seed)
    sizes = gradients["query"].norm(dim=-1)
    return {
        "median_query_gradient": sizes.median().item(),
        "mean_query_gradient": sizes.mean().item(),
        "keys_sharing": keys_sharing(gradients["dot_product"]).median().item(),
    }


def random_score_statistics(
    dim: int,
    scaled: bool = True,
    temperature: float = 1.0,
    n_trials: int = 256,
    n_keys: int = 16,
    seed: int = 0,
) -> dict:
    """``softmax_statistics`` of ``random_scores`` and (at temperature 1)
    ``gradient_statistics``, plus ``dim`` and ``scaled``."""
    stats = softmax_statistics(
        random_scores(dim, scaled, n_trials, n_keys, seed), temperature
    )
    if temperature == 1.0:
        stats.update(gradient_statistics(dim, scaled, n_trials, n_keys, seed))
    return {"dim": dim, "scaled": scaled, **stats}
