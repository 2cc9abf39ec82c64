"""attnbook.nn.attention_only: the attention-only Transformer refuses a
batch too large before the work."""

import time

import pytest
import torch


def _refused_fast(call, match):
    start = time.perf_counter()
    with pytest.raises(ValueError, match=match):
        call()
    assert time.perf_counter() - start < 5


def test_an_attention_only_model_refuses_a_million_rows_before_the_work():
    from attnbook.nn.attention_only import AttentionOnlyTransformer

    torch.manual_seed(0)
    model = AttentionOnlyTransformer(16, 12, 8, 2, 2)
    many = torch.randint(0, 16, (1, 6)).expand(10**6, 6)
    _refused_fast(
        lambda: model(many, return_weights=True, ablate=[(0, 1)]),
        r"tokens of shape \(1000000, 6\): a forward computes about",
    )
    logits, weights = model(many[:64], return_weights=True)
    assert weights.shape == (2, 64, 2, 6, 6)
