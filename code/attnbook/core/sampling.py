"""Decoding: turning a language model's logits into the next token.

    greedy         temperature = 0: the most likely token (argmax)
    temperature    softmax(logits / T): T < 1 sharpens, T > 1 flattens
    top-k          keep the k most likely tokens, renormalise
    top-p          (nucleus) keep the smallest set of most likely tokens
                   whose mass reaches p, renormalise

``next_token_distribution`` returns the distribution a step samples from
(what a chapter plots); ``sample_next_token`` draws from it with a
``torch.Generator``, never torch's global random state.
"""

import math

import torch

from .._checks import all_finite, is_finite_number, require_float
from .._random import require_generator


def check_sampling(temperature, top_k, top_p) -> None:
    """``ValueError``/``TypeError`` naming the argument and its value unless
    temperature is a finite number >= 0, top_k None or an int >= 1, top_p
    None or a number in (0, 1]."""
    if isinstance(temperature, bool) or not isinstance(
        temperature, (int, float)
    ):
        raise TypeError(f"temperature must be a number, got {temperature!r}")
    if not is_finite_number(temperature) or temperature < 0:
        raise ValueError(
            f"temperature must be a finite number >= 0, got {temperature!r}"
        )
    if top_k is not None:
        if isinstance(top_k, bool) or not isinstance(top_k, int):
            raise TypeError(f"top_k must be None or an int, got {top_k!r}")
        if top_k < 1:
            raise ValueError(f"top_k must be >= 1, got {top_k!r}")
    if top_p is not None:
        if isinstance(top_p, bool) or not isinstance(top_p, (int, float)):
            raise TypeError(f"top_p must be None or a number, got {top_p!r}")
        if not is_finite_number(top_p) or not 0 < top_p <= 1:
            raise ValueError(f"top_p must be in (0, 1], got {top_p!r}")


def _required(name: str, value):
    if value is None:
        raise TypeError(f"{name} must be given (not None) to the filter")
    return value


def _check_logits(logits, dims: int | None = None) -> None:
    """Float logits (..., V) with V >= 1 (shape (B, V) if dims == 2)."""
    require_float("logits", logits)
    if (
        logits.dim() < 1
        or logits.shape[-1] == 0
        or dims
        not in (
            None,
            logits.dim(),
        )
    ):
        wanted = "(B, V)" if dims == 2 else "(..., V)"
        raise ValueError(
            f"logits must have shape {wanted} with V >= 1, got "
            f"{tuple(logits.shape)}"
        )


def top_k_filter(logits: torch.Tensor, k: int) -> torch.Tensor:
    """logits (..., V) with all but the k largest of each row set to -inf
    (k >= V keeps every token). Ties at the k-th value are all kept."""
    _check_logits(logits)
    check_sampling(1.0, _required("top_k", k), None)
    k = min(k, logits.shape[-1])
    kth = logits.topk(k, dim=-1).values[..., -1:]  # (..., 1)
    return logits.masked_fill(logits < kth, -math.inf)


def top_p_filter(logits: torch.Tensor, p: float) -> torch.Tensor:
    """logits (..., V) with every token outside the nucleus set to -inf: the
    smallest set of most likely tokens whose probability reaches p."""
    _check_logits(logits)
    check_sampling(1.0, None, _required("top_p", p))
    probs, order = logits.softmax(dim=-1).sort(dim=-1, descending=True)
    mass_before = probs.cumsum(dim=-1) - probs  # mass of the tokens ahead
    drop_sorted = mass_before >= p  # the set already reached p without it
    drop_sorted[..., 0] = False  # the most likely token stays (p may round
    # to 0 in the logits' dtype)
    drop = drop_sorted.scatter(-1, order, drop_sorted)  # back to token order
    return logits.masked_fill(drop, -math.inf)


def next_token_distribution(
    logits: torch.Tensor, temperature=1.0, top_k=None, top_p=None
) -> torch.Tensor:
    """The distribution (..., V) that one decoding step samples from.

    logits: (..., V). Temperature first, then top-k, then top-p (the order of
    Hugging Face's and nanoGPT's samplers). temperature = 0 is greedy: all
    mass on the argmax (the first one on a tie).
    """
    _check_logits(logits)
    check_sampling(temperature, top_k, top_p)
    _require_a_possible_token(logits)
    if temperature == 0:
        best = logits.argmax(dim=-1, keepdim=True)
        return torch.zeros_like(logits).scatter(-1, best, 1.0)
    logits = logits / temperature
    if torch.isnan(logits).any() or torch.isposinf(logits).any():
        raise ValueError(
            f"logits / temperature holds NaN or +inf (temperature="
            f"{temperature:g} too small for these logits, or NaN logits)"
        )
    if top_k is not None:
        logits = top_k_filter(logits, top_k)
    if top_p is not None:
        logits = top_p_filter(logits, top_p)
    return logits.softmax(dim=-1)


def sample_next_token(
    logits: torch.Tensor,
    temperature=1.0,
    top_k=None,
    top_p=None,
    generator=None,
) -> torch.Tensor:
    """One token per row of logits (B, V): ids (B,) int64.

    Greedy (argmax) when temperature = 0, which draws nothing; otherwise one
    draw per row from ``next_token_distribution`` with ``generator`` (a
    ``torch.Generator``, required: sampling never touches torch's global
    random state).
    """
    _check_logits(logits, dims=2)
    check_sampling(temperature, top_k, top_p)
    _require_a_possible_token(logits)
    if temperature == 0:
        return logits.argmax(dim=-1)
    require_generator("generator", generator)
    probs = next_token_distribution(logits, temperature, top_k, top_p)
    return draw_categorical(probs, generator)


# torch.multinomial refuses more categories than this.
MULTINOMIAL_LIMIT = 2**24


def draw_categorical(probs: torch.Tensor, generator=None) -> torch.Tensor:
    """One index per row of ``probs`` (B, V), drawn with probability
    proportional to the row: ids (B,) int64.

    ``torch.multinomial`` up to its limit of 2**24 categories; beyond it, the
    inverse of the cumulative distribution at one uniform draw per row.
    generator: a ``torch.Generator``, or None for torch's global one.
    """
    require_float("probs", probs)
    require_generator("generator", generator, allow_none=True)
    if probs.dim() != 2 or probs.shape[-1] == 0:
        raise ValueError(
            f"probs must have shape (B, V) with V >= 1, got "
            f"{tuple(probs.shape)}"
        )
    if not all_finite(probs) or (probs < 0).any():
        raise ValueError("probs must be finite and non-negative")
    if (probs.sum(dim=-1) <= 0).any():
        raise ValueError("every row of probs needs a positive entry")
    if probs.shape[-1] <= MULTINOMIAL_LIMIT:
        return torch.multinomial(probs, 1, generator=generator).squeeze(-1)
    cumulative = probs.double().cumsum(dim=-1)
    uniform = torch.rand(
        probs.shape[0], 1, generator=generator, dtype=torch.float64
    )
    index = torch.searchsorted(cumulative, uniform * cumulative[:, -1:])
    return index.squeeze(-1).clamp_(max=probs.shape[-1] - 1)


def _require_a_possible_token(logits: torch.Tensor) -> None:
    """Every row of logits (..., V) gives some token a finite chance."""
    impossible = torch.isneginf(logits).all(dim=-1)
    if impossible.any():
        row = tuple(impossible.nonzero()[0].tolist())
        raise ValueError(
            f"logits row {row} is -inf for every token: no token can be "
            f"drawn (was every token banned?)"
        )
