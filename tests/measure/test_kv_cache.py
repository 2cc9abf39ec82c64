"""kv_cache_bytes and mla_cache_bytes against the bytes of the tensors a cache
actually holds, and the published configurations against their documents."""

import pytest
import torch

from attnbook import DecoderOnlyTransformer, MultiHeadAttention, split_heads
from attnbook.measure.kv_cache import (
    PUBLISHED_CONFIGS,
    kv_cache_bytes,
    mla_cache_bytes,
    published_cache_bytes,
)
from attnbook.nn.latent_attention import MultiHeadLatentAttention


def held(tensors) -> int:
    return sum(t.numel() * t.element_size() for t in tensors)


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float32])
@pytest.mark.parametrize("layers, kv_heads, head_dim", [(2, 4, 8), (3, 1, 16)])
def test_bytes_of_the_tensors_a_cache_holds(dtype, layers, kv_heads, head_dim):
    batch, seq = 3, 11
    cache = [
        torch.empty(batch, kv_heads, seq, head_dim, dtype=dtype)
        for _ in range(2 * layers)  # keys and values of every layer
    ]
    size = torch.empty((), dtype=dtype).element_size()
    assert kv_cache_bytes(
        layers, kv_heads, head_dim, seq, batch=batch, dtype_bytes=size
    ) == held(cache)


def test_bytes_of_the_language_models_cache_after_a_prefill():
    torch.manual_seed(0)
    model = DecoderOnlyTransformer(
        vocab_size=11, context_len=16, embed_dim=8, num_heads=2, num_layers=3
    )
    cache = model.new_cache()
    with torch.no_grad():
        model(torch.randint(0, 11, (2, 9)), cache=cache)
    tensors = [*cache.keys, *cache.values]
    assert held(tensors) == kv_cache_bytes(3, 2, 4, 9, batch=2, dtype_bytes=4)


@pytest.mark.parametrize("num_kv_heads", [1, 2, 4])
def test_grouped_keys_and_values_take_g_heads(num_kv_heads):
    mha = MultiHeadAttention(16, 4, num_kv_heads=num_kv_heads)
    x = torch.randn(2, 5, 16)
    _, keys, values = mha.project(x, x, x)
    keys, values = (split_heads(t, num_kv_heads) for t in (keys, values))
    assert held([keys, values]) == kv_cache_bytes(
        1, num_kv_heads, 4, 5, batch=2, dtype_bytes=4
    )


def test_a_sliding_window_caps_the_positions():
    keys = torch.empty(1, 2, 100, 8, dtype=torch.float16)
    window = [keys[..., -32:, :], keys[..., -32:, :]]  # a rolling buffer
    assert held(window) == kv_cache_bytes(1, 2, 8, 100, window=32)
    assert kv_cache_bytes(1, 2, 8, 20, window=32) == kv_cache_bytes(
        1, 2, 8, 20
    )


@pytest.mark.parametrize("rope_dim", [0, 4])
def test_mla_bytes_are_those_of_the_latents_the_module_caches(rope_dim):
    layers = [
        MultiHeadLatentAttention(16, 4, 6, rope_dim=rope_dim).to(
            torch.bfloat16
        )
        for _ in range(2)
    ]
    x = torch.randn(3, 9, 16, dtype=torch.bfloat16)
    cached = []
    with torch.no_grad():
        for layer in layers:
            x, (latent, rope_keys) = layer(x)
            cached += [latent, rope_keys]
    assert held(cached) == mla_cache_bytes(2, 6, rope_dim, 9, batch=3)


def test_published_numbers_per_token():
    # per token in bf16: 2 (k and v) x layers x kv heads x head dim x 2 bytes
    per_token = {
        "Llama 2 7B": 2 * 32 * 4096 * 2,  # 512 KiB: hidden 4096, no GQA
        "Llama 3 8B": 2 * 32 * 1024 * 2,  # 8 kv heads x 128 = 1024
        "Mistral 7B": 2 * 32 * 1024 * 2,
        "DeepSeek-V2": (512 + 64) * 60 * 2,  # (d_c + d_h^R) l elements
    }
    for name, expected in per_token.items():
        assert published_cache_bytes(name, 1) == expected, name
    assert per_token["Llama 2 7B"] == 512 * 2**10
    # Mistral's rolling buffer: 32k tokens cost what 4,096 do
    assert published_cache_bytes("Mistral 7B", 32768) == published_cache_bytes(
        "Mistral 7B", 4096
    )


def test_deepseek_v2_cache_equals_gqa_with_2_25_groups():
    # the paper, Sec. 2.1.4: d_c = 4 d_h and d_h^R = d_h / 2 make MLA's cache
    # that of GQA with 2.25 groups (d_h = 128)
    config = PUBLISHED_CONFIGS["DeepSeek-V2"]
    mla = mla_cache_bytes(60, config["latent_dim"], config["rope_dim"], 1)
    assert mla * 4 == kv_cache_bytes(60, 9, 128, 1)  # 4 x 2.25 = 9 heads
    assert all(c["source"] for c in PUBLISHED_CONFIGS.values())


@pytest.mark.parametrize(
    "call, match",
    [
        (lambda: kv_cache_bytes(0, 1, 8, 4), "num_layers must be a positive"),
        (lambda: kv_cache_bytes(2, 1.5, 8, 4), "num_kv_heads must be a pos"),
        (lambda: kv_cache_bytes(2, 1, 8, -1), "seq_len must be a non-negat"),
        (lambda: kv_cache_bytes(2, 1, 8, 4, window=0), "window must be a po"),
        (lambda: kv_cache_bytes(2, 1, 8, 4, dtype_bytes=True), "dtype_bytes"),
        (lambda: mla_cache_bytes(2, 8, -1, 4), "rope_dim must be a non-neg"),
        (lambda: mla_cache_bytes(2, 0, 8, 4), "latent_dim must be a posit"),
        (lambda: published_cache_bytes("GPT-9", 4), "name must be one of"),
    ],
)
def test_bad_arguments_are_named(call, match):
    with pytest.raises(ValueError, match=match):
        call()


@pytest.mark.parametrize("layers, ratio", [(6, 5), (4, 1), (7, 2), (3, 0)])
def test_hybrid_cache_is_the_sum_of_its_layers(layers, ratio):
    from attnbook.measure.kv_cache import hybrid_cache_bytes

    seq, window = 50, 8
    tensors = []
    for layer in range(layers):
        is_global = ratio == 0 or (layer + 1) % (ratio + 1) == 0
        kept = seq if is_global else min(seq, window)
        tensors += [torch.empty(1, 2, kept, 4, dtype=torch.float16)] * 2
    assert hybrid_cache_bytes(layers, 2, 4, seq, window, ratio) == held(
        tensors
    )


def test_hybrid_cache_names_a_bad_ratio():
    from attnbook.measure.kv_cache import hybrid_cache_bytes

    with pytest.raises(ValueError, match="local_per_global"):
        hybrid_cache_bytes(4, 2, 4, 16, 8, -1)
