"""grouped_query_attention against PyTorch's enable_gqa and against plain
attention over key-value heads repeated h/g times."""

import pytest
import torch
import torch.nn.functional as F

from attnbook import agreement, attention, causal_mask
from attnbook.core.grouped_query import grouped_query_attention

TOL = 1e-5  # float32; every comparison below is stated with this tolerance
HEADS = [(4, 4), (4, 2), (4, 1), (6, 3), (8, 2), (1, 1)]  # (h, g)


def inputs(h, g, n_q=5, n_k=7, d=8, d_v=6, batch=2, seed=0, dtype=None):
    gen = torch.Generator().manual_seed(seed)
    dtype = dtype or torch.float32
    return (
        torch.randn(batch, h, n_q, d, generator=gen, dtype=dtype),
        torch.randn(batch, g, n_k, d, generator=gen, dtype=dtype),
        torch.randn(batch, g, n_k, d_v, generator=gen, dtype=dtype),
    )


def masks(h, n_q=5, n_k=7, batch=2):
    """Masks of every accepted shape, each keeping at least one key per
    query (SDPA gives NaN for a query that keeps none)."""
    gen = torch.Generator().manual_seed(1)
    per_head = torch.rand(batch, h, n_q, n_k, generator=gen) < 0.6
    per_head[..., 0] = True
    padding = torch.ones(batch, 1, 1, n_k, dtype=torch.bool)
    padding[0, ..., 4:] = False
    per_head_row = torch.rand(1, h, 1, n_k, generator=gen) < 0.5
    per_head_row[..., -1] = True
    return {
        "none": None,
        "causal": causal_mask(n_q, n_k),
        "padding": padding,
        "per_head": per_head,
        "per_head_row": per_head_row,
        "3-d": causal_mask(n_q, n_k)[None],
    }


