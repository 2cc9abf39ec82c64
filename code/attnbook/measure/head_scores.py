"""Scores that say what an attention head does, read off its weights.

A previous-token head puts its weight on the key just before the query. An
induction head (Elhage et al. 2021, Olsson et al. 2022) works on a sequence
whose second part repeats the first with a period P: at query i it looks
for the earlier occurrences of its token (positions i - P, i - 2P, ...) and
attends to the tokens that followed them, keys i - P + 1, i - 2P + 1, ...:
the token it predicts next.
"""

import torch

from .._checks import require_float, require_int_in


def previous_token_score(weights: torch.Tensor) -> torch.Tensor:
    """Mean weight on the previous key, one score per leading index.

    weights: (..., n, n) attention weights of n queries over the same n
        keys, floating point, n >= 2; e.g. (layers, heads, n, n).
    Returns a tensor (...), e.g. (layers, heads): the mean of
    weights[..., i, i - 1] over the queries i = 1 .. n - 1. A head that
    only looks one token back scores 1.0.
    """
    _check_square_weights(weights)
    return weights.diagonal(offset=-1, dim1=-2, dim2=-1).mean(dim=-1)


def induction_score(weights: torch.Tensor, period: int) -> torch.Tensor:
    """Mean weight on the tokens that followed earlier occurrences of the
    query's token, one score per leading index.

    weights: (..., n, n) attention weights of n queries over the same n
        keys, floating point, n >= 2; e.g. (layers, heads, n, n).
    period: P, an int in [1, n - 1]: the sequence repeats a segment of P
        tokens from position 0, so token i occurred before at i - P,
        i - 2P, ..., and the keys that hold what came next are i - P + 1,
        i - 2P + 1, ... (every one of them, not only the last).
    Returns a tensor (...), e.g. (layers, heads): the weight on those keys,
    summed for each query and averaged over the queries i = P .. n - 1.
    A perfect induction head scores 1.0 whether it picks the last earlier
    copy or splits its weight over all of them; a head spreading its weight
    evenly over the keys it sees scores about 1 / P.
    """
    n = _check_square_weights(weights)
    require_int_in("period", period, 1, n - 1)
    positions = torch.arange(n, device=weights.device)
    i, j = positions[:, None], positions[None, :]
    # key j = i - kP + 1 >= 1 for some k >= 1: it followed an earlier copy
    after_copy = (j >= 1) & (j <= i - period + 1)
    successors = after_copy & ((i + 1 - j) % period == 0)
    on_successors = (weights * successors.to(weights.dtype)).sum(dim=-1)
    return on_successors[..., period:].mean(dim=-1)


def _check_square_weights(weights) -> int:
    """A real floating-point (..., n, n) tensor with n >= 2; returns n."""
    require_float("weights", weights)
    if weights.dim() < 2 or weights.shape[-1] != weights.shape[-2]:
        raise ValueError(
            "weights must have shape (..., n, n), as many queries as keys, "
            f"got {tuple(weights.shape)}"
        )
    if weights.shape[-1] < 2:
        raise ValueError(
            "weights need n >= 2 positions (a query with a key before it), "
            f"got shape {tuple(weights.shape)}"
        )
    return weights.shape[-1]
