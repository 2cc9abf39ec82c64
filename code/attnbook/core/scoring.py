"""Scoring functions s(query, key): how relevant each key is to each query.

Four classic choices (source: nndl §1.1.2): additive, dot product, scaled dot
product and bilinear. Every function maps queries (..., n_q, d_q) and keys
(..., n_k, d_k) to scores (..., n_q, n_k): one row per query, one column per
key.
"""

import math

import torch
from torch import nn

from .._checks import (
    broadcast_shapes,
    require_int,
    require_module_dtype,
    require_same_dtype,
    require_same_features,
    require_same_size,
    require_sequences,
)
from .._memory import require_matrix_fits, require_weights_fit
from .._random import restores_rng_on_error


def _check_pair(queries: torch.Tensor, keys: torch.Tensor) -> None:
    """Queries and keys must be float tensors of one dtype and device, with
    at least 2 dims and compatible batches, whose score matrix fits."""
    require_sequences(queries=queries, keys=keys)
    require_same_dtype(queries=queries, keys=keys)
    batch = broadcast_shapes(queries.shape[:-2], keys.shape[:-2])
    require_matrix_fits(
        "the score matrix",
        (*batch, queries.shape[-2], keys.shape[-2]),
        queries.dtype,
    )


def _check_module_pair(module, queries, keys) -> None:
    """``_check_pair``, and the feature sizes and dtype of a score module's
    parameters (``query_dim``, ``key_dim``)."""
    _check_pair(queries, keys)
    require_same_size(
        "query feature size",
        "queries",
        queries.shape[-1],
        "query_dim",
        module.query_dim,
    )
    require_same_size(
        "key feature size", "keys", keys.shape[-1], "key_dim", module.key_dim
    )
    require_module_dtype(module, queries=queries, keys=keys)


def dot_score(queries: torch.Tensor, keys: torch.Tensor) -> torch.Tensor:
    """Dot-product scores s(k, q) = k^T q.

    queries: (..., n_q, d), keys: (..., n_k, d). Returns (..., n_q, n_k).
    """
    _check_pair(queries, keys)
    require_same_features(queries, keys)
    return queries @ keys.transpose(-2, -1)


def scaled_dot_score(
    queries: torch.Tensor, keys: torch.Tensor
) -> torch.Tensor:
    """Scaled dot-product scores s(k, q) = k^T q / sqrt(d).

    queries: (..., n_q, d), keys: (..., n_k, d). Returns (..., n_q, n_k).
    The queries are scaled before the product (n_q * d multiplications, not n_q
    * n_k).
    """
    _check_pair(queries, keys)
    if queries.shape[-1] == 0:
        raise ValueError(
            "scaled scores need a feature size d >= 1 (they divide by "
            f"sqrt(d)), got queries {tuple(queries.shape)}"
        )
    require_same_features(queries, keys)
    scale = 1.0 / math.sqrt(queries.shape[-1])
    return (queries * scale) @ keys.transpose(-2, -1)


class AdditiveScore(nn.Module):
    """Additive scores s(k, q) = v^T tanh(W k + U q) (Bahdanau-style
    attention).

    queries: (..., n_q, query_dim), keys: (..., n_k, key_dim). Returns (...,
    n_q, n_k). Parameters: ``key_proj`` (W), ``query_proj`` (U), both without
    bias, and ``v``.
    """

    @restores_rng_on_error
    def __init__(self, query_dim: int, key_dim: int, hidden_dim: int):
        super().__init__()
        self.query_dim, self.key_dim = (
            require_int("query_dim", query_dim),
            require_int("key_dim", key_dim),
        )
        self.hidden_dim = require_int("hidden_dim", hidden_dim)
        require_weights_fit(
            "AdditiveScore", (hidden_dim, key_dim + query_dim + 1)
        )
        self.key_proj = nn.Linear(key_dim, hidden_dim, bias=False)
        self.query_proj = nn.Linear(query_dim, hidden_dim, bias=False)
        self.v = nn.Linear(hidden_dim, 1, bias=False)

    def forward(
        self, queries: torch.Tensor, keys: torch.Tensor
    ) -> torch.Tensor:
        _check_module_pair(self, queries, keys)
        batch = broadcast_shapes(queries.shape[:-2], keys.shape[:-2])
        require_matrix_fits(
            "the additive score's hidden tensor",
            (*batch, queries.shape[-2], keys.shape[-2], self.hidden_dim),
            queries.dtype,
        )
        # (..., n_q, 1, h) + (..., 1, n_k, h) -> (..., n_q, n_k, h): every
        # query meets every key.
        hidden = torch.tanh(
            self.query_proj(queries).unsqueeze(-2)
            + self.key_proj(keys).unsqueeze(-3)
        )
        return self.v(hidden).squeeze(-1)


class BilinearScore(nn.Module):
    """Bilinear scores s(k, q) = k^T W q (a generalised dot product).

    queries: (..., n_q, query_dim), keys: (..., n_k, key_dim). Returns (...,
    n_q, n_k). ``weight`` has shape (key_dim, query_dim). With W = U^T V the
    score is (U k)^T (V q).
    """

    @restores_rng_on_error
    def __init__(self, query_dim: int, key_dim: int):
        super().__init__()
        self.query_dim, self.key_dim = (
            require_int("query_dim", query_dim),
            require_int("key_dim", key_dim),
        )
        require_weights_fit("BilinearScore", (key_dim, query_dim))
        bound = 1.0 / math.sqrt(query_dim)
        self.weight = nn.Parameter(
            torch.empty(key_dim, query_dim).uniform_(-bound, bound)
        )

    def forward(
        self, queries: torch.Tensor, keys: torch.Tensor
    ) -> torch.Tensor:
        _check_module_pair(self, queries, keys)
        # (W q_i) . k_j for every pair: project the queries once, then a dot
        # product.
        return (queries @ self.weight.T) @ keys.transpose(-2, -1)
