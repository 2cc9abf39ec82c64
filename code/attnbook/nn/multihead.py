"""Multi-head attention, written out so every step can be read and checked.

project -> split heads -> scaled dot-product attention per head -> merge heads
-> output projection. Parameters are laid out as in
``torch.nn.MultiheadAttention`` (one stacked input projection, then
``out_proj``), so its weights load directly. With ``num_kv_heads`` the keys
and values have fewer heads than the queries (grouped-query attention, see
``attnbook.core.grouped_query``).
"""

import torch
import torch.nn.functional as F
from torch import nn

from .._checks import (
    require_float,
    require_int,
    require_module_dtype,
    require_same_size,
    require_tensor,
)
from .._memory import require_matrix_fits, require_weights_fit
from .._random import restores_rng_on_error
from ..core._nonfinite import drop_unused_garbage
from ..core.attention import attention
from ..core.grouped_query import grouped_query_attention
from ..core.scoring import scaled_dot_score


def split_heads(x: torch.Tensor, num_heads: int) -> torch.Tensor:
    """(..., n, num_heads * d_head) -> (..., num_heads, n, d_head)."""
    require_tensor("x", x)
    require_int("num_heads", num_heads)
    if x.dim() < 2:
        raise ValueError(
            f"x needs shape (..., n, num_heads * d_head), got {tuple(x.shape)}"
        )
    if x.shape[-1] % num_heads:
        raise ValueError(
            f"the feature size {x.shape[-1]} of x is not divisible by "
            f"num_heads = {num_heads}"
        )
    return x.unflatten(-1, (num_heads, -1)).transpose(-3, -2)


def merge_heads(x: torch.Tensor) -> torch.Tensor:
    """(..., num_heads, n, d_head) -> (..., n, num_heads * d_head)."""
    require_tensor("x", x)
    if x.dim() < 3:
        raise ValueError(
            f"x needs shape (..., num_heads, n, d_head), got {tuple(x.shape)}"
        )
    return x.transpose(-3, -2).flatten(-2)


