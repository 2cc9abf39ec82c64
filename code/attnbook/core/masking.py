"""Softmax with a mask, and the masks themselves: from sequence lengths,
causal, and causal within a sliding window.

Every attention function in the book turns scores into weights here, so the
rules live in one place: a boolean mask with ``True = keep``; masked entries
get exactly zero weight; a row with nothing left to keep gets all zeros (not
NaN, not a uniform row); no magic constant like ``-2**32 + 1`` that overflows
in half precision.
"""

import torch

from .._checks import (
    require_bool_mask,
    require_flag,
    require_float,
    require_int,
    require_tensor,
)
from .._memory import require_matrix_fits
from ._nonfinite import masked_softmax_unchecked


def masked_softmax(
    scores: torch.Tensor,
    mask: torch.Tensor | None = None,
    dim: int = -1,
    *,
    inplace: bool = False,
) -> torch.Tensor:
    """Softmax of ``scores`` along ``dim``, ignoring the entries where ``mask``
    is False.

    scores: (..., n) floating point, any dtype (float16 and bfloat16 included).
    mask:   boolean, broadcastable to ``scores``; True = keep, False = ignore.
    Returns weights of the shape and dtype of ``scores``. Along ``dim`` each
    slice sums to 1 over its kept entries, or is all zeros if every entry is
    masked. inplace=True overwrites ``scores`` with the weights (no second n_q
    x n_k buffer); only for scores that no gradient has to flow through.
    """
    require_float("scores", scores)
    require_flag("inplace", inplace)
    if inplace and scores.requires_grad and torch.is_grad_enabled():
        raise ValueError(
            "inplace=True needs scores that do not require grad (or "
            "torch.no_grad())"
        )
    if inplace:
        _require_own_memory(scores)
    _check_dim(dim, scores)
    if mask is not None:
        require_bool_mask(mask, scores.shape, device=scores.device)
    return masked_softmax_unchecked(scores, mask, dim, inplace)


def _require_own_memory(scores: torch.Tensor) -> None:
    """inplace=True writes every entry of ``scores``: refuse a view in which
    two entries share one memory location (a stride-0 ``expand``), before
    anything is written."""
    span = 1 + sum(
        (size - 1) * abs(stride)
        for size, stride in zip(scores.shape, scores.stride())
        if size > 1
    )
    if scores.numel() > 1 and span < scores.numel():
        raise ValueError(
            f"inplace=True needs scores that own their memory; scores of "
            f"shape {tuple(scores.shape)} with strides {scores.stride()} "
            f"share memory between entries (an expanded view?): pass "
            f"scores.clone() or use inplace=False"
        )


def _check_dim(dim, scores) -> None:
    """``dim`` an int naming a dimension of ``scores``."""
    if not isinstance(dim, int) or isinstance(dim, bool):
        raise TypeError(f"dim must be an int, got {type(dim).__name__}")
    if not -max(scores.dim(), 1) <= dim < max(scores.dim(), 1):
        raise ValueError(
            f"dim={dim} is out of range for scores of shape "
            f"{tuple(scores.shape)}"
        )


def lengths_to_mask(valid_lens, n: int) -> torch.Tensor:
    """Boolean mask that keeps the first ``valid_lens[...]`` of ``n``
    positions.

    valid_lens: (...) integer lengths, each in [0, n] (a tensor or a list).
    Returns mask: (..., n) with ``mask[..., j] = j < valid_lens[...]``.
    """
    require_int("n", n, minimum=0)
    if not isinstance(valid_lens, torch.Tensor):
        try:
            valid_lens = torch.as_tensor(valid_lens)
        except (TypeError, ValueError, RuntimeError):
            raise TypeError(
                "valid_lens must be a tensor or a list of integer lengths, "
                f"got {type(valid_lens).__name__}"
            ) from None
    require_tensor("valid_lens", valid_lens)
    if (
        valid_lens.is_floating_point()
        or valid_lens.is_complex()
        or valid_lens.dtype == torch.bool
    ):
        raise TypeError(
            f"valid_lens must hold integers, got dtype {valid_lens.dtype}"
        )
    require_matrix_fits(
        "the mask",
        (*valid_lens.shape, n),
        torch.bool,
        hint="use a smaller n, or",
    )
    # amin/amax: two passes that allocate nothing (a comparison would build
    # one boolean per length before the mask itself)
    if valid_lens.numel() and (valid_lens.amin() < 0 or valid_lens.amax() > n):
        bad = (valid_lens < 0) | (valid_lens > n)
        first = valid_lens[bad].flatten()[0].item()
        raise ValueError(
            f"valid_lens: valid length {first} is outside [0, {n}]"
        )
    positions = torch.arange(n, device=valid_lens.device)
    return positions < valid_lens.unsqueeze(-1)


def causal_mask(n_q: int, n_k: int | None = None, *, device=None):
    """The causal mask (n_q, n_k), True = keep; n_k = n_q if not given.

    The queries are the last n_q of n_k positions (bottom-right aligned):
    query i sits at position n_k - n_q + i and keeps keys 0 .. n_k - n_q + i,
    so the last query sees every key. causal_mask(n) is the lower triangle.
    """
    n_k, device = _check_causal(n_q, n_k, device)
    keep = torch.ones(n_q, n_k, dtype=torch.bool, device=device)
    return keep.tril(diagonal=n_k - n_q)


def sliding_window_mask(
    n_q: int, n_k: int | None = None, window: int | None = None, *, device=None
):
    """The causal mask within a window (n_q, n_k), True = keep (Longformer's
    and Mistral's sliding window).

    Bottom-right aligned like ``causal_mask``: query i sits at position
    p = n_k - n_q + i and keeps the keys p - window + 1 .. p (its own
    position and the window - 1 before it). window: an int >= 1, or None for
    no limit (then it is ``causal_mask(n_q, n_k)``); n_k = n_q if not given.
    """
    n_k, device = _check_causal(n_q, n_k, device, window)
    causal = causal_mask(n_q, n_k, device=device)
    if window is None:
        return causal
    return causal.triu(diagonal=n_k - n_q - window + 1)  # drop the far past


def _check_causal(n_q, n_k, device, window=None) -> tuple:
    """n_q >= 0, n_k >= n_q (a query before every key would keep none), a
    window of None or >= 1, a device torch knows; returns (n_k, device)."""
    require_int("n_q", n_q, minimum=0)
    n_k = n_q if n_k is None else require_int("n_k", n_k, minimum=0)
    if n_k < n_q:
        raise ValueError(
            f"n_k = {n_k} must be at least n_q = {n_q}: the queries are the "
            "last n_q of the n_k positions"
        )
    if window is not None:
        require_int("window", window, minimum=1)
    require_matrix_fits(
        "the mask",
        (n_q, n_k),
        torch.bool,
        hint="use a smaller n_q or n_k, or",
    )
    if device is None:
        return n_k, None
    try:
        return n_k, torch.device(device)
    except (RuntimeError, TypeError, ValueError) as error:
        raise ValueError(
            "device must be None, a torch.device or a name such as 'cpu', "
            f"got {device!r:.40} ({str(error).splitlines()[0]:.80})"
        ) from None
