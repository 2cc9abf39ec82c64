"""A decoder-only Transformer language model (GPT-style), built from the
book's blocks, with a key-value cache for generation.

    tokens (B, n) -> token embedding + learned position embedding
                  -> num_layers x DecoderOnlyBlock (pre-LN, causal)
                  -> LayerNorm -> linear head -> logits (B, n, vocab_size)

A block is the encoder block of chapter 9 in its pre-LN form with a causal
mask, and no cross-attention (there is no encoder):

    a = x + MultiHeadAttention(LN1(x), causal mask)
    y = a + PositionWiseFFN(LN2(a))

Generation appends one token at a time. Without a cache every step runs the
whole sequence again; with a ``KVCache`` each layer keeps the keys and values
of the positions already seen, and a step computes only the new positions'
queries, keys and values. The first call (the *prefill*) feeds the whole
prompt at once: n_q new queries against n_k >= n_q keys, which needs the
causal mask aligned bottom-right (``causal_mask(n_q, n_k)``).
"""

import torch
import torch.nn.functional as F
from torch import nn

from .._checks import (
    require_ids,
    require_int,
    require_tensor,
)
from .._memory import (
    require_activations_fit,
    require_matrix_fits,
    require_weights_fit,
)
from .._random import require_generator, restores_rng_on_error
from ..core.attention import attention
from ..core.grouped_query import grouped_query_attention
from ..core.masking import causal_mask
from ..core.sampling import check_sampling, sample_next_token
from ..core.scoring import scaled_dot_score
from .encoder import LayerNorm, PositionWiseFFN, blocks_weights
from .kv_cache import KVCache, require_kv_cache
from .latent_attention import MultiHeadLatentAttention
from .multihead import MultiHeadAttention, merge_heads, split_heads


class _LatentSelfAttention(MultiHeadLatentAttention):
    """MultiHeadLatentAttention called as MultiHeadAttention is in a block:
    (query, key, value, mask) with query, key and value the same tensor;
    returns (output, the latent cache)."""

    def forward(self, query, key, value, mask=None):
        if key is not query or value is not query:
            raise ValueError(
                "latent attention here is self-attention: query, key and "
                "value must be the same tensor"
            )
        return super().forward(query, mask=mask)


class DecoderOnlyBlock(nn.Module):
    """A pre-LN block with causal self-attention: x (B, n, E) -> (B, n, E).

    Sub-modules: ``norm1``, ``self_attn``, ``norm2``, ``ffn``
    (PositionWiseFFN), as in the encoder block. ``self_attn`` is
    attnbook.MultiHeadAttention with ``num_kv_heads`` key-value heads (None =
    num_heads), or, with ``latent_dim``, MultiHeadLatentAttention whose keys
    and values come from a latent of that size (no rotary part: positions
    enter with the embeddings).
    """

    @restores_rng_on_error
    def __init__(
        self,
        embed_dim: int,
        num_heads: int,
        ffn_dim: int,
        num_kv_heads: int | None = None,
        latent_dim: int | None = None,
    ):
        super().__init__()
        if latent_dim is not None and num_kv_heads is not None:
            raise ValueError(
                "give num_kv_heads or latent_dim, not both: latent attention "
                f"shares one latent among all heads (got num_kv_heads="
                f"{num_kv_heads}, latent_dim={latent_dim})"
            )
        self.norm1 = LayerNorm(embed_dim)
        if latent_dim is None:
            self.self_attn = MultiHeadAttention(
                embed_dim, num_heads, num_kv_heads=num_kv_heads
            )
        else:
            self.self_attn = _LatentSelfAttention(
                embed_dim, num_heads, latent_dim
            )
        self.norm2 = LayerNorm(embed_dim)
        self.ffn = PositionWiseFFN(embed_dim, ffn_dim)

    def forward(self, x: torch.Tensor, mask=None) -> torch.Tensor:
        """The whole sequence at once, under ``mask`` (n, n), True = keep;
        None: the causal mask."""
        h = self.norm1(x)
        if mask is None:
            mask = causal_mask(x.shape[1], device=x.device)
        x = x + self.self_attn(h, h, h, mask=mask)[0]
        return x + self.ffn(self.norm2(x))

    def forward_cached(self, x, cache: KVCache, layer: int) -> torch.Tensor:
        """x (B, n_new, E): the new positions only. Their keys and values
        join ``cache``; their queries attend to all n_k cached keys under the
        bottom-right causal mask (n_new, n_k)."""
        require_kv_cache(cache)
        mha = self.self_attn
        if isinstance(mha, _LatentSelfAttention):
            raise ValueError(
                "a latent-attention block runs without a KVCache here (its "
                "cache is a latent: MultiHeadLatentAttention(cache=...))"
            )
        h = self.norm1(x)
        q, k, v = mha.project(h, h, h)
        q = split_heads(q, mha.num_heads)
        k, v = (split_heads(t, mha.num_kv_heads) for t in (k, v))
        k, v = cache.append(layer, k, v)  # (B, g, n_k, d)
        mask = causal_mask(q.shape[-2], k.shape[-2], device=x.device)
        heads = _cached_attention(q, k, v, mask)
        x = x + mha.out_proj(merge_heads(heads))
        return x + self.ffn(self.norm2(x))


