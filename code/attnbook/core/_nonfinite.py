"""NaN and inf under the mask: the careful paths of attention, in one place.

Padding often holds garbage. A masked key or value, or a query that keeps no
key, must reach no output and no gradient (in a matrix product's backward
pass 0 * NaN is NaN), and scores holding inf must give the softmax's limits,
never a NaN the inputs do not explain. Every function here runs only after a
cheap test (one sum) found a non-finite number, so the common path never
pays for it; ``masked_softmax_unchecked``, the masked softmax after its
checks, makes that test for ``masked_softmax`` and ``attention``.
``attention``, ``masked_softmax``, ``chunked_attention``,
``StreamingAttention``, the decoder's cached step, ``MultiHeadAttention`` and
``MultiHeadLatentAttention`` all call these.
"""

import math

import torch

from .._checks import all_finite, compute_dtype, require_float, require_tensor
from .scoring import dot_score, scaled_dot_score

# Scores that are dot products of the queries and keys, as given.
DOT_PRODUCT_SCORES = (scaled_dot_score, dot_score)


def softmax_nonfinite(
    scores: torch.Tensor, mask: torch.Tensor | None, dim: int
) -> torch.Tensor:
    """The softmax's limits for scores holding inf (and NaN): never a NaN the
    inputs do not explain.

    -inf scores get weight 0 (a row of only -inf, or masked, entries gets
    zeros, like a fully masked row); a row holding +inf splits its weight
    equally among its +inf entries (the limit of the softmax as those scores
    grow); NaN under the mask is ignored like any masked score, while a kept
    NaN makes its row NaN (it is not hidden).
    """
    keep = ~torch.isneginf(scores)
    if mask is not None:
        keep = keep & mask
    top = torch.isposinf(scores) & keep
    has_top = top.any(dim=dim, keepdim=True)
    keep = torch.where(has_top, top, keep)
    lowest = torch.finfo(scores.dtype).min
    # Rows with +inf: their +inf entries become equal finite scores (0), the
    # rest is dropped.
    finite = torch.where(
        has_top,
        torch.zeros((), dtype=scores.dtype, device=scores.device),
        scores,
    )
    finite = finite.masked_fill(~keep, lowest)
    return torch.softmax(finite, dim=dim).masked_fill(~keep, 0.0)


def masked_softmax_unchecked(
    scores, mask, dim: int, inplace: bool, known_finite: bool = False
) -> torch.Tensor:
    """``masked_softmax`` after its checks (``attention`` calls it too):
    the plain softmax with -inf under the mask, or ``softmax_nonfinite`` when
    a score is not finite. ``known_finite``: the caller has proved every
    score finite."""
    # One cheap reduction decides whether every score is finite; only if not
    # (an inf, a NaN, maybe under the mask) does the careful path run. The fast
    # path is unchanged.
    if (
        not known_finite
        and scores.numel()
        and not torch.isfinite(scores.detach().sum())
    ):
        weights = softmax_nonfinite(scores, mask, dim)
        return scores.copy_(weights) if inplace else weights
    if mask is None:
        return (
            torch.softmax(scores, dim=dim, out=scores)
            if inplace
            else torch.softmax(scores, dim=dim)
        )
    dropped = ~mask
    # -inf: exp() of it is exactly 0, and no kept score, however negative,
    # can equal it. A fully masked slice comes out NaN (-inf - -inf) and is
    # then zeroed with every other masked entry.
    lowest = float("-inf")
    if inplace:
        torch.softmax(
            scores.masked_fill_(dropped, lowest), dim=dim, out=scores
        )
        return scores.masked_fill_(dropped, 0.0)
    weights = torch.softmax(scores.masked_fill(dropped, lowest), dim=dim)
    # Zeroing masked entries makes them exactly 0 everywhere, and a fully
    # masked slice all zeros.
    return weights.masked_fill(dropped, 0.0)


def positions_in_use(mask: torch.Tensor) -> tuple:
    """Which queries keep some key, and which keys some query keeps.

    mask: boolean, True = keep: (n_q, n_k), (h, n_q, n_k) or
    (B, h, n_q, n_k) (any axis may be 1, as broadcasting allows).
    Returns (queries_used (n_q,) or (B, n_q), keys_used (n_k,) or (B, n_k)):
    a position is used if it is used in some head.
    """
    require_tensor("mask", mask)
    if mask.dtype != torch.bool:
        raise TypeError(f"mask must be a bool tensor, got {mask.dtype}")
    heads = 1 if mask.dim() == 4 else 0  # the heads' axis of a 3-D/4-D mask
    keys_used = mask.any(-2) if mask.dim() >= 2 else mask
    queries_used = mask.any(-1)
    if mask.dim() >= 3:
        keys_used, queries_used = keys_used.any(heads), queries_used.any(heads)
    return queries_used, keys_used


def zero_unused(x: torch.Tensor, used: torch.Tensor) -> torch.Tensor:
    """x (..., n, E) with the rows where ``used`` (..., n) is False set to 0,
    if x holds NaN or inf; x itself otherwise.

    A token no output reads must reach no gradient either: a projection's
    backward pass multiplies its garbage by a zero gradient, and 0 * NaN is
    NaN in the weights' gradient. Zeroing it first keeps them finite.
    """
    require_float("x", x)
    require_tensor("used", used)
    if all_finite(x):
        return x
    return torch.where(used.unsqueeze(-1), x, torch.zeros((), dtype=x.dtype))


