"""The Transformer encoder: layer normalization, the position-wise feed-forward
network, the encoder block and a stack of blocks over token embeddings.

One block is "post-norm", as in "Attention Is All You Need" and BERT:

    a = LayerNorm(x + Dropout(MultiHeadAttention(x, x, x, mask)))
    y = LayerNorm(a + Dropout(FFN(a))),     FFN(a) = Linear2(ReLU(Linear1(a)))

Parameters are named as in ``torch.nn.TransformerEncoderLayer`` (``self_attn``,
``linear1``, ``linear2``, ``norm1``, ``norm2``), so its weights copy across
with ``load_torch_weights``. Masks follow the book's rule: boolean, True =
keep.
"""

import torch
import torch.nn.functional as F
from torch import nn

from .._checks import (
    HALF_DTYPES,
    require_float,
    require_int,
    require_module_dtype,
    require_positive,
    require_probability,
    require_same_size,
    require_tensor,
)
from .._memory import require_weights_fit
from .._random import restores_rng_on_error
from ..core.masking import lengths_to_mask
from ..core.positional import PositionalEncoding
from .multihead import MultiHeadAttention


def padding_mask(valid_lens, n: int) -> torch.Tensor:
    """Key-padding mask for self-attention over a padded batch.

    valid_lens: (B,) integer lengths in [0, n]. Returns a boolean mask of shape
    (B, 1, 1, n), True = keep, which broadcasts over heads and queries to the
    attention weights (B, heads, n, n): every query may look only at real
    tokens.
    """
    mask = lengths_to_mask(valid_lens, n)
    if mask.dim() != 2:
        raise ValueError(
            "valid_lens must hold one length per sequence, shape (B,), got "
            f"shape {tuple(mask.shape[:-1])}"
        )
    return mask[:, None, None, :]


def blocks_weights(num_layers: int, embed_dim: int, ffn_dim: int) -> tuple:
    """The weights of ``num_layers`` Transformer blocks, as a shape (an
    upper bound: attention, feed-forward, norms and biases)."""
    return (num_layers, embed_dim, 4 * embed_dim + 2 * ffn_dim + 8)