def cached_forward_minimal(model, tokens, cache: KVCache) -> torch.Tensor:
    """The cached forward pass in one screen, for reading: logits (B, n,
    vocab) of tokens (B, n) that follow the len(cache) cached positions.
    ``model(tokens, cache)`` computes the same, with its checks and the
    grouped-query case (tested equal)."""
    x = model.embed(tokens, start=len(cache))  # positions continue
    for layer, block in enumerate(model.blocks):
        mha = block.self_attn
        q, k, v = mha.project(*[block.norm1(x)] * 3)
        q, k, v = (split_heads(t, mha.num_heads) for t in (q, k, v))
        k, v = cache.append(layer, k, v)  # all keys, values so far
        mask = causal_mask(q.shape[-2], k.shape[-2])  # bottom-right
        heads = attention(q, k, v, mask=mask)[0]
        x = x + mha.out_proj(merge_heads(heads))
        x = x + block.ffn(block.norm2(x))
    return model.head(model.norm(x))


def _cached_attention(q, k, v, mask) -> torch.Tensor:
    """Heads (B, h, n_q, d) of queries (B, h, n_q, d) over cached keys and
    values (B, g, n_k, d): plain attention when g = h, else grouped."""
    if k.shape[1] == q.shape[1]:
        return attention(q, k, v, score=scaled_dot_score, mask=mask)[0]
    return grouped_query_attention(q, k, v, mask=mask)[0]


