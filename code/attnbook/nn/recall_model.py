"""One small causal language model, six ways of mixing tokens: chapter 18's
recall lab.

    tokens (B, n) -> token embedding = x_0
                  -> per layer l (pre-LayerNorm):
                       u = short_conv_l(LN(x_l))   causal, depthwise, width 2
                       x = x_l + mixer_l(u)         the one thing that varies
                       x_{l+1} = x + MLP_l(LN(x))   GELU, 4 x width
                  -> LN -> linear unembedding -> logits (B, n, vocab_size)

``mixers`` names each layer's token mixer:

- "softmax": causal softmax attention (the book's ``attention`` with
  ``causal_mask``); its memory is the whole key-value cache.
- "sliding_window": the same inside the last ``window`` positions
  (``sliding_window_mask``): a cache of fixed size.
- "linear": causal linear attention (``linear_attention``, feature map
  elu + 1, normalised): a state of d_k x d_v numbers per head.
- "deltanet": the delta rule (``delta_rule``, chunked), queries and keys
  L2-normalised, a write strength beta_t = sigmoid(w_beta . u_t) per head.
- "gated_deltanet": the same with a forgetting gate g_t =
  sigmoid(w_g . u_t + b_g) per head (b_g starts at 3, g near 0.95).

The short convolution (each channel mixes the token with the one before
it) is there because the task needs it: a value must be bound to the key
just before it, and none of the fixed-state mixers sees positions. Every
model has it, softmax included, so the mixers are compared at matched
sizes (Zoology and Based give their recurrent layers such convolutions).
No position embedding: the mask and the convolution are the only order.
"""

import torch
import torch.nn.functional as F
from torch import nn

from .._checks import (
    require_float,
    require_ids,
    require_int,
    require_module_dtype,
    require_same_dtype,
)
from .._memory import require_weights_fit
from .._random import restores_rng_on_error
from ..core.attention import attention
from ..core.delta_rule import delta_rule
from ..core.linear_attention import linear_attention
from ..core.masking import causal_mask, sliding_window_mask
from .multihead import merge_heads, split_heads

MIXERS = ("softmax", "sliding_window", "linear", "deltanet", "gated_deltanet")
FIXED_STATE = ("linear", "deltanet", "gated_deltanet")


class ShortConv(nn.Module):
    """A causal depthwise convolution of ``width`` taps: out_t = sum_j
    w_j * x_{t-j} per channel. x (B, n, dim) -> (B, n, dim)."""

    @restores_rng_on_error
    def __init__(self, dim: int, width: int = 2):
        super().__init__()
        require_int("dim", dim)
        self.width = require_int("width", width)
        require_weights_fit(
            f"ShortConv (dim={dim}, width={width})", (dim, width)
        )
        self.conv = nn.Conv1d(dim, dim, width, groups=dim, bias=False)
        with torch.no_grad():  # start as the identity plus a little past
            self.conv.weight.zero_()
            self.conv.weight[:, 0, -1] = 1.0
            self.conv.weight[:, 0, :-1] = 0.5

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        _require_sequence("x", x, self.conv.in_channels)
        require_module_dtype(self, x=x)
        padded = F.pad(x.transpose(1, 2), (self.width - 1, 0))
        return self.conv(padded).transpose(1, 2)


