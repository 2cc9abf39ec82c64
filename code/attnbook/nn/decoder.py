"""The Transformer decoder: causal self-attention, cross-attention, generation.

One decoder block is post-norm, like the book's encoder block
(``attnbook.nn.encoder``):

    a = LayerNorm(x + Dropout(SelfAttn(x, x, x, causal mask)))
    b = LayerNorm(a + Dropout(CrossAttn(a, memory, memory, mask)))
    y = LayerNorm(b + Dropout(FFN(b)))

The self-attention is masked (causal); in the cross-attention the queries come
from the decoder and the keys and values from the encoder's output (memory).

Parameters mirror ``torch.nn.TransformerDecoderLayer`` (``self_attn``,
``multihead_attn`` is called ``cross_attn`` here, ``linear1``, ``linear2``,
``norm1..3``), so its weights copy across with ``load_torch_weights``. Masks
follow the book's rule: boolean, True = keep.

Generation is greedy and autoregressive: ``EncoderDecoderTransformer.generate``
either re-runs the decoder over the whole prefix at every step
(``use_cache=False``) or keeps a key-value cache (``use_cache=True``): each
step then projects only the new position and appends its keys and values to a
``KVCache`` (``attnbook.nn.kv_cache``, the language model's cache too), and the
cross-attention keys and values of the memory are computed once. The step
reads with the core ``attention``, like ``forward``.
"""

import torch
from torch import nn

from .._checks import (
    compute_dtype,
    require_bool_mask,
    require_flag,
    require_float,
    require_ids,
    require_int,
    require_int_in,
    require_module_dtype,
    require_probability,
    require_same_size,
    require_tensor,
)
from .._memory import require_matrix_fits, require_weights_fit
from .._random import restores_rng_on_error
from ..core.attention import attention
from ..core.masking import causal_mask
from ..core.positional import PositionalEncoding
from .encoder import (
    LayerNorm,
    PositionWiseFFN,
    TransformerEncoder,
    blocks_weights,
    check_torch_layer,
)
from .kv_cache import KVCache, require_kv_cache
from .multihead import (
    MultiHeadAttention,
    merge_heads,
    require_multihead_mask,
    split_heads,
)


def _project_heads(mha: MultiHeadAttention, x: torch.Tensor):
    """x (B, n, E) -> q, k, v of self-attention, each split into heads
    (B, h, n, d_k), with ``mha``'s own projection."""
    return (split_heads(t, mha.num_heads) for t in mha.project(x, x, x))


def _check_mask(name: str, mask, n_q: int, n_k: int) -> None:
    if mask is None:
        return
    require_tensor(name, mask)
    if mask.dim() == 2 and tuple(mask.shape) != (n_q, n_k):
        raise ValueError(
            f"a 2-D {name} must be (n_q, n_k) = ({n_q}, {n_k}), got "
            f"{tuple(mask.shape)}; for a key-padding "
            f"mask keep of shape (B, n_k) pass keep[:, None, None, :]"
        )


def _check_heads(
    name, tensor, x, heads, head_dim, n, hint, allow_none=False
) -> None:
    """tensor: (B, h, n, d_k) of x's dtype and device, for the new
    position x (B, 1, E) of a block with h heads of size d_k (or None if
    ``allow_none``); a clear ValueError naming ``name`` otherwise."""
    if tensor is None and allow_none:
        return
    require_tensor(name, tensor)
    if (
        tensor.dim() != 4
        or tuple(tensor.shape[:2]) != heads
        or tensor.shape[-1] != head_dim
        or tensor.dtype != x.dtype
        or tensor.device != x.device
    ):
        raise ValueError(
            f"{name} must be (B, h, {n}, d_k) = ({heads[0]}, {heads[1]}, "
            f"{n}, {head_dim}) of {x.dtype} on {x.device} for this step's x "
            f"{tuple(x.shape)}; got {tuple(tensor.shape)} of {tensor.dtype} "
            f"on {tensor.device} {hint}"
        )


