"""The decoder-only model with fewer key-value heads (grouped-query and
multi-query attention): its cache holds num_kv_heads heads, and cached
generation equals the full forward pass, as with plain multi-head attention.
"""

import pytest
import torch

from attnbook.measure.kv_cache import kv_cache_bytes
from attnbook.nn.language_model import DecoderOnlyTransformer

VOCAB, CONTEXT, E, H, LAYERS, FFN = 11, 16, 32, 4, 2, 64


def model(num_kv_heads, seed=0):
    with torch.random.fork_rng():
        torch.manual_seed(seed)
        lm = DecoderOnlyTransformer(
            VOCAB, CONTEXT, E, H, LAYERS, FFN, num_kv_heads=num_kv_heads
        )
    return lm.double().eval()


def tokens(n, seed=1):
    return torch.randint(
        VOCAB, (2, n), generator=torch.Generator().manual_seed(seed)
    )


@pytest.mark.parametrize("g", [4, 2, 1])
def test_cache_in_pieces_equals_the_full_forward(g):
    lm, ids = model(g), tokens(12)
    cache = lm.new_cache()
    with torch.no_grad():
        whole = lm(ids)
        pieces = [lm(ids[:, :5], cache), lm(ids[:, 5:9], cache)]
        pieces += [lm(ids[:, t : t + 1], cache) for t in range(9, 12)]
    torch.testing.assert_close(
        torch.cat(pieces, dim=1), whole, rtol=0, atol=1e-12
    )
    assert cache.keys[0].shape == (2, g, 12, E // H)


@pytest.mark.parametrize("g", [4, 2, 1])
def test_cache_bytes_follow_the_key_value_heads(g):
    lm, ids = model(g), tokens(10)
    cache = lm.new_cache()
    with torch.no_grad():
        lm(ids, cache)
    expected = kv_cache_bytes(
        LAYERS, g, E // H, seq_len=10, batch=2, dtype_bytes=8
    )
    assert cache.nbytes() == expected


def test_none_is_plain_multi_head_attention_with_the_same_weights():
    plain, explicit = model(None), model(H)
    for (name, a), (_, b) in zip(
        plain.state_dict().items(), explicit.state_dict().items()
    ):
        assert torch.equal(a, b), name
    fewer = model(2)
    assert sum(p.numel() for p in fewer.parameters()) < sum(
        p.numel() for p in plain.parameters()
    )


def test_generation_is_the_same_with_and_without_the_cache():
    lm, ids = model(1), tokens(3)
    g = torch.Generator().manual_seed(5)
    cached = lm.generate(ids, 10, temperature=1.0, generator=g)
    g = torch.Generator().manual_seed(5)
    plain = lm.generate(ids, 10, temperature=1.0, generator=g, use_cache=False)
    assert torch.equal(cached, plain)


def test_a_bad_number_of_kv_heads_is_named():
    with pytest.raises(ValueError, match="num_kv_heads"):
        DecoderOnlyTransformer(
            VOCAB, CONTEXT, E, H, LAYERS, FFN, num_kv_heads=3
        )
