"""Multi-head latent attention (MLA, DeepSeek-AI 2024, "DeepSeek-V2", arXiv
2405.04434, Sec. 2.1): the keys and values of every head come from one
low-rank latent per position, and the cache holds only that latent.

The paper's equations, with h_t the input of position t (embed_dim), n_h heads
of d_h, latent size d_c and rotary size d_h^R (numbers as in the paper):

    (9)  c_t^KV = W^DKV h_t                        the latent, d_c: cached
    (10) k_t^C  = W^UK c_t^KV                      n_h d_h: keys of all heads
    (11) v_t^C  = W^UV c_t^KV                      n_h d_h: values
    (14) q_t^R  = RoPE(W^QR ...)                   n_h d_h^R: rotary queries
    (15) k_t^R  = RoPE(W^KR h_t)                   d_h^R, shared: cached
    (16) q_t,i  = [q_t,i^C ; q_t,i^R]              head i's query
    (17) k_t,i  = [k_t,i^C ; k_t^R]                head i's key
    (18) o_t,i  = sum_j softmax_j(q_t,i . k_j,i / sqrt(d_h + d_h^R)) v_j,i^C
    (19) u_t    = W^O [o_t,1 ; ... ; o_t,n_h]

Per position and layer the cache holds d_c + d_h^R numbers (Table 1), against
2 n_h d_h for multi-head attention.

Absorbed form. q_t,i^C . k_j,i^C = (W_i^UK^T q_t,i^C) . c_j^KV: multiply each
head's query by its W_i^UK^T once, and it scores the cached latents directly,
with no key ever formed. Likewise sum_i W_i^O W_i^UV sum_j a_j c_j: the values'
up-projection folds into the output projection. What remains is multi-query
attention (one shared key-value head) over keys [c_j ; k_j^R] and values c_j.

Decoupled RoPE (Sec. 2.1.3). RoPE rotates a key by a matrix R_j that depends
on its position j, so W^UK R_j cannot be folded into the query once for all
positions. MLA therefore leaves the latent part unrotated and carries the
position in a small separate part: per head a rotary query q_t,i^R, and one
rotary key k_t^R shared by every head, cached beside the latent.

Left out, as it does not change the cache: the paper's low-rank query
compression ((12), (13): the queries come from a second latent c_t^Q); here
the queries come from h_t directly (W^Q and W^QR), without biases, as in the
paper.
"""

import math

import torch
from torch import nn

from .._checks import (
    require_float,
    require_int,
    require_module_dtype,
    require_same_size,
)
from .._memory import require_weights_fit
from .._random import restores_rng_on_error
from ..core._nonfinite import drop_unused_latent_garbage
from ..core.grouped_query import grouped_query_attention
from ..core.rotary import apply_rotary
from .multihead import merge_heads, require_multihead_mask, split_heads


