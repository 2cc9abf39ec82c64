"""One small causal Transformer, five ways of telling it where tokens are:
chapter 15's length-generalisation lab.

    tokens (B, n) -> token embedding (+ a position vector: "sinusoidal",
                     "learned") = x_0
                  -> x_{l+1} = x_l + attention_l(x_l), causal; RoPE turns
                     each head's queries and keys ("rope"), ALiBi adds
                     -m_h * distance to head h's scores ("alibi"), "nope"
                     adds nothing
                  -> linear unembedding -> logits (B, n, vocab_size)

The model is chapter 14's attention-only Transformer (no MLP, no
LayerNorm) with the position scheme as its one difference, so that the
schemes are compared at matched sizes, data and training.

- "sinusoidal": ``sinusoidal_encoding`` times one learned number, starting
  at 0.2. (Trials with seed 0, 1,000 steps: started at 1, the sinusoid's own
  size, or at 0.028, the size of the learned table's entries, the loss was
  still above 3 nats; started at 0.2, it was falling fast, 2.7.)
- "learned": a table of ``max_len`` rows. Training at n positions updates
  rows 0 .. n - 1 only; the others keep their random initial values.
- "alibi", "nope", "rope": no position vector and no position parameter, so
  any length runs.
"""

import math

import torch
from torch import nn

from .._checks import require_finite_number, require_ids, require_int
from .._memory import require_matrix_fits, require_weights_fit
from .._random import restores_rng_on_error
from ..core.long_context import (
    YARN_ALPHA,
    YARN_BETA,
    alibi_bias,
    rope_frequencies,
)
from ..core.masking import causal_mask
from ..core.positional import sinusoidal_encoding
from ..core.rotary import rotate_pairs
from .multihead import merge_heads, split_heads

SCHEMES = ("sinusoidal", "learned", "alibi", "nope", "rope")


