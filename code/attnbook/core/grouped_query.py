"""Grouped-query attention: several query heads share one key-value head.

Multi-query attention (Shazeer 2019, arXiv 1911.02150) keeps one key head and
one value head for all h query heads; grouped-query attention (Ainslie et al.
2023, arXiv 2305.13245) keeps g of them, each shared by a group of h/g
consecutive query heads (g = h is multi-head attention, g = 1 multi-query).
A key-value cache then holds g heads instead of h: h/g times fewer bytes.

No key or value is copied: the h/g query heads of a group are stacked as more
query rows, (B, g, h/g * n_q, d), against the group's one key head (B, g, n_k,
d). (Broadcasting keys of shape (B, g, 1, n_k, d) against queries (B, g, h/g,
n_q, d) reads the same, but torch.matmul then copies the keys h/g times when
B * g > 1.)
"""

import torch

from .._checks import (
    broadcast_shapes,
    compute_dtype,
    require_bool_mask,
    require_float,
    require_same_device,
    require_same_dtype,
    require_same_size,
)
from .._memory import require_matrix_fits
from .attention import attention


def grouped_query_attention(queries, keys, values, mask=None):
    """Scaled dot-product attention with h query heads and g key-value heads.

    queries: (B, h, n_q, d); keys: (B, g, n_k, d); values: (B, g, n_k, d_v);
    h divisible by g; query head i uses key-value head i // (h / g), as
    ``F.scaled_dot_product_attention(..., enable_gqa=True)`` does. Any batch
    dimensions (...) in place of B broadcast. mask: boolean, True = keep,
    broadcastable to (B, h, n_q, n_k). Returns (output (B, h, n_q, d_v),
    weights (B, h, n_q, n_k)), as ``attention`` does.
    """
    h, g, n_q = _check_grouped(queries, keys, values, mask)
    group = (g, h // g)  # h/g query heads in each of the g groups
    rows = queries.unflatten(-3, group).flatten(-3, -2)  # (B, g, h/g*n_q, d)
    mask = _stacked_rows(mask, group, n_q)
    output, weights = attention(rows, keys, values, mask=mask)
    return _heads(output, group, n_q), _heads(weights, group, n_q)


def _heads(x: torch.Tensor, group: tuple, n_q: int) -> torch.Tensor:
    """(..., g, h/g * n_q, m) -> (..., h, n_q, m): the query rows back in
    their heads."""
    return x.unflatten(-2, (group[1], n_q)).flatten(-4, -3)


def _stacked_rows(mask, group: tuple, n_q: int):
    """A mask broadcastable to (..., h, n_q, n_k) made broadcastable to the
    stacked rows (..., g, h/g * n_q, n_k)."""
    if mask is None:
        return None
    mask = mask.reshape((1,) * max(3 - mask.dim(), 0) + tuple(mask.shape))
    heads, rows, n_k = mask.shape[-3:]
    if heads == 1 and rows == 1:  # e.g. key padding: the same for every row
        return mask
    full = mask.expand(*mask.shape[:-3], group[0] * group[1], n_q, n_k)
    return full.unflatten(-3, group).flatten(-3, -2)


def _check_grouped(queries, keys, values, mask) -> tuple:
    """Clear errors for bad inputs, before anything is allocated; returns
    (h, g, n_q)."""
    shapes = {"queries": "(B, h, n_q, d)", "keys": "(B, g, n_k, d)"}
    for name, tensor in (
        ("queries", queries),
        ("keys", keys),
        ("values", values),
    ):
        require_float(name, tensor)
        if tensor.dim() < 3:
            raise ValueError(
                f"{name} need shape {shapes.get(name, '(B, g, n_k, d_v)')}, "
                f"got {tuple(tensor.shape)}"
            )
    require_same_device(queries=queries, keys=keys, values=values)
    require_same_dtype(queries=queries, keys=keys, values=values)
    (h, n_q, d), (g, n_k) = queries.shape[-3:], keys.shape[-3:-1]
    require_same_size("key-value heads", "keys", g, "values", values.shape[-3])
    require_same_size(
        "number of keys and values", "keys", n_k, "values", values.shape[-2]
    )
    require_same_size("feature sizes", "queries", d, "keys", keys.shape[-1])
    if g == 0 or h % g:
        raise ValueError(
            f"queries have h = {h} heads and keys g = {g}: h must be a "
            "multiple of g (each key-value head serves h / g query heads)"
        )
    try:
        batch = broadcast_shapes(
            queries.shape[:-3], keys.shape[:-3], values.shape[:-3]
        )
    except RuntimeError:
        raise ValueError(
            "batch dimensions do not broadcast: queries "
            f"{tuple(queries.shape[:-3])}, keys {tuple(keys.shape[:-3])}, "
            f"values {tuple(values.shape[:-3])}"
        ) from None
    shape = torch.Size((*batch, h, n_q, n_k))
    require_matrix_fits(
        "the score matrix", shape, compute_dtype(queries.dtype)
    )
    if mask is not None:
        require_bool_mask(mask, shape, device=queries.device)
    return h, g, n_q