class TokenMixer(nn.Module):
    """One layer's token mixer, ``kind`` one of ``MIXERS``.

    x (B, n, dim) -> (B, n, dim): queries, keys and values are linear maps
    of x split into ``num_heads`` heads, queries and keys of ``key_dim``
    features each (dim // num_heads when None), values of dim // num_heads;
    the mixer combines them causally; the heads are merged and projected.
    A fixed-state mixer's state is num_heads x key_dim x dim // num_heads.
    """

    @restores_rng_on_error
    def __init__(
        self,
        kind: str,
        dim: int,
        num_heads: int,
        window: int = 16,
        chunk_size: int = 16,
        key_dim: int | None = None,
    ):
        super().__init__()
        _check_mixers((kind,))
        _check_sizes(dim, num_heads, window, chunk_size, key_dim)
        self.kind, self.num_heads = kind, num_heads
        self.window, self.chunk_size = window, chunk_size
        self.key_dim = key_dim or dim // num_heads
        self.qk = nn.Linear(dim, 2 * num_heads * self.key_dim, bias=False)
        self.v = nn.Linear(dim, dim, bias=False)
        self.out = nn.Linear(dim, dim, bias=False)
        if kind in ("deltanet", "gated_deltanet"):
            self.beta = nn.Linear(dim, num_heads)
        if kind == "gated_deltanet":
            self.gate = nn.Linear(dim, num_heads)
            nn.init.constant_(self.gate.bias, 3.0)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        _require_sequence("x", x, self.v.in_features)
        require_module_dtype(self, x=x)
        q, k = (
            split_heads(part, self.num_heads)
            for part in self.qk(x).chunk(2, dim=-1)
        )  # each (B, h, n, key_dim)
        v = split_heads(self.v(x), self.num_heads)  # (B, h, n, d_h)
        return self.out(merge_heads(self._mixed(x, q, k, v)))

    def mix(self, x, q, k, v) -> torch.Tensor:
        """The heads' outputs (B, h, n, d_h) from the layer input x
        (B, n, dim), q, k (B, h, n, key_dim) and v (B, h, n, d_h), after
        checking them (``_mixed`` is the computation)."""
        self._check_heads(x, q, k, v)
        return self._mixed(x, q, k, v)

    def _mixed(self, x, q, k, v) -> torch.Tensor:
        """What each kind of mixer computes (``mix`` without the checks)."""
        n = q.shape[-2]
        if self.kind == "softmax":
            return attention(q, k, v, mask=causal_mask(n))[0]
        if self.kind == "sliding_window":
            mask = sliding_window_mask(n, window=self.window)
            return attention(q, k, v, mask=mask)[0]
        if self.kind == "linear":
            return linear_attention(q, k, v, causal=True)
        q, k = F.normalize(q, dim=-1), F.normalize(k, dim=-1)
        beta = torch.sigmoid(self.beta(x)).transpose(1, 2)  # (B, h, n)
        gate = None
        if self.kind == "gated_deltanet":
            gate = torch.sigmoid(self.gate(x)).transpose(1, 2)
        return delta_rule(q, k, v, beta, gate=gate, chunk_size=self.chunk_size)

    def _check_heads(self, x, q, k, v) -> None:
        _require_sequence("x", x, self.v.in_features)
        batch, n = x.shape[:2]
        head = self.v.in_features // self.num_heads
        for name, value, size in (
            ("q", q, self.key_dim),
            ("k", k, self.key_dim),
            ("v", v, head),
        ):
            require_float(name, value)
            if tuple(value.shape) != (batch, self.num_heads, n, size):
                raise ValueError(
                    f"{name} must have shape ({batch}, {self.num_heads}, {n}, "
                    f"{size}), got {tuple(value.shape)}"
                )
        require_same_dtype(x=x, q=q, k=k, v=v)

    def state_numbers(self, n: int) -> int:
        """How many numbers this mixer keeps per sequence after n tokens:
        the key-value cache, n (num_heads key_dim + dim) (softmax), the
        same for min(n, window) tokens (the window), or num_heads key_dim
        d_h (the fixed-state mixers)."""
        require_int("n", n, minimum=0)
        dim, keys = self.v.in_features, self.num_heads * self.key_dim
        if self.kind == "softmax":
            return n * (keys + dim)
        if self.kind == "sliding_window":
            return min(n, self.window) * (keys + dim)
        return keys * dim // self.num_heads


