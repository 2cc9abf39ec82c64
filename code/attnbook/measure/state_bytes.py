"""The bytes a fixed-size memory holds: the state of a linear-attention,
DeltaNet or Mamba-2 layer, beside a key-value cache (``kv_cache``).

A layer with h heads keeps one d_v x d_k matrix per head, whatever the
number of tokens read: num_layers x batch x h x d_k x d_v numbers. A
key-value cache grows by 2 x g x d_k numbers per layer and token instead.

``QWEN3_NEXT`` holds the sizes of Qwen3-Next-80B-A3B, a hybrid with three
Gated DeltaNet layers to every softmax-attention layer, with the document
they were read from.
"""

from .._checks import require_int


def recurrent_state_bytes(
    num_layers: int,
    num_heads: int,
    key_dim: int,
    value_dim: int,
    batch: int = 1,
    dtype_bytes: int = 2,
) -> int:
    """Bytes of the states of ``num_layers`` fixed-state layers: one
    value_dim x key_dim matrix per head and sequence, whatever the length.

    num_layers x batch x num_heads x key_dim x value_dim x dtype_bytes.
    """
    for name, value in dict(
        num_layers=num_layers,
        num_heads=num_heads,
        key_dim=key_dim,
        value_dim=value_dim,
        batch=batch,
        dtype_bytes=dtype_bytes,
    ).items():
        require_int(name, value)
    per_layer = batch * num_heads * key_dim * value_dim
    return num_layers * per_layer * dtype_bytes


QWEN3_NEXT = {
    # config.json of Qwen/Qwen3-Next-80B-A3B-Instruct (model card; the
    # defaults of transformers' Qwen3NextConfig are the same): 48 layers,
    # full_attention_interval 4 (every 4th layer softmax attention, the
    # other 36 Gated DeltaNet); attention: 16 query heads, 2 key-value heads
    # of head_dim 256; Gated DeltaNet: linear_num_key_heads 16 of
    # linear_key_head_dim 128, linear_num_value_heads 32 of
    # linear_value_head_dim 128 (two value heads share a key head; the state
    # is one 128 x 128 matrix per value head). The short causal convolution
    # before the layer (linear_conv_kernel_dim 4) keeps 3 more positions of
    # its 8,192 channels per layer, left out here.
    "num_layers": 48,
    "attention_layers": 12,
    "num_kv_heads": 2,
    "head_dim": 256,
    "deltanet_layers": 36,
    "deltanet_heads": 32,
    "deltanet_key_dim": 128,
    "deltanet_value_dim": 128,
    "source": "Qwen/Qwen3-Next-80B-A3B-Instruct config.json",
}
