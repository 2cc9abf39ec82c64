"""Soft and hard attention over key-value pairs.

Soft attention returns the expectation of the values under the attention
distribution; hard attention returns one value, picked by argmax or sampled.

``attention`` reads as the idea: score, masked softmax, weighted average. Its
one branch sends the rare cases to ``_careful_attention``, which computes the
same numbers with more care (and shares the handling of NaN or inf under the
mask with every attention function of the package, ``core/_nonfinite.py``):

- half precision: float16/bfloat16 inputs are scored and normalised in
  float32, as PyTorch does;
- memory: when no gradient is needed the softmax overwrites the scores this
  call computed (never a tensor a custom ``score`` returns as is), so the
  n_q x n_k matrix exists once, not twice;
- garbage under the mask: a masked key or value that holds NaN or inf never
  reaches an output or a gradient.

Before either path, a score matrix larger than
``attnbook.set_matrix_memory_limit`` is refused before it is allocated.
"""

import math

import torch

from .._checks import (
    HALF_DTYPES,
    all_finite,
    broadcast_shapes,
    compute_dtype,
    require_bool_mask,
    require_float,
    require_same_dtype,
    require_same_size,
    require_sequences,
    require_tensor,
)
from .._memory import require_matrix_fits
from .._random import require_generator
from ._nonfinite import (
    DOT_PRODUCT_SCORES,
    drop_masked_garbage,
    drop_unmatched_garbage,
    masked_softmax_unchecked,
    scores_surely_finite,
    scores_with_partly_masked_garbage,
    weighted_values,
)
from .masking import masked_softmax
from .sampling import draw_categorical
from .scoring import AdditiveScore, BilinearScore, scaled_dot_score

HARD_MODES = ("argmax", "sample")


def attention(queries, keys, values, score=scaled_dot_score, mask=None):
    """Soft attention: every output is a weighted average of the values.

    queries (..., n_q, d_q), keys (..., n_k, d_k), values (..., n_k, d_v), one
    float dtype; score maps (queries, keys) to scores (..., n_q, n_k); mask:
    boolean, True = keep, broadcastable to the scores. Returns (output
    (..., n_q, d_v), weights (..., n_q, n_k)); a query whose keys are all
    masked gets zero weights and a zero output.
    """
    _check_inputs(queries, keys, values, mask, score)
    if _needs_care(queries, keys, values, mask):
        return _careful_attention(queries, keys, values, score, mask)
    scores = _checked_scores(score(queries, keys), queries, keys)
    weights = masked_softmax(scores, mask)  # step 1: (..., n_q, n_k)
    return weights @ values, weights  # step 2: output (..., n_q, d_v)


def attention_weights(
    queries, keys, score=scaled_dot_score, mask=None
) -> torch.Tensor:
    """The attention distribution: masked_softmax(score(queries, keys), mask).

    queries (..., n_q, d_q), keys (..., n_k, d_k); mask: boolean, True =
    keep, broadcastable to the scores (..., n_q, n_k). Returns the weights
    (..., n_q, n_k) in the dtype of the queries.
    """
    _check_inputs(queries, keys, _NO_VALUES, mask, score)
    return _attention_weights(queries, keys, score, mask).to(queries.dtype)


def hard_attention(
    queries,
    keys,
    values,
    score=scaled_dot_score,
    mask=None,
    mode="argmax",
    generator=None,
):
    """Hard attention: each query selects exactly one value.

    mode="argmax" picks the most probable key; mode="sample" draws the key from
    the attention distribution with ``generator`` (a ``torch.Generator``;
    None draws from torch's global generator, as torch does).
    queries: (..., n_q, d_q), keys: (..., n_k, d_k), values: (..., n_k, d_v).
    Returns (output (..., n_q, d_v), index (..., n_q) int64). The output is a
    step function of the queries: no gradient reaches the scores through it.
    """
    if mode not in HARD_MODES:
        raise ValueError(f"mode must be one of {HARD_MODES}, got {mode!r}")
    require_generator("generator", generator, allow_none=True)
    _check_inputs(queries, keys, values, mask, score)
    weights = _attention_weights(queries, keys, score, mask)
    if torch.isnan(weights).any():
        raise ValueError(
            "the attention weights contain NaN (NaN in the scores of a kept "
            "key): no key can be picked"
        )
    if (weights.sum(dim=-1) == 0).any():
        raise ValueError(
            "hard attention needs at least one unmasked key for every query"
        )
    if mode == "argmax":
        index = weights.argmax(dim=-1)
    else:
        flat = weights.detach().reshape(-1, weights.shape[-1]).float()
        index = draw_categorical(flat, generator).reshape(weights.shape[:-1])
    # Give values and index the same batch dimensions, then pick row
    # index[..., i] for query i.
    batch = broadcast_shapes(values.shape[:-2], index.shape[:-1])
    index = index.expand(*batch, index.shape[-1])
    values = values.expand(*batch, *values.shape[-2:])
    output = torch.take_along_dim(values, index.unsqueeze(-1), dim=-2)
    return output, index


# ---------------------------------------------------------------------------
# The two steps, and what they do in the rare cases.
# ---------------------------------------------------------------------------


_NO_VALUES = object()  # attention_weights: no values to check


