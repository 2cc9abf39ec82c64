"""Where a head's weight lands, by key identity, and masks that evict chosen
keys (chapter 13's attention sinks).

An attention sink is a key that collects far more weight than its share
whatever the query (Xiao et al. 2024). It need not be the first position:
``mass_by_key_token`` adds up each head's weight by the token at the key,
next to the share a head that spreads evenly would give that token, and
``evict_keys_mask`` drops chosen keys outside a recent window, to test what
losing them costs (against ``matched_random_keys``, as many other keys).
"""

import torch
import torch.nn.functional as F

from .._checks import require_float, require_ids, require_int, require_tensor
from .._memory import require_matrix_fits
from .._random import require_generator
from ..core.masking import causal_mask


def mass_by_key_token(weights, tokens, vocab_size: int, first_query: int = 0):
    """Mean attention weight on keys holding each token.

    weights: (B, ..., n, n) attention weights of n queries over the same n
        keys (e.g. (B, layers, heads, n, n)).
    tokens: (B, n) integer token ids in [0, vocab_size).
    first_query: average over queries first_query .. n - 1.
    Returns (mass, uniform): mass (..., vocab_size), the mean over the batch
    and the queries of the weight on keys holding each token; uniform
    (vocab_size,), the same for a head that spreads its weight evenly over
    keys 0 .. i. A token with mass far above its uniform share is a sink.
    """
    require_float("weights", weights)
    n = _check_tokens(weights, tokens, vocab_size)
    require_int("first_query", first_query, minimum=0)
    if first_query >= n:
        raise ValueError(
            f"first_query must be below n = {n}, got {first_query}"
        )
    require_matrix_fits(
        "vocab_size: the one-hot keys",
        (*tokens.shape, vocab_size),
        weights.dtype,
    )
    one_hot = F.one_hot(tokens.long(), vocab_size).to(weights.dtype)
    extra = weights.dim() - 3  # the (...) dimensions
    keys = one_hot.reshape(one_hot.shape[0], *([1] * extra), n, vocab_size)
    mass = (weights[..., first_query:, :] @ keys).mean(dim=-2)
    mass = mass.mean(dim=0)  # (..., V)
    even = causal_mask(n).to(weights.dtype)
    even = even / even.sum(dim=-1, keepdim=True)
    uniform = (even[first_query:] @ one_hot).mean(dim=(0, 1))
    return mass, uniform


def evict_keys_mask(evicted, window: int):
    """Keep-mask (B, 1, n, n) that drops the keys marked in ``evicted``
    (B, n) bool, except within the last ``window`` positions of each query
    (its own included): causal, and every key a query sees in a window of
    ``window`` stays."""
    _check_marks("evicted", evicted)
    require_int("window", window)
    n = evicted.shape[1]
    position = torch.arange(n)
    recent = position[:, None] - position[None, :] < window  # (n_q, n_k)
    keep = causal_mask(n) & (recent | ~evicted[:, None, :])
    return keep[:, None]


def latest_key_mask(marked):
    """Keep-mask (B, 1, n, n) holding, for each query, only the most recent
    key marked in ``marked`` (B, n) bool at or before it (none if no key
    before it is marked)."""
    _check_marks("marked", marked)
    position = torch.arange(marked.shape[1])
    seen = torch.where(marked, position, -1).cummax(dim=-1).values  # (B, n)
    return (position[None, None, :] == seen[:, :, None])[:, None]


def matched_random_keys(evicted, generator: torch.Generator):
    """As many keys per row as ``evicted`` (B, n) bool marks, drawn at
    random among the others (a control for ``evict_keys_mask``)."""
    _check_marks("evicted", evicted)
    require_generator("generator", generator)
    draws = torch.rand(evicted.shape, generator=generator)
    draws = draws.masked_fill(evicted, 2.0)  # never draw a marked key
    rank = draws.argsort(dim=-1).argsort(dim=-1)
    return rank < evicted.sum(dim=-1, keepdim=True)


def _check_tokens(weights, tokens, vocab_size) -> int:
    require_int("vocab_size", vocab_size)
    if weights.dim() < 3 or weights.shape[-1] != weights.shape[-2]:
        raise ValueError(
            "weights must have shape (B, ..., n, n), got "
            f"{tuple(weights.shape)}"
        )
    require_ids("tokens", tokens, vocab_size, dims=2)
    batch, n = weights.shape[0], weights.shape[-1]
    if tuple(tokens.shape) != (batch, n):
        raise ValueError(
            f"tokens must have shape (B, n) = ({batch}, {n}) to match "
            f"weights {tuple(weights.shape)}, got {tuple(tokens.shape)}"
        )
    return n


def _check_marks(name: str, marks):
    """A bool (B, n) tensor of marked keys whose (B, n, n) mask fits."""
    require_tensor(name, marks)
    if marks.dtype != torch.bool:
        raise TypeError(
            f"{name} must be a bool tensor (B, n), got dtype {marks.dtype}"
        )
    if marks.dim() != 2:
        raise ValueError(
            f"{name} must have shape (B, n), got {tuple(marks.shape)}"
        )
    batch, n = marks.shape
    require_matrix_fits(f"the mask from {name}", (batch, n, n), torch.bool)
    return marks