class DecoderOnlyTransformer(nn.Module):
    """A GPT-style language model: logits for the next token at every
    position.

    tokens (B, n) int64 in [0, vocab_size) -> logits (B, n, vocab_size);
    logits[:, t] predicts token t + 1 from tokens 0 .. t. At most
    ``context_len`` positions (learned position embeddings). num_kv_heads:
    key-value heads per layer (None = num_heads; fewer: grouped-query
    attention, 1: multi-query), so the cache holds num_kv_heads heads.
    latent_dim: multi-head latent attention in every block instead (keys
    and values from one latent of that size per position; no KVCache).
    """

    @restores_rng_on_error
    def __init__(
        self,
        vocab_size: int,
        context_len: int = 128,
        embed_dim: int = 128,
        num_heads: int = 4,
        num_layers: int = 4,
        ffn_dim: int = 512,
        num_kv_heads: int | None = None,
        latent_dim: int | None = None,
    ):
        super().__init__()
        self.vocab_size = require_int("vocab_size", vocab_size)
        self.context_len = require_int("context_len", context_len)
        for name, size in (("embed_dim", embed_dim), ("ffn_dim", ffn_dim)):
            require_int(name, size)
        require_weights_fit(
            "DecoderOnlyTransformer",
            (2 * vocab_size + context_len, embed_dim),
            blocks_weights(
                require_int("num_layers", num_layers), embed_dim, ffn_dim
            ),
        )
        self.token_embedding = nn.Embedding(vocab_size, embed_dim)
        self.position_embedding = nn.Embedding(context_len, embed_dim)
        self.blocks = nn.ModuleList(
            DecoderOnlyBlock(
                embed_dim, num_heads, ffn_dim, num_kv_heads, latent_dim
            )
            for _ in range(require_int("num_layers", num_layers))
        )
        self.norm = LayerNorm(embed_dim)
        self.head = nn.Linear(embed_dim, vocab_size, bias=False)
        for embedding in (self.token_embedding, self.position_embedding):
            nn.init.normal_(embedding.weight, std=0.02)

    def embed(self, tokens: torch.Tensor, start: int = 0) -> torch.Tensor:
        """Token plus position embeddings of tokens (B, n) at positions
        start .. start + n - 1: (B, n, embed_dim)."""
        self._check_tokens(tokens, start)
        positions = torch.arange(start, start + tokens.shape[1])
        return self.token_embedding(tokens) + self.position_embedding(
            positions.to(tokens.device)
        )

    def forward(
        self, tokens: torch.Tensor, cache: KVCache | None = None, mask=None
    ):
        """Logits (B, n, vocab_size). With a ``cache``, ``tokens`` are the
        next n positions after the len(cache) cached ones, and the cache
        grows by n (n > 1: a prefill). ``mask`` (n, n), True = keep, replaces
        the causal mask of every block (without a cache only), e.g. a
        ``sliding_window_mask(n, window=w)``."""
        self._check_cache(cache)
        if cache is None:
            x = self.embed(tokens)
            self._check_activations(tokens, tokens.shape[1])
            for block in self.blocks:
                x = block(x, mask)
        else:
            if mask is not None:
                raise ValueError(
                    "mask works without a cache only; the cached path "
                    "builds causal_mask(n_q, n_k) itself"
                )
            x = self.embed(tokens, start=len(cache))
            self._check_activations(tokens, len(cache) + tokens.shape[1])
            for layer, block in enumerate(self.blocks):
                x = block.forward_cached(x, cache, layer)
        return self.head(self.norm(x))

    def new_cache(self) -> KVCache:
        return KVCache(len(self.blocks))

    def loss(self, inputs: torch.Tensor, targets: torch.Tensor):
        """Mean cross-entropy in nats of predicting targets (B, n) from
        inputs (B, n)."""
        self._check_targets(inputs, targets)
        logits = self(inputs)
        return F.cross_entropy(logits.flatten(0, 1), targets.flatten())

    @torch.no_grad()
    def generate(
        self,
        tokens: torch.Tensor,
        max_new_tokens: int,
        temperature=1.0,
        top_k=None,
        top_p=None,
        generator=None,
        use_cache: bool = True,
    ) -> torch.Tensor:
        """tokens (B, n) followed by max_new_tokens sampled ones: (B, n +
        max_new_tokens).

        Each step samples from the last position's logits with
        ``sample_next_token`` (greedy at temperature 0; else ``generator``
        is required). With ``use_cache`` the prompt is prefilled once and
        each step feeds one token. Positions are absolute, so a full cache
        cannot slide: once the sequence is longer than ``context_len``, each
        step runs the last ``context_len`` tokens again, with or without the
        cache (so both give the same tokens).
        """
        require_int("max_new_tokens", max_new_tokens, minimum=0)
        check_sampling(temperature, top_k, top_p)
        require_generator("generator", generator, allow_none=temperature == 0)
        if not isinstance(use_cache, bool):
            raise TypeError(f"use_cache must be a bool, got {use_cache!r}")
        self._check_tokens(tokens, 0, crop=True)
        if tokens.shape[1] == 0:
            raise ValueError("tokens must hold at least one token per row")
        require_matrix_fits(
            "the generated tokens",
            (tokens.shape[0], tokens.shape[1] + max_new_tokens),
            tokens.dtype,
            hint="generate fewer tokens or",
        )
        cache = self.new_cache() if use_cache else None
        for _ in range(max_new_tokens):
            logits = self._last_logits(tokens, cache)
            new = sample_next_token(
                logits, temperature, top_k, top_p, generator
            )
            tokens = torch.cat([tokens, new[:, None]], dim=1)
        return tokens

    def _last_logits(self, tokens, cache: KVCache | None) -> torch.Tensor:
        """Logits (B, vocab_size) for the token after tokens (B, n).

        With a cache, only the positions it lacks are fed: the whole prompt
        the first time (the prefill), then one token per step. Past
        ``context_len`` the last ``context_len`` tokens are run again.
        """
        if cache is None or tokens.shape[1] > self.context_len:
            return self(tokens[:, -self.context_len :])[:, -1]
        return self(tokens[:, len(cache) :], cache)[:, -1]

    def _check_activations(self, tokens, n_keys: int) -> None:
        """The numbers a forward pass computes for tokens (B, n) attending
        to n_keys positions, about 19 E + 2 ffn_dim + 3 h n_keys a token and
        layer (norms, projections, scores, weights, feed-forward) plus the
        embeddings and logits, within the memory limit. Without autograd
        one layer's are alive at a time."""
        embed_dim = self.token_embedding.embedding_dim
        per_layer = [
            19 * embed_dim
            + 2 * block.ffn.linear1.out_features
            + 3 * block.self_attn.num_heads * n_keys
            for block in self.blocks
        ]
        layers = sum(per_layer) if torch.is_grad_enabled() else max(per_layer)
        per_token = 8 * embed_dim + self.vocab_size + layers
        numbers, dtype = tokens.numel() * per_token, self.head.weight.dtype
        require_activations_fit("tokens", tokens, numbers, dtype, "a forward")

    def _check_cache(self, cache) -> None:
        if cache is not None and len(require_kv_cache(cache).keys) != len(
            self.blocks
        ):
            raise ValueError(
                f"cache has {len(cache.keys)} layers, the model "
                f"{len(self.blocks)}: use model.new_cache()"
            )

    def _check_targets(self, inputs, targets) -> None:
        """inputs valid tokens (B, n), n >= 1; targets ids of their shape."""
        self._check_tokens(inputs, 0)
        if inputs.numel() == 0:
            raise ValueError(
                f"inputs of shape {tuple(inputs.shape)} hold no token: the "
                "mean loss over nothing is undefined"
            )
        require_ids("targets", targets, self.vocab_size)
        if targets.shape != inputs.shape:
            raise ValueError(
                f"targets must have the shape of inputs "
                f"{tuple(inputs.shape)}, got {tuple(targets.shape)}"
            )
        if targets.dtype != torch.int64:
            raise TypeError(f"targets must be int64, got {targets.dtype}")

    def _check_tokens(self, tokens, start: int, crop: bool = False) -> None:
        require_int("start", start, minimum=0)
        require_tensor("tokens", tokens)
        if tokens.dtype != torch.int64:
            raise TypeError(f"tokens must be int64, got {tokens.dtype}")
        if tokens.dim() != 2:
            raise ValueError(
                f"tokens must have shape (B, n), got {tuple(tokens.shape)}"
            )
        if not crop and start + tokens.shape[1] > self.context_len:
            raise ValueError(
                f"positions {start} .. {start + tokens.shape[1] - 1} exceed "
                f"the context length {self.context_len}"
            )
        if tokens.numel() and (
            tokens.min() < 0 or tokens.max() >= self.vocab_size
        ):
            raise ValueError(
                f"token ids must be in [0, {self.vocab_size}), got "
                f"{tokens.min().item()} .. {tokens.max().item()}"
            )
