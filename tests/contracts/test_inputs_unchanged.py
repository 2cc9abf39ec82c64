"""The caller's tensors come back as they went in: no function overwrites
scores (or any other input) it does not own."""

import math

import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from attnbook import attention, attention_weights, hard_attention

from _tensors import seeded_randn


def _caller_owned_scores(kind, queries, keys, owned):
    return {
        "precomputed": lambda q, k: owned,
        "view of queries": lambda q, k: q[..., : k.shape[-2]],
        "parameter": lambda q, k: owned,
        "transposed view": lambda q, k: owned.T.T,
    }[kind]


@settings(max_examples=30, deadline=None)
@given(
    kind=st.sampled_from(
        ["precomputed", "view of queries", "parameter", "transposed view"]
    ),
    function=st.sampled_from(
        ["attention", "attention_weights", "hard_attention"]
    ),
    no_grad=st.booleans(),
    with_mask=st.booleans(),
    seed=st.integers(0, 1000),
)
def test_scores_the_caller_owns_are_never_overwritten(
    kind, function, no_grad, with_mask, seed
):
    n_q, n_k = 3, 5
    queries, keys, values = (
        seeded_randn(n_q, 6, seed=seed),
        seeded_randn(n_k, 6, seed=seed + 1),
        seeded_randn(n_k, 2, seed=seed + 2),
    )
    owned = seeded_randn(n_q, n_k, seed=seed + 3)
    if kind == "parameter":
        owned = torch.nn.Parameter(owned)
    score = _caller_owned_scores(kind, queries, keys, owned)
    mask = (
        torch.tensor([True, False, True, True, False]) if with_mask else None
    )
    snapshot = [t.detach().clone() for t in (queries, keys, values, owned)]
    call = {
        "attention": lambda: attention(
            queries, keys, values, score=score, mask=mask
        )[1],
        "attention_weights": lambda: attention_weights(
            queries, keys, score=score, mask=mask
        ),
        "hard_attention": lambda: hard_attention(
            queries, keys, values, score=score, mask=mask
        )[1],
    }[function]
    with torch.set_grad_enabled(not no_grad):
        first = call().detach().clone()
        second = call().detach().clone()
    for before, tensor in zip(snapshot, (queries, keys, values, owned)):
        assert torch.equal(before, tensor.detach())
    assert torch.equal(first, second)


def test_fresh_scores_are_still_overwritten_in_place():
    """The memory saving stays: no second n_q x n_k buffer for the library's own scores."""
    q, k = seeded_randn(4, 8), seeded_randn(6, 8)
    with torch.no_grad():
        expected = torch.softmax(q @ k.T / math.sqrt(8), dim=-1)
        assert torch.allclose(attention_weights(q, k), expected, atol=1e-6)