def _check_sizes(embed_dim, num_heads, num_kv_heads) -> int:
    """Sizes of a MultiHeadAttention, checked before any weight is drawn;
    returns the number of key-value heads."""
    for name, size in (("embed_dim", embed_dim), ("num_heads", num_heads)):
        if isinstance(size, bool) or not isinstance(size, int):
            raise TypeError(f"{name} must be an int, got {size!r}")
    require_int("embed_dim", embed_dim)
    if num_heads < 1 or embed_dim % num_heads != 0:
        raise ValueError(
            f"embed_dim ({embed_dim}) must be divisible by num_heads ("
            f"{num_heads})"
        )
    if num_kv_heads is None:
        num_kv_heads = num_heads
    require_int("num_kv_heads", num_kv_heads)
    if num_heads % num_kv_heads:
        raise ValueError(
            f"num_heads ({num_heads}) must be divisible by num_kv_heads "
            f"({num_kv_heads}): each key-value head serves a whole group of "
            "query heads"
        )
    kv_dim = num_kv_heads * (embed_dim // num_heads)
    require_weights_fit(
        "MultiHeadAttention", (2 * embed_dim + 2 * kv_dim + 4, embed_dim)
    )
    return num_kv_heads


class MultiHeadAttention(nn.Module):
    """Multi-head scaled dot-product attention (the Transformer's).

    embed_dim must be divisible by num_heads; each head works in
    d_head = embed_dim / num_heads dimensions and scales its scores by
    1/sqrt(d_head). Parameters: ``in_proj_weight`` (3 * embed_dim, embed_dim)
    stacking W_q, W_k, W_v; ``in_proj_bias`` (3 * embed_dim) if bias;
    ``out_proj`` (embed_dim -> embed_dim).

    num_kv_heads = g (a divisor of num_heads; None: num_heads): the keys and
    values get g heads of d_head, each shared by num_heads / g query heads
    (g = 1 is multi-query attention). The layout stays one stack:
    ``in_proj_weight`` (embed_dim + 2 g d_head, embed_dim) holds W_q (embed_dim
    rows), W_k and W_v (g d_head rows each), ``in_proj_bias`` likewise; with g
    = num_heads, or None, every parameter, its initial draw and the result are
    those of plain multi-head attention.
    """

    @restores_rng_on_error
    def __init__(
        self,
        embed_dim: int,
        num_heads: int,
        bias: bool = True,
        num_kv_heads: int | None = None,
    ):
        super().__init__()
        kv_heads = _check_sizes(embed_dim, num_heads, num_kv_heads)
        self.embed_dim, self.num_heads = embed_dim, num_heads
        self.num_kv_heads, self.head_dim = kv_heads, embed_dim // num_heads
        self.kv_dim = kv_heads * self.head_dim  # rows of W_k and of W_v
        stacked = embed_dim + 2 * self.kv_dim
        self.in_proj_weight = nn.Parameter(torch.empty(stacked, embed_dim))
        self.in_proj_bias = (
            nn.Parameter(torch.zeros(stacked)) if bias else None
        )
        self.out_proj = nn.Linear(embed_dim, embed_dim, bias=bias)
        nn.init.xavier_uniform_(self.in_proj_weight)
        if bias:
            nn.init.zeros_(self.out_proj.bias)

    def project(self, query, key, value):
        """Queries, keys and values in embed_dim, projected by W_q, W_k, W_v.

        One matrix product when query, key and value are the same tensor
        (self-attention), two when key is value, three otherwise.
        """
        self._check_projected(query=query, key=key, value=value)
        weight, bias = self.in_proj_weight, self.in_proj_bias
        sizes = [self.embed_dim, self.kv_dim, self.kv_dim]
        if query is key and key is value:
            return F.linear(query, weight, bias).split(sizes, dim=-1)
        w_q, w_kv = weight.split([self.embed_dim, 2 * self.kv_dim])
        b_q, b_kv = (
            bias.split([self.embed_dim, 2 * self.kv_dim])
            if bias is not None
            else (None, None)
        )
        q = F.linear(query, w_q, b_q)
        if key is value:
            return (q, *F.linear(key, w_kv, b_kv).chunk(2, dim=-1))
        w_k, w_v = w_kv.chunk(2)
        b_k, b_v = b_kv.chunk(2) if b_kv is not None else (None, None)
        return q, F.linear(key, w_k, b_k), F.linear(value, w_v, b_v)

    def project_query(self, x: torch.Tensor) -> torch.Tensor:
        """x (..., n, embed_dim) -> the queries split into heads (..., h, n,
        d_head), with W_q alone (a decoding step's cross-attention)."""
        self._check_projected(x=x)
        weight, bias = self.in_proj_weight, self.in_proj_bias
        e = self.embed_dim
        q = F.linear(x, weight[:e], None if bias is None else bias[:e])
        return split_heads(q, self.num_heads)

    def project_keys_values(self, x: torch.Tensor) -> tuple:
        """x (..., n, embed_dim) -> (keys, values), each split into
        num_kv_heads heads (..., g, n, d_head), with W_k and W_v alone (the
        memory that every decoding step reads)."""
        self._check_projected(x=x)
        weight, bias = self.in_proj_weight, self.in_proj_bias
        e = self.embed_dim
        kv = F.linear(x, weight[e:], None if bias is None else bias[e:])
        keys, values = kv.chunk(2, dim=-1)
        return (
            split_heads(keys, self.num_kv_heads),
            split_heads(values, self.num_kv_heads),
        )

    def _check_projected(self, **tensors) -> None:
        """Float tensors (..., embed_dim) of the parameters' dtype whose
        projections fit in the memory limit."""
        for name, tensor in tensors.items():
            require_float(name, tensor)
            require_same_size(
                f"{name} feature size",
                name,
                tensor.shape[-1] if tensor.dim() else 0,
                "embed_dim",
                self.embed_dim,
            )
            if (
                tensor.dtype != self.in_proj_weight.dtype
            ):  # a generation step calls this thousands of times
                require_module_dtype(self, **{name: tensor})
            if name != "value":
                require_matrix_fits(
                    f"the projection of {name}",
                    (*tensor.shape[:-1], self.in_proj_weight.shape[0]),
                    tensor.dtype,
                    hint="use shorter sequences, or",
                )

    def forward(
        self,
        query: torch.Tensor,
        key: torch.Tensor,
        value: torch.Tensor,
        mask: torch.Tensor | None = None,
    ):
        """query: (B, n_q, embed_dim), key and value: (B, n_k, embed_dim).

        Unbatched inputs (n, embed_dim) work too, as in torch.
        mask: boolean, True = keep: (n_q, n_k), or (B or 1, num_heads or 1, n_q
        or 1, n_k) (for unbatched inputs (num_heads or 1, n_q or 1, n_k)). Pass
        a key-padding mask ``keep`` of shape (B, n_k) as
        ``keep[:, None, None, :]``; any other shape, e.g. (B, 1, n_k), is
        refused (it would broadcast against the heads). (torch's
        ``key_padding_mask`` is the opposite, True = ignore:
        ``keep = ~key_padding_mask``.) Returns (output (B, n_q, embed_dim),
        weights (B, num_heads, n_q, n_k)). A query whose keys are all masked
        gets zero weights and the output ``out_proj(0)`` (torch returns NaN
        there). With num_kv_heads < num_heads the keys and values are split
        into num_kv_heads heads and ``grouped_query_attention`` shares each
        among its num_heads / num_kv_heads query heads.
        """
        self._check_inputs(query, key, value)
        if mask is not None:
            require_multihead_mask(
                mask,
                tuple(query.shape[:-2]),
                self.num_heads,
                query.shape[-2],
                key.shape[-2],
            )
            query, key, value = drop_unused_garbage(query, key, value, mask)
        q, k, v = self.project(query, key, value)
        q = split_heads(q, self.num_heads)
        k, v = (
            split_heads(k, self.num_kv_heads),
            split_heads(v, self.num_kv_heads),
        )
        if self.num_kv_heads == self.num_heads:
            heads, weights = attention(
                q, k, v, score=scaled_dot_score, mask=mask
            )
        else:
            heads, weights = grouped_query_attention(q, k, v, mask=mask)
        return self.out_proj(merge_heads(heads)), weights

    def _check_inputs(self, query, key, value) -> None:
        """Float tensors (..., n, embed_dim) with equal batch shapes and as
        many keys as values."""
        for name, tensor in (("query", query), ("key", key), ("value", value)):
            require_float(name, tensor)
            if tensor.dim() < 2:
                raise ValueError(
                    f"{name} needs shape (B, n, embed_dim) or (n, embed_dim), "
                    f"got {tuple(tensor.shape)}"
                )
            require_same_size(
                f"{name} feature size",
                name,
                tensor.shape[-1],
                "embed_dim",
                self.embed_dim,
            )
        if not query.shape[:-2] == key.shape[:-2] == value.shape[:-2]:
            raise ValueError(
                f"batch shapes must match: query {tuple(query.shape[:-2])}, "
                f"key {tuple(key.shape[:-2])}, "
                f"value {tuple(value.shape[:-2])}"
            )
        require_same_size(
            "number of keys and values",
            "key",
            key.shape[-2],
            "value",
            value.shape[-2],
        )
        require_module_dtype(self, query=query, key=key, value=value)

    @torch.no_grad()
    def load_torch_weights(
        self, module: nn.MultiheadAttention
    ) -> "MultiHeadAttention":
        """Copy the parameters of a ``torch.nn.MultiheadAttention`` of the
        same size."""
        if not isinstance(module, nn.MultiheadAttention):
            raise TypeError(
                "expected torch.nn.MultiheadAttention, got "
                f"{type(module).__name__}"
            )
        if (module.embed_dim, module.num_heads) != (
            self.embed_dim,
            self.num_heads,
        ):
            raise ValueError(
                f"size mismatch: torch module has embed_dim={module.embed_dim}"
                f", num_heads={module.num_heads}; "
                f"this one embed_dim={self.embed_dim}, num_heads="
                f"{self.num_heads}"
            )
        if self.num_kv_heads != self.num_heads:
            raise ValueError(
                f"this module shares num_kv_heads={self.num_kv_heads} "
                f"key-value heads among num_heads={self.num_heads} query "
                "heads; "
                "torch.nn.MultiheadAttention has one key-value head per query"
                " head, so its weights do not fit"
            )
        if module.in_proj_weight is None:
            raise ValueError(
                "torch module uses separate key/value sizes (kdim/vdim); not "
                "supported"
            )
        if module.bias_k is not None or module.add_zero_attn:
            raise ValueError(
                "torch module was built with add_bias_kv=True or "
                "add_zero_attn=True (an extra learned key and "
                "value, or a zero key and value, attended by every query); "
                "this module has neither and would "
                "compute another function"
            )
        if (module.in_proj_bias is None) != (self.in_proj_bias is None):
            raise ValueError("one module has biases and the other does not")
        self.in_proj_weight.copy_(module.in_proj_weight)
        self.out_proj.weight.copy_(module.out_proj.weight)
        if self.in_proj_bias is not None:
            self.in_proj_bias.copy_(module.in_proj_bias)
            self.out_proj.bias.copy_(module.out_proj.bias)
        return self


# The check every multi-head module shares (here, the decoder, MLA).


def require_multihead_mask(
    mask, batch: tuple, num_heads: int, n_q: int, n_k: int, name: str = "mask"
) -> torch.Tensor:
    """A mask for multi-head weights (*batch, num_heads, n_q, n_k) that cannot
    be misread.

    Accepted: 2-D (n_q, n_k), one mask for every sequence and head (e.g. a
    causal mask); or, for batched inputs, 4-D (B or 1, num_heads or 1, n_q or
    1, n_k), e.g. a key-padding mask ``keep[:, None, None, :]`` of shape (B, 1,
    1, n_k); for unbatched inputs 3-D (num_heads or 1, n_q or 1, n_k). Anything
    else, in particular a (B, 1, n_k) padding mask (it would broadcast as (1,
    B, 1, n_k) and, when B equals num_heads, apply sequence j's padding to head
    j), is refused with a ``ValueError`` naming these shapes.
    """
    require_tensor(name, mask)
    if mask.dtype != torch.bool:
        raise TypeError(
            f"{name} must be a boolean tensor (True = keep), got dtype "
            f"{mask.dtype}"
        )
    shape = tuple(mask.shape)
    if len(shape) == 2 and shape == (n_q, n_k):
        return mask
    wanted = [f"(n_q, n_k) = ({n_q}, {n_k})"]
    if len(batch) == 1:
        allowed = ((batch[0], 1), (num_heads, 1), (n_q, 1), (n_k,))
        wanted.append(
            f"(B or 1, heads or 1, n_q or 1, n_k) = ({batch[0]} or 1, "
            f"{num_heads} or 1, {n_q} or 1, {n_k})"
        )
    elif len(batch) == 0:
        allowed = ((num_heads, 1), (n_q, 1), (n_k,))
        wanted.append(
            f"(heads or 1, n_q or 1, n_k) = ({num_heads} or 1, {n_q} or 1, "
            f"{n_k})"
        )
    else:
        allowed = (
            *((size, 1) for size in batch),
            (num_heads, 1),
            (n_q, 1),
            (n_k,),
        )
        wanted.append(
            "(*batch or 1, heads or 1, n_q or 1, n_k) with batch "
            f"{tuple(batch)}"
        )
    if len(shape) == len(allowed) and all(
        size in sizes for size, sizes in zip(shape, allowed)
    ):
        return mask
    raise ValueError(
        f"{name} of shape {shape} is ambiguous or wrong for multi-head weights"
        " "
        f"{(*batch, num_heads, n_q, n_k)}: pass {' or '.join(wanted)}; a "
        "key-padding mask keep (B, n_k) "
        f"goes in as keep[:, None, None, :] (see attnbook.padding_mask)"
    )