class TransformerDecoderBlock(nn.Module):
    """One post-norm Transformer decoder block: masked self-attention,
    cross-attention, FFN.

    x: (B, n, embed_dim) the decoder's inputs (target tokens so far);
    memory: (B, n_src, embed_dim) the encoder's output.
    self_mask: boolean, True = keep, broadcastable to the self-attention
    weights (B, num_heads, n, n); usually ``causal_mask(n)``.
    memory_mask: boolean, True = keep, broadcastable to the cross-attention
    weights (B, num_heads, n, n_src); a key-padding mask ``keep`` (B, n_src) is
    passed as ``keep[:, None, None, :]``. Sub-modules: ``self_attn``,
    ``cross_attn`` (attnbook.MultiHeadAttention), ``norm1``, ``norm2``,
    ``norm3`` (LayerNorm), ``ffn`` (PositionWiseFFN with ``linear1``,
    ``linear2``).

    Generation with a key-value cache: ``step(x, cache, layer, memory_kv,
    memory_mask)`` takes x (B, 1, d_model), the block's input at the new
    position only. ``cache`` is a ``KVCache`` (the language model's, chapter
    12) and ``layer`` this block's index in it: the cache's keys and values
    of ``layer`` (B, h, t, d_k) hold the self-attention keys and values of
    the t earlier positions and gain the new position's (only once the step
    has passed its checks). memory_kv is ``memory_keys_values(memory)``,
    computed once; memory_mask is as in ``forward`` (a key-padding mask
    (B, 1, 1, n_src)). It returns (y (B, 1, d_model), self_weights
    (B, h, 1, t + 1), cross_weights (B, h, 1, n_src)). No causal mask is
    needed: the cache holds the past only. Generation runs in eval mode, so
    ``step`` applies no dropout.
    """

    @restores_rng_on_error
    def __init__(
        self,
        embed_dim: int,
        num_heads: int,
        ffn_hidden: int,
        dropout: float = 0.0,
    ):
        super().__init__()
        require_int("embed_dim", embed_dim)
        require_int("num_heads", num_heads)
        require_int("ffn_hidden", ffn_hidden)
        require_weights_fit(
            "TransformerDecoderBlock",
            blocks_weights(1, embed_dim, 2 * ffn_hidden),
        )
        dropout = require_probability("dropout", dropout)
        self.self_attn = MultiHeadAttention(embed_dim, num_heads)
        self.dropout1 = nn.Dropout(dropout)
        self.norm1 = LayerNorm(embed_dim)
        self.cross_attn = MultiHeadAttention(embed_dim, num_heads)
        self.dropout2 = nn.Dropout(dropout)
        self.norm2 = LayerNorm(embed_dim)
        self.ffn = PositionWiseFFN(embed_dim, ffn_hidden, dropout)
        self.dropout3 = nn.Dropout(dropout)
        self.norm3 = LayerNorm(embed_dim)

    @property
    def embed_dim(self) -> int:
        return self.self_attn.embed_dim

    @property
    def num_heads(self) -> int:
        return self.self_attn.num_heads

    def _check(self, x, memory, self_mask, memory_mask) -> None:
        for name, tensor in (("x", x), ("memory", memory)):
            require_float(name, tensor)
            if tensor.dim() != 3:
                raise ValueError(
                    f"{name} must have shape (B, n, embed_dim), got "
                    f"{tuple(tensor.shape)}"
                )
            require_same_size(
                "feature size",
                name,
                tensor.shape[-1],
                "embed_dim",
                self.embed_dim,
            )
        require_same_size(
            "batch size", "x", x.shape[0], "memory", memory.shape[0]
        )
        _check_mask("self_mask", self_mask, x.shape[1], x.shape[1])
        _check_mask("memory_mask", memory_mask, x.shape[1], memory.shape[1])

    def forward(
        self, x, memory, self_mask=None, memory_mask=None, return_weights=False
    ):
        """Returns y (B, n, embed_dim), or (y, self_weights (B, h, n, n),
        cross_weights (B, h, n, n_src)) if ``return_weights`` is True."""
        self._check(x, memory, self_mask, memory_mask)
        attended, self_weights = self.self_attn(x, x, x, self_mask)
        x = self.norm1(x + self.dropout1(attended))
        read, cross_weights = self.cross_attn(x, memory, memory, memory_mask)
        x = self.norm2(x + self.dropout2(read))
        x = self.norm3(x + self.dropout3(self.ffn(x)))
        return (x, self_weights, cross_weights) if return_weights else x

    def memory_keys_values(self, memory: torch.Tensor):
        """The cross-attention keys and values of ``memory`` (B, n_src, E),
        each (B, h, n_src, d_k).

        They depend on the encoder's output only, so generation computes them
        once.
        """
        require_float("memory", memory)
        if memory.dim() != 3:
            raise ValueError(
                "memory must have shape (B, n_src, embed_dim), got "
                f"{tuple(memory.shape)}"
            )
        require_same_size(
            "feature size",
            "memory",
            memory.shape[-1],
            "embed_dim",
            self.embed_dim,
        )
        require_module_dtype(self, memory=memory)
        return self.cross_attn.project_keys_values(memory)

    def step(self, x, cache: KVCache, layer: int, memory_kv, memory_mask=None):
        """One generation step for x (B, 1, d_model), the new position only:
        the class docstring describes the cache, memory_kv and the results."""
        self._check_step(x, cache, layer, memory_kv, memory_mask)
        q, k, v = _project_heads(self.self_attn, x)  # the new position's
        k, v = cache.append(layer, k, v)  # the cached positions, then it
        heads, self_weights = attention(q, k, v)  # no mask: all is past
        x = self.norm1(x + self.self_attn.out_proj(merge_heads(heads)))
        q = self.cross_attn.project_query(x)
        heads, cross_weights = attention(q, *memory_kv, mask=memory_mask)
        x = self.norm2(x + self.cross_attn.out_proj(merge_heads(heads)))
        x = self.norm3(x + self.ffn(x))
        return x, self_weights, cross_weights

    def _check_step(self, x, cache, layer, memory_kv, memory_mask) -> None:
        """Everything ``step`` needs, checked before the cache grows: x
        (B, 1, d_model) of the module's dtype; the cache's ``layer`` empty
        or holding (B, h, t, d_k) keys and values of x's dtype and device;
        memory_kv a pair (B, h, n_src, d_k) of them; memory_mask a
        multi-head mask; the score matrices within the memory limit."""
        require_float("x", x)
        if x.dim() != 3 or x.shape[1] != 1:
            raise ValueError(
                "step takes the new position only: x must be (B, 1, "
                f"d_model), got {tuple(x.shape)}"
            )
        require_same_size(
            "feature size", "x", x.shape[-1], "embed_dim", self.embed_dim
        )
        require_module_dtype(self, x=x)
        require_kv_cache(cache)
        require_int_in("layer", layer, 0, len(cache.keys) - 1)
        heads = (x.shape[0], self.num_heads)
        head_dim = self.embed_dim // self.num_heads
        for name, cached in (
            ("keys", cache.keys[layer]),
            ("values", cache.values[layer]),
        ):
            _check_heads(
                f"cache.{name}[{layer}]",
                cached,
                x,
                heads,
                head_dim,
                "t",
                "(a cache from another batch or model?)",
                allow_none=True,
            )
        keys, values = cache.keys[layer], cache.values[layer]
        if (keys is None) != (values is None):
            raise ValueError(
                f"cache layer {layer} holds keys but no values, or values "
                "but no keys"
            )
        t = 0 if keys is None else keys.shape[-2]
        if keys is not None and t != values.shape[-2]:
            raise ValueError(
                f"cache holds {t} keys but {values.shape[-2]} values "
                f"in layer {layer}"
            )
        if not isinstance(memory_kv, (tuple, list)) or len(memory_kv) != 2:
            raise TypeError(
                "memory_kv must be the pair (keys, values) that "
                "memory_keys_values returns"
            )
        for name, tensor in zip(("memory keys", "memory values"), memory_kv):
            _check_heads(
                name,
                tensor,
                x,
                heads,
                head_dim,
                "n",
                "(memory_kv from memory_keys_values of this batch's memory)",
            )
        n_src = memory_kv[0].shape[-2]
        require_same_size(
            "number of keys and values",
            "memory keys",
            n_src,
            "memory values",
            memory_kv[1].shape[-2],
        )
        if memory_mask is not None:
            require_multihead_mask(
                memory_mask,
                heads[:1],
                self.num_heads,
                1,
                n_src,
                name="memory_mask",
            )
            require_bool_mask(
                memory_mask,
                torch.Size((*heads, 1, n_src)),
                "memory_mask",
                device=x.device,
            )
        work = compute_dtype(x.dtype)
        require_matrix_fits(
            "the self-attention scores", (*heads, 1, t + 1), work
        )
        require_matrix_fits(
            "the cross-attention scores", (*heads, 1, n_src), work
        )

    @torch.no_grad()
    def load_torch_weights(
        self, layer: nn.TransformerDecoderLayer
    ) -> "TransformerDecoderBlock":
        """Copy the parameters of a post-norm, ReLU
        ``torch.nn.TransformerDecoderLayer`` of the same sizes."""
        norms = check_torch_layer(
            self,
            layer,
            nn.TransformerDecoderLayer,
            ("norm1", "norm2", "norm3"),
        )
        for norm, theirs_norm in norms:
            norm.load_state_dict(theirs_norm.state_dict())
        self.self_attn.load_torch_weights(layer.self_attn)
        self.cross_attn.load_torch_weights(layer.multihead_attn)
        self.ffn.linear1.load_state_dict(layer.linear1.state_dict())
        self.ffn.linear2.load_state_dict(layer.linear2.state_dict())
        return self


