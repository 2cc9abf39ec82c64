"""Soft and hard attention over key-value pairs.

Soft attention returns the expectation of the values under the attention
distribution; hard attention returns one value, picked by argmax or sampled.
"""

import torch

from ._checks import require_same_size, require_sequences
from .masking import masked_softmax
from .scoring import scaled_dot_score

HARD_MODES = ("argmax", "sample")


def attention_weights(queries, keys, score=scaled_dot_score, mask=None) -> torch.Tensor:
    """The attention distribution: ``masked_softmax(score(queries, keys), mask)``.

    queries: (..., n_q, d_q), keys: (..., n_k, d_k); mask: boolean, True = keep,
    broadcastable to the scores (..., n_q, n_k). Returns weights (..., n_q, n_k).
    When no gradient is needed the softmax overwrites the freshly computed scores,
    so the n_q x n_k matrix exists once, not twice.
    """
    scores = score(queries, keys)
    owned = scores is not queries and scores is not keys
    inplace = owned and not (scores.requires_grad and torch.is_grad_enabled())
    return masked_softmax(scores, mask, inplace=inplace)


def _check_values(keys: torch.Tensor, values: torch.Tensor) -> None:
    require_sequences(keys=keys, values=values)
    require_same_size("number of keys and values", "keys", keys.shape[-2], "values", values.shape[-2])


def attention(queries, keys, values, score=scaled_dot_score, mask=None):
    """Soft attention: each query's output is the weighted average of the values.

    queries: (..., n_q, d_q), keys: (..., n_k, d_k), values: (..., n_k, d_v).
    score: any scoring function or module mapping (queries, keys) -> (..., n_q, n_k).
    mask: boolean, True = keep, broadcastable to (..., n_q, n_k).
    Returns (output (..., n_q, d_v), weights (..., n_q, n_k)). A query whose keys
    are all masked gets zero weights and a zero output.
    """
    _check_values(keys, values)
    weights = attention_weights(queries, keys, score, mask)
    return weights @ values, weights


def hard_attention(queries, keys, values, score=scaled_dot_score, mask=None, mode="argmax", generator=None):
    """Hard attention: each query selects exactly one value.

    mode="argmax" picks the most probable key; mode="sample" draws the key from
    the attention distribution with ``generator`` (a ``torch.Generator`` or None).
    queries: (..., n_q, d_q), keys: (..., n_k, d_k), values: (..., n_k, d_v).
    Returns (output (..., n_q, d_v), index (..., n_q) int64). The output is a
    step function of the queries: no gradient reaches the scores through it.
    """
    if mode not in HARD_MODES:
        raise ValueError(f"mode must be one of {HARD_MODES}, got {mode!r}")
    _check_values(keys, values)
    weights = attention_weights(queries, keys, score, mask)
    if (weights.sum(dim=-1) == 0).any():
        raise ValueError("hard attention needs at least one unmasked key for every query")
    if mode == "argmax":
        index = weights.argmax(dim=-1)
    else:
        flat = weights.detach().reshape(-1, weights.shape[-1]).float()
        index = torch.multinomial(flat, 1, generator=generator).reshape(weights.shape[:-1])
    # Give values and index the same batch dimensions, then pick row index[..., i] for query i.
    batch = torch.broadcast_shapes(values.shape[:-2], index.shape[:-1])
    index = index.expand(*batch, index.shape[-1])
    values = values.expand(*batch, *values.shape[-2:])
    output = torch.take_along_dim(values, index.unsqueeze(-1), dim=-2)
    return output, index
