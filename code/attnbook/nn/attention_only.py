"""An attention-only Transformer: the model of "A Mathematical Framework for
Transformer Circuits" (Elhage et al. 2021) in which induction heads appear.

    tokens (B, n) -> token embedding + learned position embedding = x_0
                  -> x_{l+1} = x_l + MultiHeadAttention_l(x_l, causal mask)
                  -> linear unembedding -> logits (B, n, vocab_size)

No MLP and no LayerNorm: the residual stream is a plain sum of the
embeddings and of every head's output, so the logits split exactly into a
direct path (embedding -> unembedding) and one term per head or chain of
heads, which is what lets a chapter write the QK and OV circuits out. The
attention layers have no biases for the same reason (a head's output is
W_O^h times its weighted values, nothing else). Without LayerNorm this small
model (one or two layers, a residual stream of 64, AdamW with gradient
clipping) trained reliably in every run made for chapter 14 (seeds 0 and 1,
learning rates 1e-3 and 3e-3): with two layers and no MLP there is little
depth for the scale of the residual stream to run away in, so the
normalisation buys nothing and would cost the exact decomposition.
"""

import torch
from torch import nn

from .._checks import require_ids, require_int, require_int_in
from .._memory import require_activations_fit, require_weights_fit
from .._random import restores_rng_on_error
from ..core.attention import attention
from ..core.masking import causal_mask
from ..core.scoring import scaled_dot_score
from .multihead import MultiHeadAttention, merge_heads, split_heads


class AttentionOnlyTransformer(nn.Module):
    """Attention layers with residual connections, nothing else.

    tokens (B, n) int64 in [0, vocab_size), n <= context_len -> logits
    (B, n, vocab_size); logits[:, t] predicts token t + 1 from tokens
    0 .. t. Each layer is a ``MultiHeadAttention(embed_dim, num_heads,
    bias=False)`` under ``causal_mask(n)``, added to the residual stream.
    """

    @restores_rng_on_error
    def __init__(
        self,
        vocab_size: int,
        context_len: int,
        embed_dim: int,
        num_heads: int,
        num_layers: int,
    ):
        super().__init__()
        self.vocab_size = require_int("vocab_size", vocab_size)
        self.context_len = require_int("context_len", context_len)
        require_int("embed_dim", embed_dim)
        require_int("num_heads", num_heads)
        self.num_layers = require_int("num_layers", num_layers)
        if embed_dim % num_heads:
            raise ValueError(
                f"embed_dim ({embed_dim}) must be divisible by num_heads "
                f"({num_heads})"
            )
        require_weights_fit(
            "AttentionOnlyTransformer",
            (2 * vocab_size + context_len, embed_dim),
            (num_layers * 4 * embed_dim, embed_dim),
        )
        self.num_heads = num_heads
        self.token_embedding = nn.Embedding(vocab_size, embed_dim)
        self.position_embedding = nn.Embedding(context_len, embed_dim)
        self.layers = nn.ModuleList(
            MultiHeadAttention(embed_dim, num_heads, bias=False)
            for _ in range(num_layers)
        )
        self.unembed = nn.Linear(embed_dim, vocab_size, bias=False)
        for embedding in (self.token_embedding, self.position_embedding):
            nn.init.normal_(embedding.weight, std=0.02)

    def forward(
        self,
        tokens: torch.Tensor,
        return_weights: bool = False,
        ablate=(),
    ):
        """Logits (B, n, vocab_size) of tokens (B, n).

        return_weights: also return every layer's attention weights, a
            tensor (num_layers, B, num_heads, n, n): returns (logits,
            weights).
        ablate: a collection of (layer, head) pairs whose output is set to
            zero (the head still attends; what it writes is dropped).
            Ablating every head leaves the direct path,
            unembed(token + position embedding).
        """
        require_ids("tokens", tokens, self.vocab_size, dims=2)
        n = tokens.shape[1]
        if n > self.context_len:
            raise ValueError(
                f"tokens has {n} positions, more than context_len = "
                f"{self.context_len}"
            )
        if not isinstance(return_weights, bool):
            raise TypeError(
                f"return_weights must be True or False, got {return_weights!r}"
            )
        dropped = self._check_ablate(ablate)
        self._check_activations(tokens, return_weights)
        positions = torch.arange(n, device=tokens.device)
        x = self.token_embedding(tokens) + self.position_embedding(positions)
        mask = causal_mask(n, device=tokens.device)
        all_weights = []
        for index, layer in enumerate(self.layers):
            q, k, v = layer.project(x, x, x)
            heads, weights = attention(
                split_heads(q, self.num_heads),
                split_heads(k, self.num_heads),
                split_heads(v, self.num_heads),
                score=scaled_dot_score,
                mask=mask,
            )
            off = [head for (lay, head) in dropped if lay == index]
            if off:
                keep = torch.ones(self.num_heads, 1, 1, dtype=heads.dtype)
                keep[off] = 0.0
                heads = heads * keep.to(heads.device)
            x = x + layer.out_proj(merge_heads(heads))
            all_weights.append(weights)
        logits = self.unembed(x)
        if return_weights:
            return logits, torch.stack(all_weights)
        return logits

    def _check_activations(self, tokens, return_weights: bool) -> None:
        """The numbers a forward pass computes for tokens (B, n), about
        8 E + 3 h n a token and layer (projections, scores, weights, heads),
        plus h n kept for ``return_weights``, the embeddings and the logits,
        within the memory limit. Without autograd one layer's are alive at
        a time."""
        embed_dim = self.token_embedding.embedding_dim
        hn = self.num_heads * tokens.shape[1]
        per_layer = 8 * embed_dim + 3 * hn
        layers = self.num_layers if torch.is_grad_enabled() else 1
        kept = self.num_layers * hn if return_weights else 0
        per_token = 3 * embed_dim + self.vocab_size + layers * per_layer + kept
        numbers, dtype = tokens.numel() * per_token, self.unembed.weight.dtype
        require_activations_fit("tokens", tokens, numbers, dtype, "a forward")

    def _check_ablate(self, ablate) -> set:
        """A collection of (layer, head) pairs of ints in range, as a set."""
        if isinstance(ablate, (str, bytes, torch.Tensor)) or not hasattr(
            ablate, "__iter__"
        ):
            raise TypeError(
                "ablate must be a collection of (layer, head) pairs, got "
                f"{type(ablate).__name__}"
            )
        pairs = set()
        for pair in ablate:
            if not isinstance(pair, tuple) or len(pair) != 2:
                raise ValueError(
                    f"ablate must hold (layer, head) pairs, got {pair!r:.40}"
                )
            require_int_in("ablate's layer", pair[0], 0, self.num_layers - 1)
            require_int_in("ablate's head", pair[1], 0, self.num_heads - 1)
            pairs.add(pair)
        return pairs