class Block(nn.Module):
    """x + mixer(conv(LN(x))), then + MLP(LN(.)): (B, n, dim) -> same."""

    @restores_rng_on_error
    def __init__(self, kind: str, dim: int, num_heads: int, **mixer_options):
        super().__init__()
        _check_sizes(dim, num_heads)
        self.norm1, self.norm2 = nn.LayerNorm(dim), nn.LayerNorm(dim)
        self.conv = ShortConv(dim)
        self.mixer = TokenMixer(kind, dim, num_heads, **mixer_options)
        self.mlp = nn.Sequential(
            nn.Linear(dim, 4 * dim), nn.GELU(), nn.Linear(4 * dim, dim)
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        _require_sequence("x", x, self.conv.conv.in_channels)
        require_module_dtype(self, x=x)
        x = x + self.mixer(self.conv(self.norm1(x)))
        return x + self.mlp(self.norm2(x))


class RecallModel(nn.Module):
    """A causal model whose layer l mixes tokens with ``mixers[l]``.

    tokens (B, n) int64 in [0, vocab_size) -> logits (B, n, vocab_size);
    logits[:, t] predicts token t + 1 from tokens 0 .. t. dim must be a
    multiple of num_heads; window: the sliding window's width in tokens;
    chunk_size: the chunk of the chunked delta rule; key_dim: the query
    and key features per head (dim // num_heads when None), which sets the
    fixed-state mixers' state size.
    """

    @restores_rng_on_error
    def __init__(
        self,
        mixers,
        vocab_size: int,
        dim: int,
        num_heads: int = 2,
        window: int = 16,
        chunk_size: int = 16,
        key_dim: int | None = None,
    ):
        super().__init__()
        mixers = _check_mixers(mixers)
        self.vocab_size = require_int("vocab_size", vocab_size)
        _check_sizes(dim, num_heads, window, chunk_size, key_dim)
        require_weights_fit(
            f"the embeddings (vocab_size={vocab_size})", (2 * vocab_size, dim)
        )
        self.mixers = mixers
        self.embedding = nn.Embedding(vocab_size, dim)
        options = {
            "window": window,
            "chunk_size": chunk_size,
            "key_dim": key_dim,
        }
        self.blocks = nn.ModuleList(
            Block(kind, dim, num_heads, **options) for kind in mixers
        )
        self.norm = nn.LayerNorm(dim)
        self.unembed = nn.Linear(dim, vocab_size, bias=False)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        require_ids("tokens", tokens, self.vocab_size, dims=2)
        if tokens.shape[1] == 0:
            raise ValueError("tokens must hold at least one position, got 0")
        x = self.embedding(tokens)
        for block in self.blocks:
            x = block(x)
        return self.unembed(self.norm(x))

    def state_numbers(self, n: int) -> int:
        """Numbers the mixers keep per sequence after n tokens, all layers
        together (what must stay in memory to go on generating)."""
        require_int("n", n, minimum=0)
        return sum(block.mixer.state_numbers(n) for block in self.blocks)


def _check_mixers(mixers) -> tuple:
    if isinstance(mixers, str) or not isinstance(mixers, (tuple, list)):
        raise TypeError(
            "mixers must be a tuple or list of mixer names, one per layer, "
            f"got {type(mixers).__name__}"
        )
    if not mixers:
        raise ValueError("mixers must name at least one layer")
    for kind in mixers:
        if kind not in MIXERS:
            raise ValueError(
                f"each mixer must be one of {MIXERS}, got {kind!r:.40}"
            )
    return tuple(mixers)


def _check_sizes(dim, num_heads, window=1, chunk_size=1, key_dim=None):
    for name, value in (
        ("dim", dim),
        ("num_heads", num_heads),
        ("window", window),
        ("chunk_size", chunk_size),
    ):
        require_int(name, value)
    if key_dim is not None:
        require_int("key_dim", key_dim)
    if dim % num_heads:
        raise ValueError(
            f"dim ({dim}) must be a multiple of num_heads ({num_heads})"
        )
    keys = num_heads * (key_dim or dim // num_heads)
    require_weights_fit(
        f"the model (dim={dim}, key_dim={key_dim})", (dim, 4 * dim + 2 * keys)
    )


def _require_sequence(name: str, x, dim: int) -> None:
    require_float(name, x)
    if x.dim() != 3 or x.shape[-1] != dim:
        raise ValueError(
            f"{name} must have shape (batch, n, {dim}), got {tuple(x.shape)}"
        )
