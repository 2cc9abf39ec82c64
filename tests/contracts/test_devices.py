"""Inputs on another device (a mask, the keys) are refused with a message
that names the devices; inputs on one device pass untouched."""

import pytest
import torch

import attnbook
from attnbook import (
    attention,
    attention_weights,
    dot_score,
    hard_attention,
    masked_softmax,
)

from _tensors import qkv


# A mask or keys on another device are refused, not silently misused.
@pytest.mark.parametrize(
    "call",
    [
        lambda q, k, v, m: attention(q, k, v, mask=m),
        lambda q, k, v, m: attention_weights(q, k, mask=m),
        lambda q, k, v, m: hard_attention(q, k, v, mask=m),
        lambda q, k, v, m: masked_softmax(q @ k.T, m),
    ],
    ids=["attention", "attention_weights", "hard_attention", "softmax"],
)
def test_a_mask_on_another_device_is_refused(call):
    q, k, v = qkv()
    keep = torch.zeros(3, 5, dtype=torch.bool).to("meta")
    with pytest.raises(ValueError, match="meta"):
        call(q, k, v, keep)


def test_keys_on_another_device_are_refused():
    from attnbook._checks import require_same_device

    q, k, _ = qkv()
    with pytest.raises(ValueError, match="meta"):
        dot_score(q, k.to("meta"))
    with pytest.raises(ValueError, match="meta"):
        attention(q, k.to("meta"), torch.randn(5, 2))
    with pytest.raises(ValueError, match="one device: queries on cpu"):
        require_same_device(queries=q, keys=k.to("meta"))


def test_the_device_check_leaves_ordinary_calls_alone():
    q, k, v = qkv()
    keep = torch.rand(3, 5, generator=torch.Generator().manual_seed(1)) > 0.3
    keep[:, 0] = True
    output, weights = attention(q, k, v, mask=keep)
    reference = torch.nn.functional.scaled_dot_product_attention(
        q[None], k[None], v[None], attn_mask=keep
    )[0]
    assert attnbook.agreement(output, reference, 1e-6).startswith("equal")
