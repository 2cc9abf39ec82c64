"""Garbage (NaN, inf, huge values) under a mask reaches no output and no
gradient, whichever function applies the mask."""

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from attnbook import (
    MultiHeadAttention,
    attention,
    chunked_attention,
    dot_score,
    lengths_to_mask,
    scaled_dot_score,
)

from _tensors import seeded_randn


def _masked_run(function, where, garbage, seed):
    torch.manual_seed(seed)
    q = seeded_randn(2, 3, 4, seed=seed).requires_grad_()
    k, v = (
        seeded_randn(2, 5, 4, seed=seed + 1),
        seeded_randn(2, 5, 4, seed=seed + 2),
    )
    if garbage is not None:
        (k if where == "keys" else v)[1, 3:] = garbage
    k.requires_grad_()
    v.requires_grad_()
    keep = lengths_to_mask(torch.tensor([5, 3]), 5)
    if function == "attention":
        out = attention(q, k, v, mask=keep[:, None, :])[0]
    elif function == "chunked":
        out = chunked_attention(q, k, v, mask=keep[:, None, :], chunk_size=2)
    elif function == "chunked-autograd":
        out = chunked_attention(
            q,
            k,
            v,
            mask=keep[:, None, :],
            chunk_size=2,
            recompute_backward=False,
        )
    else:
        torch.manual_seed(0)
        out = MultiHeadAttention(4, 2)(q, k, v, mask=keep[:, None, None, :])[0]
    out.backward(seeded_randn(*out.shape, seed=99))
    return out.detach(), q.grad, k.grad[:, :3], v.grad[:, :3]


@settings(max_examples=40, deadline=None)
@given(
    function=st.sampled_from(
        ["attention", "chunked", "chunked-autograd", "mha"]
    ),
    where=st.sampled_from(["keys", "values"]),
    garbage=st.sampled_from([float("nan"), float("inf"), float("-inf"), 1e30]),
    seed=st.integers(0, 100),
)
def test_garbage_under_the_mask_reaches_no_output_or_gradient(
    function, where, garbage, seed
):
    clean = _masked_run(function, where, None, seed)
    dirty = _masked_run(function, where, garbage, seed)
    for a, b in zip(clean, dirty):
        assert torch.isfinite(b).all()
        assert torch.allclose(a, b, atol=1e-5)


def test_causal_mask_hides_a_nan_future_value():
    v = seeded_randn(4, 2)
    v[3] = float("nan")
    causal = torch.ones(4, 4, dtype=torch.bool).tril()
    out = attention(
        seeded_randn(4, 3), seeded_randn(4, 3, seed=1), v, mask=causal
    )[0]
    assert (
        torch.isfinite(out[:3]).all() and torch.isnan(out[3]).all()
    )  # the query that keeps it sees NaN


@pytest.mark.parametrize(
    "garbage", [float("nan"), float("inf"), float("-inf")]
)
@pytest.mark.parametrize("where", ["keys", "values"])
@pytest.mark.parametrize(
    "score", ["scaled_dot_score", "dot_score", "chunked", "chunked-autograd"]
)
def test_causal_mask_hides_a_future_garbage_key_from_earlier_gradients(
    garbage, where, score
):
    """Key 4 is kept by query 4 only: queries 1-3 must get the outputs and gradients of a clean run.

    (Gradients of the keys are not compared: query 4 keeps the garbage, and autograd's
    0 * NaN carries it from query 4's row into every key's gradient, as in PyTorch itself.)
    """
    causal = torch.ones(4, 4, dtype=torch.bool).tril()

    def run(value):
        q = seeded_randn(4, 3).requires_grad_()
        k, v = seeded_randn(4, 3, seed=1), seeded_randn(4, 2, seed=2)
        (k if where == "keys" else v)[3] = value
        k.requires_grad_()
        if score.startswith("chunked"):
            out = chunked_attention(
                q,
                k,
                v,
                mask=causal,
                chunk_size=2,
                recompute_backward=score == "chunked",
            )[:3]
        else:
            out = attention(
                q,
                k,
                v,
                score={
                    "scaled_dot_score": scaled_dot_score,
                    "dot_score": dot_score,
                }[score],
                mask=causal,
            )[0][:3]
        out.backward(seeded_randn(3, 2, seed=3))
        return out.detach(), q.grad[:3]

    for clean, dirty in zip(run(0.5), run(garbage)):
        assert torch.isfinite(dirty).all()
        assert torch.allclose(clean, dirty, atol=1e-6)