class LayerNorm(nn.Module):
    """Layer normalization: each token is normalized over its own features.

    For a token x in R^d:  mu = mean_j x_j,  var = mean_j (x_j - mu)^2
    (biased), y = weight * (x - mu) / sqrt(var + eps) + bias.
    x: (..., dim) -> (..., dim). ``weight`` starts at 1 and ``bias`` at 0; the
    names match ``torch.nn.LayerNorm``, so its state dict loads. Half-precision
    inputs are normalized in float32 and cast back, as PyTorch does.
    """

    @restores_rng_on_error
    def __init__(self, dim: int, eps: float = 1e-5):
        super().__init__()
        self.dim = require_int("dim", dim)
        self.eps = require_positive("eps", eps)
        require_weights_fit("LayerNorm", (2, dim))
        if float(torch.tensor(eps, dtype=torch.float32)) == 0:
            raise ValueError(
                f"eps={eps:g} rounds to 0 in float32: a constant token would "
                "divide 0 by 0"
            )
        self.weight = nn.Parameter(torch.ones(dim))
        self.bias = nn.Parameter(torch.zeros(dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        require_float("x", x)
        if x.dim() < 1:
            raise ValueError("x needs at least one dimension (the features)")
        require_same_size("feature size", "x", x.shape[-1], "dim", self.dim)
        z = x.float() if x.dtype in HALF_DTYPES else x
        mean = z.mean(dim=-1, keepdim=True)
        var = ((z - mean) ** 2).mean(dim=-1, keepdim=True)
        normalized = ((z - mean) / torch.sqrt(var + self.eps)).to(x.dtype)
        return normalized * self.weight.to(x.dtype) + self.bias.to(x.dtype)

    def extra_repr(self) -> str:
        return f"{self.dim}, eps={self.eps}"


class PositionWiseFFN(nn.Module):
    """The position-wise feed-forward network:
    Linear2(Dropout(ReLU(Linear1(x)))).

    The same two-layer MLP is applied to every token on its own.
    x: (..., embed_dim) -> (..., embed_dim); hidden width ``ffn_dim``.
    """

    @restores_rng_on_error
    def __init__(self, embed_dim: int, ffn_dim: int, dropout: float = 0.0):
        super().__init__()
        require_int("embed_dim", embed_dim)
        require_int("ffn_dim", ffn_dim)
        require_weights_fit(
            "PositionWiseFFN", (2 * ffn_dim + 1, embed_dim + 1)
        )
        self.linear1 = nn.Linear(embed_dim, ffn_dim)
        self.dropout = nn.Dropout(require_probability("dropout", dropout))
        self.linear2 = nn.Linear(ffn_dim, embed_dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        require_float("x", x)
        if x.dim() < 1:
            raise ValueError("x needs at least one dimension (the features)")
        require_same_size(
            "feature size",
            "x",
            x.shape[-1],
            "embed_dim",
            self.linear1.in_features,
        )
        require_module_dtype(self, x=x)
        return self.linear2(self.dropout(F.relu(self.linear1(x))))


class TransformerEncoderBlock(nn.Module):
    """One post-norm Transformer encoder block (self-attention, then the FFN).

    x: (B, n, embed_dim) -> (B, n, embed_dim).
    mask: boolean, True = keep, broadcastable to the attention weights
    (B, num_heads, n, n); build a key-padding mask with
    ``padding_mask(valid_lens, n)`` (shape (B, 1, 1, n)). A 2-D mask must be
    (n, n) (one mask for every sequence). Sub-modules: ``self_attn``
    (attnbook.MultiHeadAttention), ``norm1``, ``norm2`` (LayerNorm), ``ffn``
    (PositionWiseFFN with ``linear1``, ``linear2``).
    """

    @restores_rng_on_error
    def __init__(
        self,
        embed_dim: int,
        num_heads: int,
        ffn_dim: int,
        dropout: float = 0.0,
    ):
        super().__init__()
        require_int("embed_dim", embed_dim)
        require_int("num_heads", num_heads)
        require_weights_fit(
            "TransformerEncoderBlock",
            blocks_weights(1, embed_dim, require_int("ffn_dim", ffn_dim)),
        )
        self.self_attn = MultiHeadAttention(embed_dim, num_heads)
        self.dropout1 = nn.Dropout(require_probability("dropout", dropout))
        self.norm1 = LayerNorm(embed_dim)
        self.ffn = PositionWiseFFN(embed_dim, ffn_dim, dropout)
        self.dropout2 = nn.Dropout(dropout)
        self.norm2 = LayerNorm(embed_dim)

    @property
    def embed_dim(self) -> int:
        return self.self_attn.embed_dim

    @property
    def num_heads(self) -> int:
        return self.self_attn.num_heads

    def _check(self, x, mask) -> None:
        require_float("x", x)
        if x.dim() != 3:
            raise ValueError(
                f"x must have shape (B, n, embed_dim), got {tuple(x.shape)}"
            )
        require_same_size(
            "feature size", "x", x.shape[-1], "embed_dim", self.embed_dim
        )
        require_module_dtype(self, x=x)
        if mask is None:
            return
        require_tensor("mask", mask)
        n = x.shape[1]
        if mask.dim() == 2 and tuple(mask.shape) != (n, n):
            raise ValueError(
                f"a 2-D mask must be (n, n) = ({n}, {n}), got "
                f"{tuple(mask.shape)}; for a key-padding "
                "mask of shape (B, n) use mask[:, None, None, :] or "
                "padding_mask(valid_lens, n)"
            )

    def forward(self, x, mask=None, return_weights=False):
        """Returns y (B, n, embed_dim), or (y, weights) with the attention
        weights (B, num_heads, n, n) if ``return_weights`` is True."""
        self._check(x, mask)
        attended, weights = self.self_attn(x, x, x, mask=mask)
        x = self.norm1(x + self.dropout1(attended))
        x = self.norm2(x + self.dropout2(self.ffn(x)))
        return (x, weights) if return_weights else x

    @torch.no_grad()
    def load_torch_weights(
        self, layer: nn.TransformerEncoderLayer
    ) -> "TransformerEncoderBlock":
        """Copy the parameters of a post-norm, ReLU
        ``torch.nn.TransformerEncoderLayer`` of the same sizes."""
        norms = check_torch_layer(
            self, layer, nn.TransformerEncoderLayer, ("norm1", "norm2")
        )
        for norm, theirs_norm in norms:
            norm.load_state_dict(theirs_norm.state_dict())
        self.self_attn.load_torch_weights(layer.self_attn)
        self.ffn.linear1.load_state_dict(layer.linear1.state_dict())
        self.ffn.linear2.load_state_dict(layer.linear2.state_dict())
        return self


def check_torch_layer(block, layer, expected_type, norm_names) -> list:
    """Checks shared by the blocks' ``load_torch_weights``: that ``layer``
    is an ``expected_type`` (a PyTorch encoder or decoder layer) that is
    post-norm, ReLU, with biases, of the block's sizes and LayerNorm eps
    (the LayerNorms named ``norm_names`` in both). Returns the (ours,
    theirs) LayerNorm pairs to copy."""
    if not isinstance(layer, expected_type):
        raise TypeError(
            f"expected torch.nn.{expected_type.__name__}, got "
            f"{type(layer).__name__}"
        )
    if layer.norm_first:
        raise ValueError(
            "torch layer is pre-norm (norm_first=True); this block is "
            "post-norm"
        )
    if layer.activation is not F.relu and not isinstance(
        layer.activation, nn.ReLU
    ):
        raise ValueError(
            f"torch layer uses activation {layer.activation}; this block uses "
            "ReLU"
        )
    ours = (block.embed_dim, block.num_heads, block.ffn.linear1.out_features)
    theirs = (
        layer.self_attn.embed_dim,
        layer.self_attn.num_heads,
        layer.linear1.out_features,
    )
    if ours != theirs:
        raise ValueError(
            "size mismatch (embed_dim, num_heads, ffn hidden size): torch "
            f"layer has {theirs}, this block {ours}"
        )
    if layer.linear1.bias is None or layer.norm1.bias is None:
        raise ValueError(
            "torch layer was built with bias=False; this block has biases"
        )
    pairs = [
        (getattr(block, name), getattr(layer, name)) for name in norm_names
    ]
    for norm, theirs_norm in pairs:
        if norm.eps != theirs_norm.eps:
            raise ValueError(
                f"LayerNorm eps differs: torch layer {theirs_norm.eps}, this "
                f"block {norm.eps}"
            )
    return pairs


class TransformerEncoder(nn.Module):
    """Token embeddings + sinusoidal positions, then ``num_layers`` encoder
    blocks.

    tokens: (B, n) integer ids in [0, vocab_size), n <= max_len.
    valid_lens: (B,) lengths (the rest is padding, ignored as keys), or None.
    Returns hidden states (B, n, embed_dim), or (hidden, weights) with weights
    (num_layers, B, num_heads, n, n) if ``return_weights`` is True.
    The embeddings are not scaled by sqrt(embed_dim) (BERT does not scale
    either).
    """

    @restores_rng_on_error
    def __init__(
        self,
        vocab_size: int,
        embed_dim: int,
        num_heads: int,
        ffn_dim: int,
        num_layers: int,
        max_len: int = 512,
        dropout: float = 0.0,
    ):
        super().__init__()
        self.vocab_size = require_int("vocab_size", vocab_size)
        require_int("num_layers", num_layers)
        require_weights_fit(
            "TransformerEncoder",
            (vocab_size, require_int("embed_dim", embed_dim)),
            blocks_weights(
                num_layers, embed_dim, require_int("ffn_dim", ffn_dim)
            ),
        )
        self.embedding = nn.Embedding(
            vocab_size, require_int("embed_dim", embed_dim)
        )
        self.positions = PositionalEncoding(
            embed_dim,
            require_int("max_len", max_len),
            require_probability("dropout", dropout),
        )
        self.blocks = nn.ModuleList(
            TransformerEncoderBlock(embed_dim, num_heads, ffn_dim, dropout)
            for _ in range(num_layers)
        )

    def embed(self, tokens: torch.Tensor) -> torch.Tensor:
        """Embedding lookup plus positional encoding: (B, n) ids -> (B, n,
        embed_dim)."""
        require_tensor("tokens", tokens)
        if (
            tokens.is_floating_point()
            or tokens.is_complex()
            or tokens.dtype == torch.bool
        ):
            raise TypeError(
                f"tokens must hold integer ids, got dtype {tokens.dtype}"
            )
        if tokens.dim() != 2:
            raise ValueError(
                f"tokens must have shape (B, n), got {tuple(tokens.shape)}"
            )
        if tokens.numel() and (
            tokens.min() < 0 or tokens.max() >= self.vocab_size
        ):
            bad = (
                tokens[(tokens < 0) | (tokens >= self.vocab_size)]
                .flatten()[0]
                .item()
            )
            raise ValueError(
                f"token id {bad} is outside [0, {self.vocab_size})"
            )
        if tokens.dtype not in (torch.int64, torch.int32):
            tokens = (
                tokens.long()
            )  # uint8, int8, int16 ids: nn.Embedding takes int32/int64 only
        return self.positions(self.embedding(tokens))

    def forward(
        self,
        tokens: torch.Tensor,
        valid_lens=None,
        return_weights: bool = False,
    ):
        x = self.embed(tokens)
        mask = None
        if valid_lens is not None:
            if not isinstance(valid_lens, torch.Tensor):
                try:
                    valid_lens = torch.as_tensor(
                        valid_lens, device=tokens.device
                    )
                except (TypeError, ValueError, RuntimeError):
                    raise TypeError(
                        "valid_lens must be a tensor or a list of lengths, "
                        f"got {valid_lens!r}"
                    ) from None
            if valid_lens.shape != tokens.shape[:1]:
                raise ValueError(
                    f"valid_lens of shape {tuple(valid_lens.shape)} must give "
                    "one length per sequence "
                    f"({tokens.shape[0]})"
                )
            mask = padding_mask(valid_lens, tokens.shape[1])
        weights = []
        for block in self.blocks:
            x, w = block(x, mask, return_weights=True)
            weights.append(w)
        return (x, torch.stack(weights)) if return_weights else x
