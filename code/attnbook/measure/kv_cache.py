"""The bytes a key-value cache holds, counted from the shapes of its tensors.

A decoder that generates with a cache keeps, in every layer, the keys and the
values of every earlier position: two tensors of shape (batch, num_kv_heads,
seq_len, head_dim). Multi-query and grouped-query attention shrink
num_kv_heads; a sliding window caps seq_len at the window (Mistral's rolling
buffer); multi-head latent attention (DeepSeek-V2) caches one latent vector of
latent_dim and one shared rotary key of rope_dim per position instead.

``PUBLISHED_CONFIGS`` holds the sizes of a few released models, each with the
document it was checked against.
"""

from .._checks import require_int


def kv_cache_bytes(
    num_layers: int,
    num_kv_heads: int,
    head_dim: int,
    seq_len: int,
    batch: int = 1,
    dtype_bytes: int = 2,
    window: int | None = None,
) -> int:
    """Bytes of a key-value cache: keys and values of every layer.

    2 (keys and values) x num_layers x batch x num_kv_heads x positions x
    head_dim x dtype_bytes, with positions = seq_len, or min(seq_len, window)
    for a sliding window of ``window`` positions. dtype_bytes: 2 for
    bfloat16/float16, 4 for float32.
    """
    _check_sizes(
        num_layers=num_layers,
        num_kv_heads=num_kv_heads,
        head_dim=head_dim,
        batch=batch,
        dtype_bytes=dtype_bytes,
    )
    positions = _positions(seq_len, window)
    per_layer = 2 * batch * num_kv_heads * positions * head_dim
    return num_layers * per_layer * dtype_bytes


def hybrid_cache_bytes(
    num_layers: int,
    num_kv_heads: int,
    head_dim: int,
    seq_len: int,
    window: int,
    local_per_global: int,
    batch: int = 1,
    dtype_bytes: int = 2,
) -> int:
    """Bytes of the cache of a model whose layers repeat a pattern of
    ``local_per_global`` sliding-window layers (each caching at most
    ``window`` positions) followed by one global layer (caching all
    ``seq_len``): Gemma 2 and gpt-oss alternate 1:1, Gemma 3 uses 5:1.

    Of num_layers layers, num_layers // (local_per_global + 1) are global
    (the pattern starts with its local layers, as in Gemma 3); 0 makes every
    layer global.
    """
    require_int("num_layers", num_layers)
    require_int("local_per_global", local_per_global, minimum=0)
    num_global = num_layers // (local_per_global + 1)
    sizes = dict(head_dim=head_dim, batch=batch, dtype_bytes=dtype_bytes)
    total = 0
    if num_global:
        total += kv_cache_bytes(
            num_global, num_kv_heads, seq_len=seq_len, **sizes
        )
    if num_layers > num_global:
        total += kv_cache_bytes(
            num_layers - num_global, num_kv_heads, seq_len=seq_len,
            window=window, **sizes,
        )  # fmt: skip
    return total


def mla_cache_bytes(
    num_layers: int,
    latent_dim: int,
    rope_dim: int,
    seq_len: int,
    batch: int = 1,
    dtype_bytes: int = 2,
) -> int:
    """Bytes of a multi-head latent attention cache (DeepSeek-V2, Table 1:
    (d_c + d_h^R) l elements per token).

    num_layers x batch x seq_len x (latent_dim + rope_dim) x dtype_bytes: per
    layer and position one latent c^KV (latent_dim) and one rotary key k^R
    (rope_dim, 0 without the decoupled RoPE), shared by every head.
    """
    _check_sizes(
        num_layers=num_layers,
        latent_dim=latent_dim,
        batch=batch,
        dtype_bytes=dtype_bytes,
    )
    require_int("rope_dim", rope_dim, minimum=0)
    positions = _positions(seq_len, None)
    per_layer = batch * positions * (latent_dim + rope_dim)
    return num_layers * per_layer * dtype_bytes


def published_cache_bytes(
    name: str, seq_len: int, batch: int = 1, dtype_bytes: int = 2
) -> int:
    """``kv_cache_bytes`` (or ``mla_cache_bytes``) of the model ``name`` of
    ``PUBLISHED_CONFIGS``."""
    if name not in PUBLISHED_CONFIGS:
        raise ValueError(
            f"name must be one of {sorted(PUBLISHED_CONFIGS)}, got {name!r}"
        )
    sizes = {
        k: v
        for k, v in PUBLISHED_CONFIGS[name].items()
        if k not in ("source", "num_heads")
    }
    counter = mla_cache_bytes if "latent_dim" in sizes else kv_cache_bytes
    return counter(
        seq_len=seq_len, batch=batch, dtype_bytes=dtype_bytes, **sizes
    )


def _positions(seq_len, window) -> int:
    """The positions a cache keeps: seq_len, at most ``window``."""
    require_int("seq_len", seq_len, minimum=0)
    if window is None:
        return seq_len
    return min(seq_len, require_int("window", window))


def _check_sizes(**sizes) -> None:
    for name, value in sizes.items():
        require_int(name, value)


# num_heads: the query heads (for the text; the cache does not depend on it).
PUBLISHED_CONFIGS = {
    "Llama 2 7B": {
        # config.json of meta-llama/Llama-2-7b-hf (model card): 32 layers,
        # 32 attention heads, num_key_value_heads 32 (no GQA at 7B; Touvron
        # et al. 2023, arXiv 2307.09288, Table 1: GQA only for 34B and 70B),
        # hidden size 4096 = 32 x 128
        "num_layers": 32,
        "num_heads": 32,
        "num_kv_heads": 32,
        "head_dim": 128,
        "source": "meta-llama/Llama-2-7b-hf config.json",
    },
    "Llama 3 8B": {
        # config.json of meta-llama/Meta-Llama-3-8B (model card): 32 layers,
        # 32 attention heads, num_key_value_heads 8, hidden size 4096
        "num_layers": 32,
        "num_heads": 32,
        "num_kv_heads": 8,
        "head_dim": 128,
        "source": "meta-llama/Meta-Llama-3-8B config.json",
    },
    "Mistral 7B": {
        # Jiang et al. 2023, arXiv 2310.06825, Table 1: n_layers 32,
        # head_dim 128, n_heads 32, n_kv_heads 8, window_size 4096 (the
        # rolling buffer cache holds at most the window)
        "num_layers": 32,
        "num_heads": 32,
        "num_kv_heads": 8,
        "head_dim": 128,
        "window": 4096,
        "source": "Mistral 7B paper (arXiv 2310.06825), Table 1",
    },
    "DeepSeek-V2": {
        # DeepSeek-AI 2024, arXiv 2405.04434, Sec. 3.1.2: 60 layers, n_h =
        # 128 heads, KV compression dimension d_c = 512, decoupled key
        # d_h^R = 64; Sec. 2.1.4 / Table 1: (d_c + d_h^R) l elements per token
        "num_layers": 60,
        "num_heads": 128,
        "latent_dim": 512,
        "rope_dim": 64,
        "source": "DeepSeek-V2 paper (arXiv 2405.04434), Sec. 3.1.2, Table 1",
    },
}