def _check_inputs(queries, keys, values, mask, score) -> None:
    """Clear errors for bad inputs, before any large tensor is allocated.

    values=_NO_VALUES checks queries and keys only (``attention_weights``).
    """
    if not callable(score):
        raise TypeError(
            "score must be a function (queries, keys) -> scores, e.g. "
            f"attnbook.scaled_dot_score, got {type(score).__name__}"
        )
    if values is _NO_VALUES:
        require_sequences(queries=queries, keys=keys)
        require_same_dtype(queries=queries, keys=keys)
    else:
        require_sequences(keys=keys, values=values)
        require_same_size(
            "number of keys and values",
            "keys",
            keys.shape[-2],
            "values",
            values.shape[-2],
        )
        require_sequences(queries=queries, keys=keys, values=values)
        require_same_dtype(queries=queries, keys=keys, values=values)
    batch = broadcast_shapes(queries.shape[:-2], keys.shape[:-2])
    shape = (*batch, queries.shape[-2], keys.shape[-2])
    work = compute_dtype(queries.dtype)
    require_matrix_fits("the score matrix", shape, work)
    if mask is not None:
        require_bool_mask(mask, torch.Size(shape), device=queries.device)


def _needs_care(queries, keys, values, mask) -> bool:
    """True for the cases ``attention``'s plain path does not cover: half
    precision, an input holding NaN or inf under a mask, or a call that no
    gradient flows through whose scores are large enough (``REUSE_SCORES``
    bytes) to be worth overwriting with the weights. A decoding step (one
    query, a few hundred keys) takes the plain path."""
    if queries.dtype in HALF_DTYPES:
        return True
    if mask is not None and not all(
        all_finite(x) for x in (queries, keys, values)
    ):
        return True
    if torch.is_grad_enabled() and any(
        x.requires_grad for x in (queries, keys, values)
    ):
        return False
    batch = broadcast_shapes(queries.shape[:-2], keys.shape[:-2])
    numbers = math.prod(batch) * queries.shape[-2] * keys.shape[-2]
    return numbers * queries.dtype.itemsize >= REUSE_SCORES


REUSE_SCORES = 2**20  # bytes: smaller score matrices are not overwritten


def _checked_scores(scores, queries, keys) -> torch.Tensor:
    """The output of a ``score`` function, checked (``_require_scores``) and
    returned in the dtype of the queries."""
    _require_scores(scores, queries, keys)
    return scores.to(queries.dtype)


def _require_scores(scores, queries, keys) -> None:
    """A clear error unless ``scores`` is a float tensor (..., n_q, n_k)."""
    require_tensor("the output of score", scores)
    require_float("the output of score", scores)
    n_q, n_k = queries.shape[-2], keys.shape[-2]
    if scores.dim() < 2 or scores.shape[-2:] != (n_q, n_k):
        raise ValueError(
            f"score returned shape {tuple(scores.shape)}, but "
            f"{n_q} queries and {n_k} keys need scores (..., {n_q}, {n_k})"
        )


def _careful_attention(queries, keys, values, score, mask) -> tuple:
    """``attention`` for the rare cases (``_needs_care``): the same two steps,
    in float32 for half inputs, with NaN or inf under the mask kept out and
    the weights written over the scores when no gradient needs them."""
    weights = _attention_weights(queries, keys, score, mask)
    output = _weighted_average(weights, values, mask)
    return output.to(values.dtype), weights.to(values.dtype)


def _attention_weights(queries, keys, score, mask) -> torch.Tensor:
    """Step 1, ``masked_softmax(score(queries, keys), mask)``, in the compute
    dtype (float32 for half inputs); the inputs are already checked."""
    scores, owned, finite = _scores(queries, keys, score, mask)
    # Write the weights over the scores if this call allocated them and no
    # gradient needs them: the n_q x n_k matrix then exists once.
    inplace = owned and not (scores.requires_grad and torch.is_grad_enabled())
    return masked_softmax_unchecked(
        scores, mask, -1, inplace, known_finite=finite
    )


def _weighted_average(weights, values, mask) -> torch.Tensor:
    """Step 2, ``weights @ values`` in the dtype of the weights; a NaN or inf
    value under a weight of exactly 0 adds nothing (``weighted_values``)."""
    values = values.to(weights.dtype)
    return weighted_values(weights, values, mask is not None)


# Scoring functions that always return a tensor they have just allocated: only
# their output may be overwritten by the softmax. A user's callable may return
# a tensor the caller owns (a precomputed matrix, a parameter, a view of the
# queries): never touched.
_FRESH_SCORE_FUNCTIONS = DOT_PRODUCT_SCORES
_FRESH_SCORE_MODULES = (AdditiveScore, BilinearScore)


def _scores(queries, keys, score, mask):
    """(scores, owned, finite): ``score(queries, keys)`` in the compute dtype.

    owned: this call allocated the scores, so the softmax may overwrite them;
    finite: they are proved finite without a pass over the n_q x n_k matrix.
    Keys holding NaN or inf under the mask are kept out (see the helpers).
    """
    keys = drop_masked_garbage(keys, mask)
    queries = drop_unmatched_garbage(queries, mask)
    if (
        mask is not None
        and score in _FRESH_SCORE_FUNCTIONS
        and not all_finite(keys)
    ):
        scores = scores_with_partly_masked_garbage(queries, keys, score, mask)
        owned = True
    else:
        scores, owned = _compute_scores(queries, keys, score)
    finite = scores_surely_finite(queries, keys, score, scores.dtype)
    return scores, owned, finite


def _compute_scores(queries, keys, score):
    """(scores, owned): the scores in the compute dtype (float32 for half
    inputs), and whether this call allocated them (so the softmax may
    overwrite them in place)."""
    work = compute_dtype(queries.dtype)
    if score in _FRESH_SCORE_FUNCTIONS:
        # float16/bfloat16: q k^T would overflow past 65,504 (or lose digits)
        if work != queries.dtype:
            queries, keys = queries.to(work), keys.to(work)
        return score(queries, keys), True
    scores = score(queries, keys)
    _require_scores(scores, queries, keys)
    if scores.dtype in HALF_DTYPES:
        return scores.to(torch.float32), True
    fresh = type(score) in _FRESH_SCORE_MODULES
    return scores, fresh and scores is not queries and scores is not keys
