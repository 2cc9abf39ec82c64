"""Attention mass by key identity and the key-eviction masks of chapter 13,
against sums written out by hand."""

import pytest
import torch

from attnbook.core.masking import causal_mask
from attnbook.experiments.sinks import (
    evict_keys_mask,
    mass_by_key_token,
    matched_random_keys,
)


def test_mass_by_token_is_the_weight_summed_over_keys_of_that_token():
    g = torch.Generator().manual_seed(0)
    B, H, n, V = 3, 2, 6, 4
    tokens = torch.randint(0, V, (B, n), generator=g)
    scores = torch.randn(B, H, n, n, generator=g)
    weights = scores.masked_fill(~causal_mask(n), float("-inf")).softmax(-1)
    mass, uniform = mass_by_key_token(weights, tokens, V, first_query=2)
    for h in range(H):
        for v in range(V):
            by_hand = sum(
                weights[b, h, i, j].item()
                for b in range(B)
                for i in range(2, n)
                for j in range(n)
                if tokens[b, j] == v
            ) / (B * (n - 2))
            assert mass[h, v].item() == pytest.approx(by_hand, abs=1e-6)
    assert mass.sum(-1) == pytest.approx(torch.ones(H), abs=1e-6)
    even = sum(
        (tokens[b, : i + 1] == 1).sum().item() / (i + 1)
        for b in range(B)
        for i in range(2, n)
    ) / (B * (n - 2))
    assert uniform[1].item() == pytest.approx(even)


def test_a_head_that_always_reads_one_token_puts_all_its_mass_there():
    tokens = torch.tensor([[0, 2, 1, 2, 1, 1]])
    n = tokens.shape[1]
    weights = torch.zeros(1, 1, n, n)
    weights[0, 0, :, 0] = 1.0  # every query on key 0, which holds token 0
    mass, _ = mass_by_key_token(weights, tokens, 3)
    assert mass[0].tolist() == [1.0, 0.0, 0.0]


def test_evicted_keys_stay_inside_the_window_and_go_outside_it():
    evicted = torch.tensor([[True, False, True, False, False, False]])
    keep = evict_keys_mask(evicted, window=2)[0, 0]
    assert keep.shape == (6, 6)
    assert not keep[5, 0] and not keep[5, 2] and keep[5, 1]
    assert keep[3, 2]  # key 2 is within the last 2 positions of query 3
    assert not keep[4, 2]
    assert (keep <= causal_mask(6)).all()
    assert torch.equal(
        evict_keys_mask(torch.zeros(1, 6, dtype=torch.bool), 1)[0, 0],
        causal_mask(6),
    )


def test_matched_random_keys_pick_as_many_other_keys():
    g = torch.Generator().manual_seed(0)
    evicted = torch.rand(4, 20, generator=g) < 0.2
    control = matched_random_keys(evicted, torch.Generator().manual_seed(1))
    assert torch.equal(control.sum(-1), evicted.sum(-1))
    assert not (control & evicted).any()


@pytest.mark.parametrize(
    "call, error, name",
    [
        (
            lambda: mass_by_key_token(
                torch.rand(1, 2, 3, 3), torch.zeros(1, 4, dtype=torch.long), 5
            ),
            ValueError,
            "tokens",
        ),  # noqa: E501
        (
            lambda: mass_by_key_token(
                torch.rand(1, 2, 3, 3), torch.full((1, 3), 7), 5
            ),
            ValueError,
            "tokens holds id 7",
        ),  # noqa: E501
        (
            lambda: mass_by_key_token(
                torch.rand(1, 3, 3),
                torch.zeros(1, 3, dtype=torch.long),
                5,
                first_query=3,
            ),
            ValueError,
            "first_query",
        ),  # noqa: E501
        (lambda: evict_keys_mask(torch.zeros(1, 4), 2), TypeError, "evicted"),
        (
            lambda: evict_keys_mask(torch.zeros(1, 4, dtype=torch.bool), 0),
            ValueError,
            "window",
        ),  # noqa: E501
        (
            lambda: matched_random_keys(
                torch.zeros(1, 4, dtype=torch.bool), 0
            ),
            TypeError,
            "generator",
        ),  # noqa: E501
    ],
)
def test_bad_input_is_named(call, error, name):
    with pytest.raises(error, match=name):
        call()


def test_latest_key_mask_keeps_the_last_marked_key_before_each_query():
    from attnbook.experiments.sinks import latest_key_mask

    marked = torch.tensor([[False, True, False, False, True, False]])
    keep = latest_key_mask(marked)[0, 0]
    expected = [None, 1, 1, 1, 4, 4]
    for query, key in enumerate(expected):
        row = keep[query].nonzero().flatten().tolist()
        assert row == ([] if key is None else [key])
