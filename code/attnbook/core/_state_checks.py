"""Input checks shared by the fixed-state mechanisms (linear attention, the
delta rule, gated linear attention, state-space duality): clear errors before
any work, naming the argument and its shape."""

import torch

from .._checks import (
    all_finite,
    broadcast_shapes,
    require_float,
    require_int,
    require_qkv,
    require_same_dtype,
    require_same_size,
)
from .._memory import require_matrix_fits


def require_finite(**tensors: torch.Tensor) -> None:
    """``ValueError`` naming the first tensor that holds NaN or inf: a
    recurrent state would carry it to every later output."""
    for name, tensor in tensors.items():
        if not all_finite(tensor):
            raise ValueError(
                f"{name} holds NaN or inf; a fixed-size state would carry "
                "it into every later output"
            )


def check_qkv(queries, keys, values, same_length: bool = True):
    """queries (..., n_q, d_k), keys (..., n, d_k), values (..., n, d_v): one
    float dtype, one device, batch dimensions that broadcast, finite.

    same_length: n_q == n (causal and recurrent forms). Returns the batch
    shape the three broadcast to.
    """
    require_qkv(queries, keys, values)
    if same_length:
        require_same_size(
            "number of queries and keys (one query per position)",
            "queries",
            queries.shape[-2],
            "keys",
            keys.shape[-2],
        )
    batch = broadcast_shapes(
        queries.shape[:-2], keys.shape[:-2], values.shape[:-2]
    )
    n, d_k, d_v = keys.shape[-2], keys.shape[-1], values.shape[-1]
    # the largest tensor any form builds: one (n_q x n) weight matrix per
    # batch entry, or the d_v x d_k state per position of the token loop
    require_matrix_fits(
        "the weight matrix", (*batch, queries.shape[-2], n), queries.dtype
    )
    require_matrix_fits("the states", (*batch, d_v, d_k), queries.dtype)
    require_finite(queries=queries, keys=keys, values=values)
    return batch


def check_per_token(
    name: str,
    value,
    like: torch.Tensor,
    batch: torch.Size,
    low: float,
    high: float,
    include_low: bool,
    channels: int | None = None,
) -> torch.Tensor:
    """A per-token scalar (beta, a gate): shape (..., n) broadcasting to
    ``batch``, the dtype and device of ``like``, values in [low, high] (or
    (low, high]).

    channels: also accept (..., n, channels) (a gate per key channel).
    Returns ``value``.
    """
    require_float(name, value)
    require_same_dtype(keys=like, **{name: value})
    if value.device != like.device:
        raise ValueError(
            f"{name} is on {value.device} but the keys are on {like.device}"
        )
    n = like.shape[-2]
    per_channel = channels is not None and is_per_channel(value, n, channels)
    token_dims = 2 if per_channel else 1
    if value.dim() < 1 or (not per_channel and value.shape[-1] != n):
        wanted = f"(..., {n})" + (
            f" or (..., {n}, {channels})" if channels is not None else ""
        )
        raise ValueError(
            f"{name} must have shape {wanted}, one entry per token, got "
            f"{tuple(value.shape)}"
        )
    try:
        broadcast_shapes(value.shape[:-token_dims], batch)
    except RuntimeError:
        raise ValueError(
            f"batch dimensions of {name} {tuple(value.shape[:-token_dims])} "
            f"do not broadcast with the inputs' {tuple(batch)}"
        ) from None
    require_finite(**{name: value})
    above = value >= low if include_low else value > low
    if value.numel() and not bool((above & (value <= high)).all()):
        bracket = "[" if include_low else "("
        bad = value[~(above & (value <= high))].flatten()[0].item()
        raise ValueError(
            f"{name} must be in {bracket}{low:g}, {high:g}], got {bad:.4g}"
        )
    return value


def is_per_channel(gate: torch.Tensor, n: int, channels: int) -> bool:
    """A gate of shape (..., n, channels) is read as one gate per channel
    (GLA); any other shape as one per token, (..., n)."""
    return gate.dim() >= 2 and tuple(gate.shape[-2:]) == (n, channels)


def finite_output(what: str, output: torch.Tensor) -> torch.Tensor:
    """``output`` if finite; else a ``ValueError``: finite inputs overflowed
    on the way (a state or a product beyond the dtype's range)."""
    if not all_finite(output):
        raise ValueError(
            f"{what} overflowed to inf/NaN for finite inputs of dtype "
            f"{output.dtype}: scale the inputs down (e.g. normalise the keys) "
            "or compute in float64"
        )
    return output


def check_chunk_size(chunk_size, n: int) -> int | None:
    """None (no chunks) or an int >= 1; a chunk longer than the n tokens is
    cut to n (one chunk: the same result, no padding allocated)."""
    if chunk_size is None:
        return None
    return min(require_int("chunk_size", chunk_size), max(n, 1))
