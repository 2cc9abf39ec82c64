"""Sampling a token: rows with no possible token, and more categories than
torch.multinomial takes."""

import pytest
import torch

import attnbook
from attnbook import (
    hard_attention,
    next_token_distribution,
    sample_next_token,
)
from attnbook.core import sampling
from attnbook.core.sampling import draw_categorical, top_k_filter, top_p_filter

from _refusals import refused, wide


def test_a_row_of_only_minus_infinity_is_refused():
    logits = torch.zeros(3, 5)
    logits[1] = -float("inf")
    for temperature in (1.0, 0):
        with pytest.raises(ValueError, match=r"row \(1,\)"):
            next_token_distribution(logits, temperature=temperature)
        with pytest.raises(ValueError, match=r"row \(1,\)"):
            sample_next_token(
                logits, temperature=temperature, generator=torch.Generator()
            )


def test_more_than_two_to_the_24_categories_are_sampled():
    size = 2**24 + 3
    logits = torch.full((2, size), -float("inf"))
    logits[0, size - 1] = 0.0  # beyond multinomial's limit
    logits[1, 7] = 0.0
    tokens = sample_next_token(logits, generator=torch.Generator())
    assert tokens.tolist() == [size - 1, 7]


def test_the_inverse_cdf_draw_follows_the_distribution(monkeypatch):
    # the path beyond 2**24, tried on a small V: the frequencies follow probs
    monkeypatch.setattr(sampling, "MULTINOMIAL_LIMIT", 2)
    probs = torch.tensor([[0.1, 0.0, 0.6, 0.3]]).expand(20_000, 4)
    generator = torch.Generator().manual_seed(0)
    index = draw_categorical(probs, generator)
    frequencies = torch.bincount(index, minlength=4) / 20_000
    assert torch.allclose(frequencies, probs[0], atol=0.01)
    assert frequencies[1] == 0


def test_hard_sampling_over_more_than_two_to_the_24_keys():
    n_keys = 2**24 + 1
    keys = torch.zeros(1, n_keys, 1)
    values = torch.arange(n_keys, dtype=torch.float32).reshape(1, n_keys, 1)
    mask = torch.zeros(1, 1, n_keys, dtype=torch.bool)
    mask[..., n_keys - 1] = True
    output, index = hard_attention(
        torch.ones(1, 1, 1),
        keys,
        values,
        mask=mask,
        mode="sample",
        generator=torch.Generator(),
    )
    assert index.item() == n_keys - 1
    assert output.item() == n_keys - 1


def test_draw_categorical_checks_its_input():
    with pytest.raises(ValueError, match="non-negative"):
        draw_categorical(torch.tensor([[0.5, -0.1]]))
    with pytest.raises(ValueError, match="positive entry"):
        draw_categorical(torch.zeros(1, 3))
    with pytest.raises(ValueError, match=r"\(B, V\)"):
        draw_categorical(torch.ones(3))


def test_sampling_refuses_a_temperature_that_overflows_the_logits():
    logits = torch.randn(2, 10)
    with pytest.raises(ValueError, match="temperature"):
        attnbook.next_token_distribution(logits, temperature=1e-320)


def logits():
    return torch.randn(2, 6, generator=torch.Generator().manual_seed(0))


@pytest.mark.parametrize(
    "kwargs, error, match",
    [
        (dict(logits=torch.tensor(1.0)), ValueError, "logits must have"),
        (dict(logits=torch.zeros(2, 0)), ValueError, "V >= 1"),
        (dict(temperature=10**400), ValueError, "temperature"),
        (dict(top_p=10**400), ValueError, "top_p"),
    ],
)
def test_next_token_distribution_refuses(kwargs, error, match):
    kwargs = {"logits": logits(), **kwargs}
    owned = kwargs["logits"]
    refused(lambda: next_token_distribution(**kwargs), error, match, owned)


def test_a_logits_view_beyond_the_limit_is_refused():
    view = wide(logits())
    for call in (
        lambda: next_token_distribution(view),
        lambda: sample_next_token(view, generator=torch.Generator()),
        lambda: top_k_filter(view, 2),
        lambda: top_p_filter(view, 0.5),
    ):
        refused(call, ValueError, "logits, a broadcast view")


@pytest.mark.parametrize("p", [1e-320, 1e-60, 1e-10])
def test_a_top_p_below_the_dtype_keeps_the_most_likely_token(p):
    x = logits()
    probs = next_token_distribution(x, top_p=p)
    assert not probs.isnan().any()
    expected = torch.zeros_like(x).scatter(-1, x.argmax(-1, True), 1.0)
    assert torch.equal(probs, expected)
    g = torch.Generator().manual_seed(0)
    assert torch.equal(
        sample_next_token(x, top_p=p, generator=g), x.argmax(-1)
    )


def test_sample_next_token_refuses_an_empty_vocabulary():
    refused(
        lambda: sample_next_token(
            torch.zeros(2, 0), generator=torch.Generator()
        ),
        ValueError,
        "logits must have shape",
    )


@pytest.mark.parametrize(
    "call, match",
    [
        (lambda x: top_k_filter(None, 2), "logits"),
        (lambda x: top_k_filter(x.long(), 2), "logits"),
        (lambda x: top_k_filter(x, 0), "top_k"),
        (lambda x: top_k_filter(x, 2.5), "top_k"),
        (lambda x: top_p_filter(x, None), "top_p"),
        (lambda x: top_p_filter(x, 10**400), "top_p"),
        (lambda x: top_p_filter(torch.tensor(1.0), 0.5), "logits"),
    ],
)
def test_the_filters_check_their_arguments(call, match):
    x = logits()
    refused(lambda: call(x), (TypeError, ValueError), match, x)
