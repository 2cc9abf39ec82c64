"""Single-head self-attention: a sequence attends to itself.

Every position supplies a query, a key and a value, all computed from the same
input by three learned linear maps (the query-key-value, QKV, form). With the
tokens as the rows of X (n, embed_dim):

    Q = X W_q,  K = X W_k,  V = X W_v,  H = softmax(Q K^T / sqrt(d_k)) V

The n x n attention matrix is generated from the input itself, so one set of
parameters serves sequences of any length. Without positional information the
layer is permutation-equivariant: permuting the tokens permutes the outputs.
"""

import torch
from torch import nn

from .._checks import (
    require_bool_mask,
    require_float,
    require_int,
    require_module_dtype,
    require_same_size,
)
from .._memory import require_weights_fit
from .._random import restores_rng_on_error
from ..core._nonfinite import zero_unused
from ..core.attention import attention
from ..core.scoring import scaled_dot_score


class SelfAttention(nn.Module):
    """Single-head scaled dot-product self-attention in the QKV form.

    embed_dim: feature size of the input tokens (D_x in nndl).
    key_dim:   size of queries and keys (D_k); defaults to embed_dim.
    value_dim: size of values and outputs (D_v); defaults to embed_dim.
    Parameters: ``query_proj``, ``key_proj`` (embed_dim -> key_dim) and
    ``value_proj`` (embed_dim -> value_dim), linear maps without bias, so that
    Q = X W_q exactly; ``query_proj.weight`` is W_q^T, shape (key_dim,
    embed_dim).
    """

    @restores_rng_on_error
    def __init__(
        self,
        embed_dim: int,
        key_dim: int | None = None,
        value_dim: int | None = None,
    ):
        super().__init__()
        self.embed_dim = require_int("embed_dim", embed_dim)
        self.key_dim = require_int(
            "key_dim", embed_dim if key_dim is None else key_dim
        )
        self.value_dim = require_int(
            "value_dim", embed_dim if value_dim is None else value_dim
        )
        require_weights_fit(
            "SelfAttention", (2 * self.key_dim + self.value_dim, embed_dim)
        )
        self.query_proj = nn.Linear(self.embed_dim, self.key_dim, bias=False)
        self.key_proj = nn.Linear(self.embed_dim, self.key_dim, bias=False)
        self.value_proj = nn.Linear(self.embed_dim, self.value_dim, bias=False)
        for proj in (self.query_proj, self.key_proj, self.value_proj):
            nn.init.xavier_uniform_(proj.weight)

    def project(self, x: torch.Tensor):
        """Queries (..., n, key_dim), keys (..., n, key_dim), values (...,
        n, value_dim) of x (..., n, embed_dim)."""
        self._check(x)
        return self.query_proj(x), self.key_proj(x), self.value_proj(x)

    def forward(self, x: torch.Tensor, mask: torch.Tensor | None = None):
        """x: (..., n, embed_dim) floating point.

        mask: boolean, True = keep, broadcastable to the weights (..., n, n);
        row i says which positions token i may attend to. A padding mask for
        x of shape (B, n, embed_dim) is ``keep[:, None, :]`` with keep (B, n).
        Returns (output (..., n, value_dim), weights (..., n, n)); each row of
        the weights sums to 1, or is all zeros if the mask removes every key.
        """
        self._check(x, mask)
        if mask is not None:  # garbage in tokens no query keeps: no gradient
            x = zero_unused(x, mask.any(-2) if mask.dim() >= 2 else mask)
        queries, keys, values = self.project(x)
        return attention(
            queries, keys, values, score=scaled_dot_score, mask=mask
        )

    def _check(self, x, mask=None) -> None:
        """x: (..., n, embed_dim) in the module's dtype; mask, if given,
        boolean and broadcastable to the weights (..., n, n)."""
        require_float("x", x)
        if x.dim() < 2:
            raise ValueError(
                f"x needs shape (..., n, embed_dim), got {tuple(x.shape)}"
            )
        require_same_size(
            "feature size", "x", x.shape[-1], "embed_dim", self.embed_dim
        )
        require_module_dtype(self, x=x)
        if mask is not None:
            n = x.shape[-2]
            require_bool_mask(mask, torch.Size((*x.shape[:-2], n, n)))

    def extra_repr(self) -> str:
        return (
            f"embed_dim={self.embed_dim}, key_dim={self.key_dim}, "
            f"value_dim={self.value_dim}"
        )