class MultiHeadLatentAttention(nn.Module):
    """Multi-head latent attention (DeepSeek-V2): self-attention whose cache
    holds, per position, a latent of ``latent_dim`` and a rotary key of
    ``rope_dim``, shared by every head.

    embed_dim (E), num_heads (n_h), latent_dim (d_c); head_dim (d_h, default
    E / n_h); rope_dim (d_h^R, even; 0: no position information). Parameters
    (no biases): ``q_proj`` W^Q (n_h d_h, E), ``kv_down`` W^DKV (d_c, E),
    ``key_up`` W^UK (n_h d_h, d_c), ``value_up`` W^UV (n_h d_h, d_c),
    ``out_proj`` W^O (E, n_h d_h); with rope_dim: ``q_rope`` W^QR
    (n_h d_h^R, E), ``k_rope`` W^KR (d_h^R, E).
    """

    @restores_rng_on_error
    def __init__(
        self,
        embed_dim: int,
        num_heads: int,
        latent_dim: int,
        head_dim: int | None = None,
        rope_dim: int = 0,
    ):
        super().__init__()
        head_dim = _check_sizes(
            embed_dim, num_heads, latent_dim, head_dim, rope_dim
        )
        self.embed_dim, self.num_heads, self.head_dim = (
            embed_dim,
            num_heads,
            head_dim,
        )
        self.latent_dim, self.rope_dim = latent_dim, rope_dim
        inner = num_heads * head_dim
        self.q_proj = nn.Linear(embed_dim, inner, bias=False)
        self.kv_down = nn.Linear(embed_dim, latent_dim, bias=False)
        self.key_up = nn.Linear(latent_dim, inner, bias=False)
        self.value_up = nn.Linear(latent_dim, inner, bias=False)
        self.out_proj = nn.Linear(inner, embed_dim, bias=False)
        if rope_dim:
            self.q_rope = nn.Linear(
                embed_dim, num_heads * rope_dim, bias=False
            )
            self.k_rope = nn.Linear(embed_dim, rope_dim, bias=False)

    def compress(self, x: torch.Tensor, start: int = 0) -> tuple:
        """What the cache holds for x (B, n, E) at positions start ..
        start + n - 1: (latent c^KV (B, n, d_c), rotary keys k^R (B, n,
        d_h^R)), equations (9) and (15)."""
        self._check_x(x)
        require_int("start", start, minimum=0)
        latent = self.kv_down(x)
        if not self.rope_dim:
            return latent, x.new_zeros(*x.shape[:-1], 0)
        return latent, apply_rotary(self.k_rope(x), _positions(x, start))

    def forward(self, x, mask=None, cache=None, absorbed: bool = False):
        """Self-attention of x (B, n, E) over the cached positions and its own.

        cache: None, or (latent (B, m, d_c), rope_keys (B, m, d_h^R)) of the m
        positions before x, as returned by an earlier call; x sits at
        positions m .. m + n - 1. mask: boolean, True = keep, (n, m + n) or
        (B or 1, n_h or 1, n or 1, m + n), e.g. ``causal_mask(n, m + n)``.
        absorbed: attend over the latents directly (W^UK folded into the
        queries, W^UV into the output projection) instead of forming every
        head's keys and values; the result is the same. Returns (output
        (B, n, E), cache (latent (B, m + n, d_c), rope_keys (B, m + n,
        d_h^R))).
        """
        x, latent, rope_keys = self._extended_cache(x, cache, mask)
        queries, rope_queries = self._queries(x, latent.shape[1] - x.shape[1])
        attend = self._absorbed if absorbed else self._explicit
        heads = attend(queries, rope_queries, latent, rope_keys, mask)
        return heads, (latent, rope_keys)

    def _explicit(self, queries, rope_queries, latent, rope_keys, mask):
        """Equations (10), (11), (16) to (19): every head's keys and values
        formed from the latents."""
        h = self.num_heads
        keys = split_heads(self.key_up(latent), h)  # (B, n_h, m, d_h)
        values = split_heads(self.value_up(latent), h)
        shared = rope_keys[:, None].expand(-1, h, -1, -1)  # (B, n_h, m, d_R)
        keys = torch.cat([keys, shared], dim=-1)
        queries = torch.cat([queries, rope_queries], dim=-1)
        heads, _ = grouped_query_attention(queries, keys, values, mask=mask)
        return self.out_proj(merge_heads(heads))

    def _absorbed(self, queries, rope_queries, latent, rope_keys, mask):
        """The same function with W^UK in the queries and W^UV in W^O:
        multi-query attention over keys [c ; k^R] and values c."""
        w_uk = self.key_up.weight.unflatten(0, (self.num_heads, -1))
        w_uv = self.value_up.weight.unflatten(0, (self.num_heads, -1))
        latent_queries = queries @ w_uk  # (B, n_h, n, d_c): W_i^UK^T q_i
        queries = torch.cat([latent_queries, rope_queries], dim=-1)
        keys = torch.cat([latent, rope_keys], dim=-1)[:, None]  # one head
        # grouped_query_attention divides by sqrt(d_c + d_R); eq. (18) by
        # sqrt(d_h + d_R): rescale the queries by the ratio
        queries = queries * math.sqrt(
            (self.latent_dim + self.rope_dim) / (self.head_dim + self.rope_dim)
        )
        mixed, _ = grouped_query_attention(
            queries, keys, latent[:, None], mask=mask
        )  # (B, n_h, n, d_c)
        w_o = self.out_proj.weight.unflatten(1, (self.num_heads, -1))
        w_ov = torch.einsum("ehd,hdc->ehc", w_o, w_uv)  # W_i^O W_i^UV
        return torch.einsum("bhnc,ehc->bne", mixed, w_ov)

    def _queries(self, x, start: int) -> tuple:
        """(W^Q x split into heads (B, n_h, n, d_h), rotary queries (B, n_h,
        n, d_h^R) at positions start .. start + n - 1)."""
        queries = split_heads(self.q_proj(x), self.num_heads)
        if not self.rope_dim:
            return queries, queries[..., :0]
        rope = split_heads(self.q_rope(x), self.num_heads)
        return queries, apply_rotary(rope, _positions(x, start))

    def _extended_cache(self, x, cache, mask) -> tuple:
        """(x, the cache with x's latents and rotary keys appended), after
        checking x, the cache and the mask. NaN/inf in tokens the mask never
        uses (padding, masked cached latents) is set to 0 first, so that it
        reaches no gradient, as in ``MultiHeadAttention``."""
        self._check_x(x)
        m = 0 if cache is None else self._check_cache(cache, x)
        if mask is not None:
            require_multihead_mask(
                mask, (x.shape[0],), self.num_heads, x.shape[1], m + x.shape[1]
            )
            x, cache = drop_unused_latent_garbage(x, cache, mask, m)
        latent, rope_keys = self.compress(x, start=m)
        if cache is None:
            return x, latent, rope_keys
        return (
            x,
            torch.cat([cache[0], latent], dim=1),
            torch.cat([cache[1], rope_keys], dim=1),
        )

    def _check_x(self, x) -> None:
        require_float("x", x)
        if x.dim() != 3:
            raise ValueError(
                f"x needs shape (B, n, embed_dim), got {tuple(x.shape)}"
            )
        require_same_size(
            "x feature size", "x", x.shape[-1], "embed_dim", self.embed_dim
        )
        require_module_dtype(self, x=x)

    def _check_cache(self, cache, x) -> int:
        """A (latent, rope_keys) pair that fits x; returns its length m."""
        if not isinstance(cache, tuple) or len(cache) != 2:
            raise TypeError(
                "cache must be the pair (latent, rope_keys) an earlier call "
                f"returned, got {type(cache).__name__}"
            )
        latent, rope_keys = cache
        for name, tensor, width in (
            ("latent", latent, self.latent_dim),
            ("rope_keys", rope_keys, self.rope_dim),
        ):
            require_float(f"cache's {name}", tensor)
            fits = tensor.dim() == 3 and tensor.shape[0] == x.shape[0]
            if not fits or tensor.shape[2] != width or tensor.dtype != x.dtype:
                raise ValueError(
                    f"cache's {name} must have shape (B, m, {width}) with B ="
                    f" {x.shape[0]} and dtype {x.dtype} (those of x), got "
                    f"{tuple(tensor.shape)} and {tensor.dtype}"
                )
        require_same_size(
            "cached positions",
            "latent",
            latent.shape[1],
            "rope_keys",
            rope_keys.shape[1],
        )
        return latent.shape[1]


