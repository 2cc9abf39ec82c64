"""Tests for attnbook.measure.head_scores: previous-token and induction scores on hand-built weights.

References: a pure previous-token matrix (score 1), exact induction patterns that pick the last
earlier copy or split their weight over every earlier copy (both score 1), a uniform causal matrix
(the counts of earlier copies written out by hand), and the definitions as explicit loops over a
token sequence that repeats.
"""

import pytest
import torch

from attnbook import induction_score, previous_token_score


def previous_token_matrix(n):
    """Query 0 on itself, every later query i entirely on key i - 1."""
    w = torch.zeros(n, n)
    w[0, 0] = 1.0
    for i in range(1, n):
        w[i, i - 1] = 1.0
    return w


def induction_matrix(n, period):
    """Queries i >= period entirely on key i - period + 1; the first part on itself."""
    w = torch.zeros(n, n)
    for i in range(n):
        w[i, i - period + 1 if i >= period else i] = 1.0
    return w


def split_induction_matrix(n, period):
    """Queries i >= period split their weight equally over every key that
    followed an earlier copy of token i (i - P + 1, i - 2P + 1, ...)."""
    w = torch.zeros(n, n)
    for i in range(n):
        keys = list(range(i - period + 1, 0, -period)) if i >= period else [i]
        w[i, keys] = 1.0 / len(keys)
    return w


def uniform_causal(n):
    """w[i, j] = 1/(i+1) for j <= i."""
    return torch.tril(torch.ones(n, n)) / torch.arange(1, n + 1)[:, None]


def loop_previous(w):
    n = w.shape[-1]
    return sum(w[..., i, i - 1] for i in range(1, n)) / (n - 1)


def loop_induction(w, period):
    """The definition on tokens: a segment 0 .. P - 1 repeated to n
    positions; for each query i >= P, the weight on every key m + 1 where
    token m (m < i) equals token i, averaged over the queries."""
    n = w.shape[-1]
    tokens = [position % period for position in range(n)]
    total = 0
    for i in range(period, n):
        earlier = [m for m in range(i) if tokens[m] == tokens[i]]
        total = total + sum(w[..., i, m + 1] for m in earlier)
    return total / (n - period)


def test_a_previous_token_head_scores_one():
    assert previous_token_score(previous_token_matrix(7)).item() == 1.0
    assert previous_token_score(torch.eye(7)).item() == 0.0


def test_an_exact_induction_pattern_scores_one():
    for n, period in [(12, 6), (9, 4), (5, 1), (2, 1), (64, 8), (64, 16)]:
        assert (
            induction_score(induction_matrix(n, period), period).item() == 1.0
        )
    # the induction head is no previous-token head, and the reverse
    assert previous_token_score(induction_matrix(12, 6)).item() < 0.1
    assert induction_score(previous_token_matrix(12), 6).item() == 0.0


@pytest.mark.parametrize("period", [3, 5, 8, 16, 24, 31])
def test_a_head_splitting_over_every_earlier_copy_scores_one(period):
    """The bias review F found: a head that spreads over the three earlier
    copies must not be marked down against one that picks the last."""
    n = 64
    split = split_induction_matrix(n, period)
    assert induction_score(split, period).item() == pytest.approx(1.0)
    # the weight on the most recent copy alone is below 1 when copies repeat
    last_only = sum(split[i, i - period + 1] for i in range(period, n))
    if n >= 3 * period:
        assert last_only / (n - period) < 0.9


@pytest.mark.parametrize("period", [3, 8, 16])
def test_heads_that_do_something_else_score_low(period):
    n = 64
    # previous-token head, a head on the earlier copy itself (not the token
    # after it), and a head on its own position
    on_copy = torch.zeros(n, n)
    for i in range(n):
        on_copy[i, i - period if i >= period else i] = 1.0
    for w in (previous_token_matrix(n), on_copy, torch.eye(n)):
        assert induction_score(w, period).item() == 0.0
    # a uniform head scores about 1 / P, far below 1
    uniform = induction_score(uniform_causal(n), period).item()
    assert 0.4 / period < uniform < 1.0 / period


def test_the_score_does_not_move_with_the_period():
    """The same share of weight on the earlier copies, 0.7, gives the same
    score whatever P is."""
    n = 96
    for period in (8, 16, 24):
        w = 0.7 * split_induction_matrix(n, period) + 0.3 * torch.eye(n)
        assert induction_score(w, period).item() == pytest.approx(0.7)


def test_uniform_causal_weights_give_the_known_means():
    n, period = 8, 3
    w = uniform_causal(n)
    previous = sum(1 / (i + 1) for i in range(1, n)) / (n - 1)  # (H_8 - 1) / 7
    # queries 3..7 see 4..8 keys; earlier copies of token i: 1, 1, 1, 2, 2
    induction = (1 / 4 + 1 / 5 + 1 / 6 + 2 / 7 + 2 / 8) / 5
    assert previous_token_score(w).item() == pytest.approx(previous, rel=1e-6)
    assert induction_score(w, period).item() == pytest.approx(
        induction, rel=1e-6
    )
    assert previous == pytest.approx((761 / 280 - 1) / 7)


def test_one_score_per_leading_index():
    g = torch.Generator().manual_seed(0)
    w = torch.softmax(
        torch.randn(3, 4, 10, 10, generator=g), dim=-1
    )  # (layers, heads, n, n)
    prev, ind = previous_token_score(w), induction_score(w, 5)
    assert prev.shape == (3, 4) and ind.shape == (3, 4)
    torch.testing.assert_close(prev, loop_previous(w))
    torch.testing.assert_close(ind, loop_induction(w, 5))
    torch.testing.assert_close(induction_score(w, 3), loop_induction(w, 3))
    torch.testing.assert_close(ind[1, 2], induction_score(w[1, 2], 5))
    assert previous_token_score(w[0, 0]).shape == ()


def test_float64_in_float64_out():
    w = uniform_causal(6).double()
    assert previous_token_score(w).dtype == torch.float64
    assert induction_score(w, 3).dtype == torch.float64


@pytest.mark.parametrize(
    "weights, error, match",
    [
        ([[1.0]], TypeError, "weights must be a torch.Tensor"),
        (torch.ones(4, 4, dtype=torch.int64), TypeError, "floating-point"),
        (torch.ones(4), ValueError, r"\(\.\.\., n, n\)"),
        (torch.ones(2, 3, 4), ValueError, "as many queries as keys"),
        (torch.ones(3, 1, 1), ValueError, "n >= 2"),
    ],
)
def test_bad_weights_refused(weights, error, match):
    with pytest.raises(error, match=match):
        previous_token_score(weights)
    with pytest.raises(error, match=match):
        induction_score(weights, 1)


@pytest.mark.parametrize("period", [0, 6, -1, 2.0, True, None])
def test_bad_period_refused(period):
    with pytest.raises(ValueError, match="period"):
        induction_score(uniform_causal(6), period)
