"""attnbook.experiments.score_scaling: chapter 2's softmax statistics, the
Jacobian and the random queries and keys, and their checks."""

import pytest
import torch

from attnbook.experiments.score_scaling import softmax_jacobian


def test_random_queries_and_keys_refuses_a_huge_dim():
    from attnbook.experiments.score_scaling import random_queries_and_keys

    with pytest.raises(ValueError, match="GiB"):
        random_queries_and_keys(10**12)


# Extreme but accepted parameters give an error, not NaN statistics.
def test_softmax_statistics_refuses_a_temperature_that_overflows():
    from attnbook.experiments.score_scaling import softmax_statistics

    scores = torch.randn(4, 8)
    with pytest.raises(ValueError, match="temperature"):
        softmax_statistics(scores, temperature=1e-320)
    with pytest.raises(ValueError, match="shape"):
        softmax_statistics(torch.empty(0, 8))


def test_softmax_jacobian_refuses_a_0d_tensor():
    with pytest.raises(ValueError, match="at least one dimension"):
        softmax_jacobian(torch.tensor(0.5))


def test_softmax_jacobian_refuses_a_jacobian_beyond_the_memory_limit():
    huge = torch.full((1,), 1.0).expand(10**6)
    with pytest.raises(ValueError, match=r"the Jacobian of shape \(1000000"):
        softmax_jacobian(huge)


def test_softmax_jacobian_still_computes_the_formula():
    w = torch.softmax(torch.randn(3, 5, dtype=torch.float64), -1)
    expected = torch.diag_embed(w) - w[..., :, None] * w[..., None, :]
    torch.testing.assert_close(softmax_jacobian(w), expected)