def repeated(h, g, keys, values):
    """The reference: each key-value head copied h/g times, in place."""
    return (
        keys.repeat_interleave(h // g, dim=-3),
        values.repeat_interleave(h // g, dim=-3),
    )


@pytest.mark.parametrize("mask_name", list(masks(4)))
@pytest.mark.parametrize("h, g", HEADS)
def test_equals_sdpa_with_enable_gqa(h, g, mask_name):
    q, k, v = inputs(h, g)
    mask = masks(h)[mask_name]
    output, weights = grouped_query_attention(q, k, v, mask=mask)
    expected = F.scaled_dot_product_attention(
        q, k, v, attn_mask=mask, enable_gqa=True
    )
    assert output.shape == (2, h, 5, 6) and weights.shape == (2, h, 5, 7)
    assert agreement(output, expected, TOL) == "equal within 1e-05"


@pytest.mark.parametrize("mask_name", list(masks(4)))
@pytest.mark.parametrize("h, g", HEADS)
def test_equals_attention_over_repeated_heads(h, g, mask_name):
    q, k, v = inputs(h, g)
    mask = masks(h)[mask_name]
    output, weights = grouped_query_attention(q, k, v, mask=mask)
    expected, expected_weights = attention(q, *repeated(h, g, k, v), mask=mask)
    assert agreement(output, expected, TOL) == "equal within 1e-05"
    assert agreement(weights, expected_weights, TOL) == "equal within 1e-05"


def test_a_group_is_consecutive_query_heads():
    # query head i uses key head i // (h/g), not i % g: tiling the heads
    # instead of interleaving them is a different function (the test above
    # can fail)
    q, k, v = inputs(4, 2)
    output, _ = grouped_query_attention(q, k, v)
    tiled, _ = attention(q, k.repeat(1, 2, 1, 1), v.repeat(1, 2, 1, 1))
    assert agreement(output, tiled, TOL).startswith("differ")


def test_gradients_equal_those_through_repeated_heads():
    q, k, v = (t.double().requires_grad_() for t in inputs(6, 2))
    mask = masks(6)["per_head"]
    grad = torch.randn(2, 6, 5, 6, dtype=torch.float64)
    got = torch.autograd.grad(
        grouped_query_attention(q, k, v, mask=mask)[0], (q, k, v), grad
    )
    expected = torch.autograd.grad(
        attention(q, *repeated(6, 2, k, v), mask=mask)[0], (q, k, v), grad
    )
    for a, b in zip(got, expected):
        assert agreement(a, b, 1e-12) == "equal within 1e-12"


def test_float64_agrees_to_1e_12_and_batch_dimensions_broadcast():
    q, k, v = inputs(4, 2, dtype=torch.float64)
    q3 = q.reshape(1, 2, 4, 5, 8)  # two batch dimensions
    output, _ = grouped_query_attention(q3, k[None], v[None])
    expected = F.scaled_dot_product_attention(q, k, v, enable_gqa=True)
    assert agreement(output[0], expected, 1e-12) == "equal within 1e-12"
    unbatched, _ = grouped_query_attention(q[0], k[0], v[0])
    assert agreement(unbatched, expected[0], 1e-12) == "equal within 1e-12"


def test_no_queries_and_fully_masked_rows():
    q, k, v = inputs(4, 2, n_q=0)
    output, weights = grouped_query_attention(q, k, v)
    assert output.shape == (2, 4, 0, 6) and weights.shape == (2, 4, 0, 7)
    q, k, v = inputs(4, 2)
    keep = torch.ones(5, 7, dtype=torch.bool)
    keep[2] = False  # query 2 keeps no key: zeros, as in attention
    output, weights = grouped_query_attention(q, k, v, mask=keep)
    assert (output[:, :, 2] == 0).all() and (weights[:, :, 2] == 0).all()
    assert not torch.isnan(output).any()


def test_inputs_are_not_changed():
    q, k, v = inputs(4, 2)
    copies = [t.clone() for t in (q, k, v)]
    grouped_query_attention(q, k, v, mask=masks(4)["per_head"])
    assert all(torch.equal(a, b) for a, b in zip((q, k, v), copies))


@pytest.mark.parametrize(
    "change, error, match",
    [
        (
            lambda q, k, v, m: (q, k[:, [0, 1, 1]], v[:, [0, 1, 1]], m),
            ValueError,
            "h = 4 heads and keys g = 3",
        ),
        (
            lambda q, k, v, m: (q, k, v[:, :1], m),
            ValueError,
            "key-value heads must match: keys has 2, values has 1",
        ),
        (
            lambda q, k, v, m: (q, k[..., :4], v, m),
            ValueError,
            "feature sizes must match: queries has 8, keys has 4",
        ),
        (
            lambda q, k, v, m: (q, k, v[:, :, :3], m),
            ValueError,
            "number of keys and values must match",
        ),
        (
            lambda q, k, v, m: (q[0, 0], k, v, m),
            ValueError,
            r"queries need shape \(B, h, n_q, d\)",
        ),
        (
            lambda q, k, v, m: (q, k.double(), v, m),
            TypeError,
            "must share a dtype",
        ),
        (
            lambda q, k, v, m: (q, k.long(), v, m),
            TypeError,
            "keys must be a floating-point",
        ),
        (
            lambda q, k, v, m: (q, k[:1].expand(3, 2, 7, 8), v, m),
            ValueError,
            "batch dimensions do not broadcast",
        ),
        (
            lambda q, k, v, m: (q, k, v, m[..., :6]),
            ValueError,
            r"mask of shape \(2, 4, 5, 6\) does not broadcast",
        ),
        (
            lambda q, k, v, m: (q, k, v, m.float()),
            TypeError,
            "mask must be a boolean",
        ),
        (
            lambda q, k, v, m: (q, k, v, m[:, :2]),
            ValueError,
            "does not broadcast",
        ),
    ],
)
def test_bad_arguments_are_named(change, error, match):
    q, k, v = inputs(4, 2)
    args = change(q, k, v, masks(4)["per_head"])
    with pytest.raises(error, match=match):
        grouped_query_attention(*args[:3], mask=args[3])