class PositionSchemeTransformer(nn.Module):
    """An attention-only causal Transformer with one position scheme.

    tokens (B, n) int64 in [0, vocab_size), n <= max_len -> logits
    (B, n, vocab_size); logits[:, t] predicts token t + 1 from tokens
    0 .. t. ``scheme`` is one of ``SCHEMES``; ``rope_base``: RoPE's base.
    ``set_rope_scaling`` changes a "rope" model's frequencies (position
    interpolation, NTK-aware, YaRN) without touching its weights.
    """

    @restores_rng_on_error
    def __init__(
        self,
        scheme: str,
        vocab_size: int,
        embed_dim: int,
        num_heads: int,
        num_layers: int,
        max_len: int = 512,
        rope_base: float = 10000.0,
    ):
        super().__init__()
        if scheme not in SCHEMES:
            raise ValueError(
                f"scheme must be one of {SCHEMES}, got {scheme!r:.40}"
            )
        self.scheme = scheme
        self.vocab_size = require_int("vocab_size", vocab_size)
        self.max_len = require_int("max_len", max_len)
        require_int("embed_dim", embed_dim)
        self.num_heads = require_int("num_heads", num_heads)
        self.num_layers = require_int("num_layers", num_layers)
        if embed_dim % num_heads or (embed_dim // num_heads) % 2:
            raise ValueError(
                f"embed_dim ({embed_dim}) must be num_heads ({num_heads}) "
                "times an even head size"
            )
        # each layer: 4 d x d attention maps and a 4d-wide feed-forward
        require_weights_fit(
            "PositionSchemeTransformer",
            (vocab_size + max_len, embed_dim),
            (num_layers, 12 * embed_dim, embed_dim),
        )
        self.head_dim = embed_dim // num_heads
        self.rope_base = float(
            require_finite_number(
                "rope_base", rope_base, low=1.0, high=1e12, include_low=False
            )
        )
        self.token_embedding = nn.Embedding(vocab_size, embed_dim)
        nn.init.normal_(self.token_embedding.weight, std=0.02)
        if scheme == "learned":
            self.position_embedding = nn.Embedding(max_len, embed_dim)
            nn.init.normal_(self.position_embedding.weight, std=0.02)
        if scheme == "sinusoidal":
            self.register_buffer(
                "sinusoid",
                sinusoidal_encoding(max_len, embed_dim),
                persistent=False,
            )
            self.sinusoid_scale = nn.Parameter(torch.tensor(0.2))
        self.qkv = nn.ModuleList(
            nn.Linear(embed_dim, 3 * embed_dim, bias=False)
            for _ in range(num_layers)
        )
        self.out = nn.ModuleList(
            nn.Linear(embed_dim, embed_dim, bias=False)
            for _ in range(num_layers)
        )
        self.unembed = nn.Linear(embed_dim, vocab_size, bias=False)
        self.rope_scaling = (None, 1.0, None)
        self.register_buffer(
            "frequencies",
            rope_frequencies(self.head_dim, self.rope_base),
            persistent=False,
        )
        self.query_key_scale = 1.0

    def set_rope_scaling(
        self,
        scaling=None,
        factor: float = 1.0,
        original_context=None,
        *,
        alpha: float = YARN_ALPHA,
        beta: float = YARN_BETA,
    ) -> None:
        """Use ``rope_frequencies(head_dim, rope_base, scaling, factor)``
        from now on ("yarn" also multiplies queries and keys by
        ``yarn_attention_scale(factor)``; alpha, beta: its ramp, by default
        the paper's values for LLaMA). scaling=None restores RoPE."""
        from ..core.long_context import yarn_attention_scale

        if self.scheme != "rope":
            raise ValueError(
                f"set_rope_scaling needs a 'rope' model, this one is "
                f"{self.scheme!r}"
            )
        extra = (
            {
                "original_context": original_context,
                "alpha": alpha,
                "beta": beta,
            }
            if scaling == "yarn"
            else {}
        )
        self.frequencies = rope_frequencies(
            self.head_dim, self.rope_base, scaling, factor, **extra
        )
        self.query_key_scale = (
            yarn_attention_scale(factor) if scaling == "yarn" else 1.0
        )
        self.rope_scaling = (scaling, float(factor), original_context)

    def embed(self, tokens: torch.Tensor) -> torch.Tensor:
        """x_0 (B, n, embed_dim): token embedding plus, for the absolute
        schemes, the position vector of positions 0 .. n - 1."""
        self._check_tokens(tokens)
        x = self.token_embedding(tokens)
        n = tokens.shape[1]
        if self.scheme == "learned":
            x = x + self.position_embedding.weight[:n]
        elif self.scheme == "sinusoidal":
            x = x + self.sinusoid_scale * self.sinusoid[:n]
        return x

    def _check_tokens(self, tokens) -> None:
        """tokens (B, n): ids below vocab_size, n at most max_len."""
        require_ids("tokens", tokens, self.vocab_size, dims=2)
        n = tokens.shape[1]
        if n > self.max_len:
            raise ValueError(
                f"tokens has {n} positions, more than max_len = {self.max_len}"
            )

    def score_bias(self, n: int, dtype) -> torch.Tensor:
        """What is added to every head's scores: ALiBi's biases (h, n, n),
        or 0 / -inf for the causal mask (n, n)."""
        if self.scheme == "alibi":
            return alibi_bias(self.num_heads, n, dtype=dtype)
        keep = causal_mask(n)
        return torch.zeros(n, n, dtype=dtype).masked_fill(~keep, -math.inf)

    def forward(
        self,
        tokens: torch.Tensor,
        return_weights: bool = False,
        window: int | None = None,
        clamp: int | None = None,
        score_scale: float = 1.0,
    ):
        """Logits (B, n, vocab_size); with return_weights also every
        layer's attention weights (num_layers, B, num_heads, n, n).

        Three interventions, none of which changes a weight:
        window: every query sees only its last ``window`` keys (itself
        included): hides the far keys, leaves every position where it is.
        clamp ("rope" only): every key stays visible, but a key more than
        ``clamp`` back is turned as if it were exactly ``clamp`` back
        (ReRoPE's rule): no rotation angle beyond clamp * theta_p.
        score_scale: multiplies every score (a temperature 1/score_scale).
        """
        self._check_tokens(tokens)
        n = tokens.shape[1]
        require_finite_number("score_scale", score_scale, low=0.0, high=1e4)
        require_matrix_fits(
            "the attention weights",
            (tokens.shape[0], self.num_heads, n, n),
            torch.float32,
            hint="use fewer sequences, or",
        )
        if clamp is not None:
            require_int("clamp", clamp)
            if self.scheme != "rope":
                raise ValueError(
                    f"clamp needs a 'rope' model, this one is {self.scheme!r}"
                )
        x = self.embed(tokens)
        bias = self.score_bias(n, x.dtype)
        if window is not None:
            require_int("window", window)
            far = torch.ones(n, n, dtype=torch.bool).tril(-window)
            bias = bias.masked_fill(far, -math.inf)
        positions = torch.arange(n)
        all_weights = []
        for qkv, out in zip(self.qkv, self.out):
            q, k, v = (
                split_heads(part, self.num_heads)
                for part in qkv(x).chunk(3, dim=-1)
            )  # each (B, h, n, d_k)
            if self.scheme == "rope":
                scores = self._rope_scores(q, k, positions, clamp)
            else:
                scores = q @ k.transpose(-2, -1) / math.sqrt(self.head_dim)
            weights = torch.softmax(score_scale * scores + bias, dim=-1)
            x = x + out(merge_heads(weights @ v))
            all_weights.append(weights)
        logits = self.unembed(x)
        if return_weights:
            return logits, torch.stack(all_weights)
        return logits

    def _rope_scores(self, q, k, positions, clamp):
        """RoPE's scores (B, h, n, n); with clamp, a key more than clamp
        back scores as if it were exactly clamp back."""
        size, root = self.query_key_scale, math.sqrt(self.head_dim)
        turned_q = rotate_pairs(q, positions, self.frequencies) * size
        turned_k = rotate_pairs(k, positions, self.frequencies) * size
        scores = turned_q @ turned_k.transpose(-2, -1) / root
        if clamp is None:
            return scores
        # q turned by clamp, k not turned: the angle of distance clamp
        at_clamp = torch.full_like(positions, clamp)
        far_q = rotate_pairs(q, at_clamp, self.frequencies) * size
        far_scores = far_q @ (k * size).transpose(-2, -1) / root
        distance = positions[:, None] - positions
        return torch.where(distance > clamp, far_scores, scores)