def _positions(x: torch.Tensor, start: int) -> torch.Tensor:
    """Positions start .. start + n - 1 of x (B, n, ...)."""
    return torch.arange(start, start + x.shape[1], device=x.device)


def _check_sizes(embed_dim, num_heads, latent_dim, head_dim, rope_dim) -> int:
    """Sizes checked before any weight is drawn; returns head_dim."""
    for name, size in (
        ("embed_dim", embed_dim),
        ("num_heads", num_heads),
        ("latent_dim", latent_dim),
    ):
        require_int(name, size)
    if head_dim is None:
        if embed_dim % num_heads:
            raise ValueError(
                f"embed_dim ({embed_dim}) must be divisible by num_heads "
                f"({num_heads}), or give head_dim"
            )
        head_dim = embed_dim // num_heads
    require_int("head_dim", head_dim)
    require_int("rope_dim", rope_dim, minimum=0)
    if rope_dim % 2:
        raise ValueError(
            f"rope_dim must be even (RoPE turns pairs of features), got "
            f"{rope_dim}"
        )
    inner = num_heads * head_dim
    require_weights_fit(
        "MultiHeadLatentAttention",
        (inner, 2 * embed_dim + 2 * latent_dim),
        (latent_dim + rope_dim, embed_dim),
        (num_heads * rope_dim, embed_dim),
    )
    return head_dim