class TransformerDecoder(nn.Module):
    """A stack of ``num_layers`` decoder blocks; each reads the same
    ``memory``.

    x: (B, n, E) embedded target tokens; memory: (B, n_src, E); masks as in
    ``TransformerDecoderBlock``. Returns y (B, n, E), or with
    ``return_weights`` (y, self_weights (L, B, h, n, n), cross_weights (L, B,
    h, n, n_src)).
    """

    @restores_rng_on_error
    def __init__(
        self,
        embed_dim: int,
        num_heads: int,
        ffn_hidden: int,
        num_layers: int,
        dropout: float = 0.0,
    ):
        super().__init__()
        require_int("num_layers", num_layers)
        require_int("ffn_hidden", ffn_hidden)
        require_weights_fit(
            "TransformerDecoder",
            blocks_weights(
                num_layers, require_int("embed_dim", embed_dim), 2 * ffn_hidden
            ),
        )
        self.blocks = nn.ModuleList(
            TransformerDecoderBlock(embed_dim, num_heads, ffn_hidden, dropout)
            for _ in range(num_layers)
        )

    def forward(
        self,
        x,
        memory,
        self_mask=None,
        memory_mask=None,
        return_weights: bool = False,
    ):
        self_weights, cross_weights = [], []
        for block in self.blocks:
            x, s, c = block(
                x, memory, self_mask, memory_mask, return_weights=True
            )
            self_weights.append(s)
            cross_weights.append(c)
        return (
            (x, torch.stack(self_weights), torch.stack(cross_weights))
            if return_weights
            else x
        )

    def new_cache(self) -> KVCache:
        """An empty key-value cache with one layer per block."""
        return KVCache(len(self.blocks))

    def memory_keys_values(self, memory: torch.Tensor) -> list:
        """Every block's cross-attention (keys, values) of ``memory``
        (B, n_src, E), each (B, h, n_src, d_k): computed once per input."""
        return [block.memory_keys_values(memory) for block in self.blocks]

    def step(self, x, cache: KVCache, memory_kv: list, memory_mask=None):
        """One generation step through every block, x (B, 1, E) the new
        position only; each block reads and grows its layer of ``cache``
        (``new_cache()``, empty at the first step). memory_kv:
        ``memory_keys_values(memory)``; memory_mask as in ``forward``.
        Returns (y (B, 1, E), self_weights (L, B, h, 1, t + 1),
        cross_weights (L, B, h, 1, n_src)); a refused step leaves the cache
        as it was."""
        self._check_step(x, cache, memory_kv, memory_mask)
        self_weights, cross_weights = [], []
        for layer, (block, kv) in enumerate(zip(self.blocks, memory_kv)):
            x, s, c = block.step(x, cache, layer, kv, memory_mask)
            self_weights.append(s)
            cross_weights.append(c)
        return x, torch.stack(self_weights), torch.stack(cross_weights)

    def _check_step(self, x, cache, memory_kv, memory_mask) -> None:
        """Every block's checks, before the first block's layer grows: a
        cache of L layers, L pairs of memory keys and values (x keeps its
        shape and dtype from block to block)."""
        require_kv_cache(cache)
        if not isinstance(memory_kv, (list, tuple)):
            raise TypeError(
                "memory_kv must be the list of (keys, values) pairs that "
                f"memory_keys_values returns, got {type(memory_kv).__name__}"
            )
        for name, size in (
            ("cache", len(cache.keys)),
            ("memory_kv", len(memory_kv)),
        ):
            require_same_size(
                "number of layers", name, size, "the decoder", len(self.blocks)
            )
        for layer, (block, kv) in enumerate(zip(self.blocks, memory_kv)):
            block._check_step(x, cache, layer, kv, memory_mask)

    @torch.no_grad()
    def load_torch_weights(
        self, decoder: nn.TransformerDecoder
    ) -> "TransformerDecoder":
        """Copy a ``torch.nn.TransformerDecoder`` (without a final norm)
        layer by layer."""
        if not isinstance(decoder, nn.TransformerDecoder):
            raise TypeError(
                "expected torch.nn.TransformerDecoder, got "
                f"{type(decoder).__name__}"
            )
        if decoder.norm is not None:
            raise ValueError(
                "torch decoder has a final norm; this stack has none "
                "(post-norm blocks end normalized)"
            )
        require_same_size(
            "number of layers",
            "torch decoder",
            len(decoder.layers),
            "this stack",
            len(self.blocks),
        )
        for block, layer in zip(self.blocks, decoder.layers):
            block.load_torch_weights(layer)
        return self