def drop_masked_garbage(keys: torch.Tensor, mask) -> torch.Tensor:
    """``keys`` with the rows no query keeps set to 0 when they hold NaN or
    inf.

    Padding often holds garbage; a masked key must not reach any output or
    gradient (0 * NaN is NaN in a matrix product's backward pass). Finite keys
    are returned as they are.
    """
    if mask is None or not keys.is_floating_point() or all_finite(keys):
        return keys
    # (..., n_k or 1): kept by some query
    kept = mask.any(dim=-2) if mask.dim() >= 2 else mask
    zero = torch.zeros((), dtype=keys.dtype, device=keys.device)
    return torch.where(kept.unsqueeze(-1), keys, zero)


def drop_unmatched_garbage(queries: torch.Tensor, mask) -> torch.Tensor:
    """``queries`` with the rows that keep no key set to 0 when they hold NaN
    or inf: such a query gets zero weights and a zero output, and its garbage
    must not reach the keys' gradient either (0 * NaN is NaN)."""
    if mask is None or all_finite(queries):
        return queries
    keeps_some = mask.any(dim=-1, keepdim=True)  # (..., n_q or 1, 1)
    zero = torch.zeros((), dtype=queries.dtype, device=queries.device)
    return torch.where(keeps_some, queries, zero)


def weighted_values(
    weights: torch.Tensor, values: torch.Tensor, masked: bool
) -> torch.Tensor:
    """``weights @ values``, except that a non-finite value under weight
    exactly 0 adds nothing.

    Only when a mask was given and some value is NaN or inf (rare: garbage in
    padding) does anything more than the matrix product run: the non-finite
    entries are taken out of the product and added back, block by block of
    keys, only where their weight is nonzero.
    """
    if not masked or all_finite(values):
        return weights @ values
    bad = ~torch.isfinite(values)
    zero = torch.zeros((), dtype=values.dtype, device=values.device)
    output = weights @ values.masked_fill(bad, 0.0)
    garbage = torch.where(bad, values, zero)
    bad_rows = bad.any(dim=-1).reshape(-1, values.shape[-2]).any(dim=0)
    for block in bad_rows.nonzero().flatten().split(64):
        w = weights[..., block].unsqueeze(-1)  # (..., n_q, m, 1)
        v = garbage[..., block, :].unsqueeze(-3)  # (..., 1, m, d_v)
        output = output + (w * torch.where(w != 0, v, zero)).sum(dim=-2)
    return output


def scores_with_partly_masked_garbage(
    queries, keys, score, mask
) -> torch.Tensor:
    """Dot-product scores when some key holding NaN/inf is kept by some
    queries and masked for others.

    The matrix product runs on keys with those entries set to 0 (so its
    backward pass never multiplies a zero gradient by NaN); the columns of
    those keys are then recomputed elementwise, with the key taken as 0
    wherever the mask drops it: a query that keeps the key gets its true
    (non-finite) score, one that masks it gets no NaN, in the output or the
    gradient.
    """
    work = compute_dtype(queries.dtype)
    q, k = queries.to(work), keys.to(work)
    bad = ~torch.isfinite(k)
    scores = score(q, k.masked_fill(bad, 0.0))
    scale = 1.0 / math.sqrt(q.shape[-1]) if score is scaled_dot_score else 1.0
    bad_keys = bad.any(dim=-1).reshape(-1, k.shape[-2]).any(dim=0)
    columns = bad_keys.nonzero().flatten()
    kept = mask.expand(scores.shape)[..., columns]  # (..., n_q, m)
    zero = torch.zeros((), dtype=work, device=k.device)
    # (..., n_q, m, d): each query's copy of the keys, 0 where it drops them
    garbage_keys = torch.where(
        kept.unsqueeze(-1), k[..., columns, :].unsqueeze(-3), zero
    )
    exact = (q.unsqueeze(-2) * garbage_keys).sum(dim=-1) * scale
    return scores.index_copy(-1, columns, exact)


def scores_surely_finite(
    queries: torch.Tensor, keys: torch.Tensor, score, work: torch.dtype
) -> bool:
    """True if dot-product scores of these inputs cannot be NaN or overflow
    in ``work``.

    |q . k| <= max|q| * max|k| * d: a check over the n (not n_q x n_k) inputs
    that spares masked_softmax its pass over the whole score matrix. NaN in
    the inputs makes it False.
    """
    if (
        score not in DOT_PRODUCT_SCORES
        or queries.numel() == 0
        or keys.numel() == 0
    ):
        return False
    q, k = queries.detach(), keys.detach()
    # amax and amin are vectorised reductions that allocate nothing (abs()
    # would copy the inputs).
    largest_q = max(float(q.amax()), -float(q.amin()))
    largest_k = max(float(k.amax()), -float(k.amin()))
    bound = largest_q * largest_k * queries.shape[-1]
    return bound < torch.finfo(work).max / 4  # False for NaN


def drop_unused_garbage(query, key, value, mask):
    """The inputs with NaN/inf tokens that the mask never uses set to 0
    (``zero_unused``): a key or value token no query keeps, and a query token
    that keeps no key, reach no output, and their garbage (padding) must
    reach no gradient either."""
    queries_used, keys_used = positions_in_use(mask)
    return (
        zero_unused(query, queries_used),
        zero_unused(key, keys_used),
        zero_unused(value, keys_used),
    )


def drop_unused_latent_garbage(x, cache, mask, m: int) -> tuple:
    """x (B, n, E) and the cache of m positions with the tokens no query
    uses set to 0 where they hold NaN/inf: x's token i is read as query i
    and as key m + i; a cached position only as a key."""
    queries_used, keys_used = positions_in_use(mask)
    x = zero_unused(x, queries_used | keys_used[..., m:])
    if cache is not None:
        cached = keys_used[..., :m]
        cache = (zero_unused(cache[0], cached), zero_unused(cache[1], cached))
    return x, cache
