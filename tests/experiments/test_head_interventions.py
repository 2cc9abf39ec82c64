"""Tests for attnbook.experiments.head_interventions (chapter 14's "is
attention explanation?"): each replacement on hand-built weights, the
windows (evaluation and reference disjoint), and the shipped costs against
a recomputation of one head."""

import pytest
import torch

from attnbook.experiments.head_circuits import (
    language_model_forward,
    uniform_causal_weights,
)
from attnbook.experiments.head_interventions import (
    REPLACEMENTS,
    WINDOWS,
    bits_per_window,
    head_intervention_results,
    held_out_windows,
    replaced,
)


def causal_weights(batch=3, heads=2, n=6, seed=0):
    g = torch.Generator().manual_seed(seed)
    scores = torch.randn(batch, heads, n, n, generator=g)
    hidden = torch.ones(n, n, dtype=torch.bool).triu(1)
    return scores.masked_fill(hidden, float("-inf")).softmax(dim=-1)


def test_each_replacement_changes_only_its_head():
    w = causal_weights()
    before = w.clone()
    mean = w.mean(dim=0) * 0 + uniform_causal_weights(6) * 0.5
    mean[..., 0] += 0.5  # rows still sum to 1
    for how in REPLACEMENTS:
        out = replaced(w, 1, how, mean, torch.Generator().manual_seed(0))
        assert torch.equal(w, before)  # the input is not changed
        assert torch.equal(out[:, 0], w[:, 0])  # the other head is kept
        if how == "zero":
            assert not out[:, 1].any()
        elif how == "uniform":
            assert torch.equal(
                out[:, 1], uniform_causal_weights(6).expand(3, 6, 6)
            )
        elif how == "mean":
            assert torch.equal(out[:, 1], mean[1].expand(3, 6, 6))
        else:  # the same numbers per row, on other keys, none in the future
            assert torch.allclose(
                out[:, 1].sort(dim=-1).values, w[:, 1].sort(dim=-1).values
            )
            assert not out[:, 1].triu(1).any()
            assert not torch.equal(out[:, 1], w[:, 1])


def test_bad_replacements_refused():
    w = causal_weights()
    with pytest.raises(ValueError, match="how must be one of"):
        replaced(w, 0, "resample")
    with pytest.raises(ValueError, match="mean_pattern"):
        replaced(w, 0, "mean")
    with pytest.raises(ValueError, match="mean_pattern"):
        replaced(w, 0, "mean", torch.ones(2, 5, 5))
    with pytest.raises(ValueError, match="head"):
        replaced(w, 2, "zero")
    with pytest.raises(ValueError, match=r"\(B, heads, n, n\)"):
        replaced(w[0], 0, "zero")
    with pytest.raises(TypeError, match="floating"):
        replaced(torch.ones(1, 1, 2, 2, dtype=torch.long), 0, "zero")


def test_windows_are_disjoint_and_consecutive():
    ids = torch.arange(100)
    evaluation, reference = held_out_windows(ids, 3, 9)
    assert evaluation.shape == reference.shape == (3, 10)
    assert not set(evaluation.flatten().tolist()) & set(
        reference.flatten().tolist()
    )
    assert torch.equal(evaluation.flatten(), torch.arange(30))
    with pytest.raises(ValueError, match="at least 60 tokens"):
        held_out_windows(torch.arange(59), 3, 9)


def test_bits_per_window_is_the_mean_cross_entropy_in_bits():
    logits = torch.zeros(2, 3, 4)  # uniform over 4: 2 bits everywhere
    targets = torch.zeros(2, 3, dtype=torch.long)
    assert torch.allclose(
        bits_per_window(logits, targets), torch.full((2,), 2.0)
    )


@pytest.fixture(scope="module")
def lm_and_windows():
    from attnbook import pretrained_language_model
    from attnbook.tasks.text import corpus_split, encode

    model = pretrained_language_model().model.double().eval()
    _, held_out_text = corpus_split()
    windows = held_out_windows(
        encode(held_out_text), WINDOWS["count"], WINDOWS["length"]
    )
    return model, windows


def test_shipped_costs_match_a_recomputation(lm_and_windows):
    model, (windows, reference) = lm_and_windows
    costs = head_intervention_results()
    assert costs["zero"].shape == (4, 4, WINDOWS["count"])
    _, ref_weights = language_model_forward(model, reference[:, :-1])
    mean = ref_weights[2].mean(dim=0)
    first = windows[:4]
    logits, _ = language_model_forward(model, first[:, :-1])
    base = bits_per_window(logits, first[:, 1:])
    torch.testing.assert_close(base, costs["base"][:4], atol=1e-4, rtol=0)
    for how in ("zero", "mean"):

        def edit(index, weights):
            return weights if index != 2 else replaced(weights, 1, how, mean)

        logits, _ = language_model_forward(model, first[:, :-1], edit)
        added = bits_per_window(logits, first[:, 1:]) - base
        torch.testing.assert_close(
            added, costs[how][2, 1, :4], atol=1e-4, rtol=0
        )


def test_the_shipped_costs_say_what_the_chapter_says():
    costs = head_intervention_results()
    mean = {how: costs[how].mean(dim=-1) for how in REPLACEMENTS}
    # layer 0: removing a head costs > 0.5 bits, its mean pattern < 0.4
    assert mean["zero"][0].min() > 0.5 and mean["mean"][0].max() < 0.4
    assert (mean["shuffle"][0] > mean["zero"][0]).all()
    # later heads: every replacement costs < 0.2 bits
    assert max(mean[how][1:].max() for how in REPLACEMENTS) < 0.2


def test_too_many_windows_are_refused_before_any_forward_pass():
    from attnbook import pretrained_language_model
    from attnbook.experiments.head_interventions import (
        MAX_WINDOWS,
        intervention_costs,
    )

    model = pretrained_language_model().model
    many = torch.zeros(MAX_WINDOWS + 1, 3, dtype=torch.int64)
    few = torch.zeros(2, 3, dtype=torch.int64)
    with pytest.raises(ValueError, match="windows holds 4,097 windows"):
        intervention_costs(model, many, few)
    with pytest.raises(ValueError, match="reference holds 4,097 windows"):
        intervention_costs(model, few, many)
