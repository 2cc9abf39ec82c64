"""attnbook.experiments.score_scaling: chapter 2's softmax statistics, the
Jacobian and the random queries and keys, and their checks."""

import pytest
import torch


def test_random_queries_and_keys_refuses_a_huge_dim():
    from attnbook.experiments.score_scaling import random_queries_and_keys

    with pytest.raises(ValueError, match="GiB"):
        random_queries_and_keys(10**12)


# D14: extreme but accepted parameters give an error, not NaN statistics.
def test_softmax_statistics_refuses_a_temperature_that_overflows():
    from attnbook.experiments.score_scaling import softmax_statistics

    scores = torch.randn(4, 8)
    with pytest.raises(ValueError, match="temperature"):
        softmax_statistics(scores, temperature=1e-320)
    with pytest.raises(ValueError, match="shape"):
        softmax_statistics(torch.empty(0, 8))