class EncoderDecoderTransformer(nn.Module):
    """An encoder-decoder Transformer for sequence-to-sequence tasks.

    Encoder: token embeddings + sinusoidal positions + ``TransformerEncoder``
    blocks. Decoder: target embeddings + sinusoidal positions +
    ``TransformerDecoder`` blocks (causal self-attention, cross-attention on
    the encoder's output), then a linear output layer to ``tgt_vocab_size``
    scores. Target id ``bos`` starts generation, ``eos`` ends it, ``pad`` (0)
    fills padded source positions.
    """

    @restores_rng_on_error
    def __init__(
        self,
        src_vocab_size: int,
        tgt_vocab_size: int,
        embed_dim: int = 64,
        num_heads: int = 4,
        ffn_hidden: int = 128,
        num_encoder_layers: int = 2,
        num_decoder_layers: int = 2,
        max_src_len: int = 64,
        max_tgt_len: int = 64,
        dropout: float = 0.0,
        bos: int = 1,
        eos: int = 2,
    ):
        super().__init__()
        # Every size is checked before the first module draws its initial
        # weights (a refused call leaves torch's global random state as it
        # found it).
        for name, value in (
            ("src_vocab_size", src_vocab_size),
            ("tgt_vocab_size", tgt_vocab_size),
            ("embed_dim", embed_dim),
            ("num_heads", num_heads),
            ("ffn_hidden", ffn_hidden),
            ("num_encoder_layers", num_encoder_layers),
            ("num_decoder_layers", num_decoder_layers),
            ("max_src_len", max_src_len),
            ("max_tgt_len", max_tgt_len),
        ):
            require_int(name, value)
        if embed_dim % num_heads:
            raise ValueError(
                f"embed_dim ({embed_dim}) must be divisible by num_heads ("
                f"{num_heads})"
            )
        require_probability("dropout", dropout)
        for name, value in (("bos", bos), ("eos", eos)):
            require_int(name, value, minimum=0)
        require_weights_fit(
            "EncoderDecoderTransformer's target side",
            (2 * tgt_vocab_size + max_tgt_len + 1, embed_dim),
        )
        self.encoder = TransformerEncoder(
            src_vocab_size,
            embed_dim,
            num_heads,
            ffn_hidden,
            num_encoder_layers,
            max_len=max_src_len,
            dropout=dropout,
        )
        self.tgt_vocab_size = tgt_vocab_size
        self.tgt_embedding = nn.Embedding(tgt_vocab_size, embed_dim)
        self.tgt_positions = PositionalEncoding(
            embed_dim, max_tgt_len, dropout
        )
        self.decoder = TransformerDecoder(
            embed_dim, num_heads, ffn_hidden, num_decoder_layers, dropout
        )
        self.output = nn.Linear(embed_dim, tgt_vocab_size)
        self.bos, self.eos = bos, eos  # checked above
        self.config = dict(
            src_vocab_size=src_vocab_size,
            tgt_vocab_size=tgt_vocab_size,
            embed_dim=embed_dim,
            num_heads=num_heads,
            ffn_hidden=ffn_hidden,
            num_encoder_layers=num_encoder_layers,
            num_decoder_layers=num_decoder_layers,
            max_src_len=max_src_len,
            max_tgt_len=max_tgt_len,
            dropout=dropout,
            bos=bos,
            eos=eos,
        )

    def encode(
        self, src: torch.Tensor, src_lens=None, return_weights: bool = False
    ):
        """src (B, n_src) ids, src_lens (B,) or None -> (memory (B, n_src,
        E), memory_mask (B, 1, 1, n_src) or None) [, encoder weights (L, B,
        h, n_src, n_src)]."""
        memory, weights = self.encoder(src, src_lens, return_weights=True)
        mask = None
        if src_lens is not None:
            src_lens = torch.as_tensor(src_lens, device=src.device)
            mask = (
                torch.arange(src.shape[1], device=src.device)
                < src_lens[:, None]
            )[:, None, None, :]
        return (memory, mask, weights) if return_weights else (memory, mask)

    def embed_target(self, tgt: torch.Tensor, start: int = 0) -> torch.Tensor:
        """tgt (B, n) ids at positions start..start+n-1 -> (B, n, E):
        embeddings + sinusoidal positions."""
        require_ids("tgt", tgt, self.tgt_vocab_size, dims=2)
        require_int("start", start, minimum=0)
        end = start + tgt.shape[1]
        if end > self.tgt_positions.max_len:
            raise ValueError(
                f"target position {end} exceeds max_tgt_len "
                f"{self.tgt_positions.max_len}"
            )
        return self._embed(tgt, start)

    def _embed(self, tgt: torch.Tensor, start: int = 0) -> torch.Tensor:
        """``embed_target`` without the input checks (generation feeds it
        its own argmax ids)."""
        return self.tgt_positions.dropout(
            self.tgt_embedding(tgt)
            + self.tgt_positions.encoding[start : start + tgt.shape[1]]
        )

    def decode(self, tgt_in, memory, memory_mask=None, return_weights=False):
        """Teacher forcing: every target position in one causally masked pass.

        tgt_in (B, n) = BOS + the target shifted right -> logits
        (B, n, tgt_vocab_size) [, self_weights (L, B, h, n, n),
        cross_weights (L, B, h, n, n_src)].
        """
        x = self.embed_target(tgt_in)
        mask = causal_mask(tgt_in.shape[1], device=tgt_in.device)
        out = self.decoder(x, memory, mask, memory_mask, return_weights)
        if not return_weights:
            return self.output(out)
        return self.output(out[0]), out[1], out[2]

    def forward(
        self, src: torch.Tensor, src_lens, tgt_in: torch.Tensor
    ) -> torch.Tensor:
        """src (B, n_src), src_lens (B,), tgt_in (B, n) -> logits (B, n,
        tgt_vocab_size)."""
        memory, mask = self.encode(src, src_lens)
        return self.decode(tgt_in, memory, mask)

    @torch.inference_mode()
    def generate(
        self,
        src: torch.Tensor,
        src_lens=None,
        max_len: int = 16,
        use_cache: bool = True,
        stop_at_eos: bool = True,
        return_weights: bool = False,
    ):
        """Greedy decoding: start from BOS, append the most probable token,
        repeat.

        src (B, n_src), src_lens (B,) or None. Generates up to ``max_len``
        tokens; with ``stop_at_eos`` it stops once every sequence has produced
        EOS (later tokens of a finished sequence are set to EOS). Returns
        tokens (B, T) without the BOS, and with ``return_weights`` also
        cross_weights (L, B, h, T, n_src) of every step. ``use_cache=False``
        re-runs the decoder over the whole prefix at each step;
        ``use_cache=True`` keeps each layer's self-attention keys and values
        and computes the memory's cross-attention keys and values once: the
        same tokens, far less work.
        """
        require_int("max_len", max_len)
        if (
            max_len > self.tgt_positions.max_len
        ):  # step t reads target position t (BOS is position 0)
            raise ValueError(
                f"max_len ({max_len}) must be at most max_tgt_len ("
                f"{self.tgt_positions.max_len}): "
                f"the decoder has no positional encoding beyond that"
            )
        for name, flag in (
            ("use_cache", use_cache),
            ("stop_at_eos", stop_at_eos),
            ("return_weights", return_weights),
        ):
            require_flag(name, flag)
        memory, mask = self.encode(src, src_lens)
        batch = src.shape[0]
        tokens = torch.full(
            (batch, 1), self.bos, dtype=torch.long, device=src.device
        )
        finished = torch.zeros(batch, dtype=torch.bool, device=src.device)
        steps_weights = []
        if use_cache:
            cache = self.decoder.new_cache()
            memory_kv = self.decoder.memory_keys_values(memory)
        for t in range(max_len):
            if use_cache:
                x = self._embed(tokens[:, -1:], start=t)
                x, _, cross = self.decoder.step(x, cache, memory_kv, mask)
                logits = self.output(x[:, -1])  # cross (L, B, h, 1, n_src)
            else:
                x = self._embed(tokens)
                x, _, cross = self.decoder(
                    x,
                    memory,
                    causal_mask(t + 1, device=src.device),
                    mask,
                    return_weights=True,
                )
                logits = self.output(x[:, -1])
                cross = cross[..., -1:, :]
            next_token = logits.argmax(dim=-1)
            if stop_at_eos:
                next_token = next_token.masked_fill(finished, self.eos)
            tokens = torch.cat([tokens, next_token[:, None]], dim=1)
            steps_weights.append(cross)
            if stop_at_eos:
                finished |= next_token == self.eos
                if finished.all():
                    break
        out = tokens[:, 1:]
        return (
            (out, torch.cat(steps_weights, dim=-2)) if return_weights else out
        )
