"""Nadaraya-Watson regression against the direct kernel formula."""

import math

import pytest
import torch

import attnbook
from attnbook import (
    gaussian_scores,
    nadaraya_watson,
    regression_data,
    regression_target,
)

from _refusals import refused


def test_weights_and_predictions_equal_the_kernel_formula_elementwise():
    x_train, y_train, x_test, _ = regression_data(n_train=12, n_test=7, seed=3)
    bandwidth = 0.4
    predictions, weights = nadaraya_watson(
        x_test.double(), x_train.double(), y_train.double(), bandwidth
    )
    for i, x in enumerate(x_test.tolist()):
        kernel = [
            math.exp(-((x - xi) ** 2) / (2 * bandwidth**2))
            for xi in x_train.tolist()
        ]
        total = sum(kernel)
        for j in range(len(kernel)):
            assert weights[i, j].item() == pytest.approx(
                kernel[j] / total, rel=1e-6
            )
        expected = sum(k * y for k, y in zip(kernel, y_train.tolist())) / total
        assert predictions[i].item() == pytest.approx(expected, rel=1e-5)


def test_weights_equal_torch_softmax_of_gaussian_scores():
    query, key = torch.linspace(0, 1, 5), torch.linspace(-1, 2, 9)
    _, weights = nadaraya_watson(query, key, torch.zeros(9), bandwidth=0.7)
    expected = torch.softmax(
        -((query[:, None] - key[None, :]) ** 2) / (2 * 0.49), dim=-1
    )
    torch.testing.assert_close(weights, expected)
    torch.testing.assert_close(
        gaussian_scores(query, key, 0.7), -((query[:, None] - key) ** 2) / 0.98
    )


def test_rows_sum_to_one_and_vector_values_work():
    x_train, y_train, x_test, _ = regression_data(n_train=20, n_test=10)
    values = torch.stack([y_train, 2 * y_train], dim=1)
    predictions, weights = nadaraya_watson(
        x_test, x_train, values, bandwidth=0.5
    )
    torch.testing.assert_close(weights.sum(dim=1), torch.ones(10))
    torch.testing.assert_close(predictions[:, 1], 2 * predictions[:, 0])


def test_bandwidth_limits():
    x_train, y_train, x_test, _ = regression_data(n_train=30, n_test=10)
    wide, _ = nadaraya_watson(x_test, x_train, y_train, bandwidth=1e4)
    torch.testing.assert_close(
        wide, y_train.mean().expand(10), atol=1e-4, rtol=0
    )
    narrow, _ = nadaraya_watson(x_train, x_train, y_train, bandwidth=1e-4)
    torch.testing.assert_close(narrow, y_train)


def test_kernel_regression_beats_average_pooling_on_the_chapter_task():
    x_train, y_train, x_test, y_true = regression_data()
    fit, _ = nadaraya_watson(x_test, x_train, y_train, bandwidth=0.3)
    kernel_error = ((fit - y_true) ** 2).mean()
    average_error = ((y_train.mean() - y_true) ** 2).mean()
    assert kernel_error < average_error / 5


def test_regression_data_is_seeded_and_follows_the_target():
    a = regression_data(seed=7)
    b = regression_data(seed=7)
    assert all(torch.equal(u, v) for u, v in zip(a, b))
    x_train, y_train, x_test, y_true = a
    assert torch.all(x_train[1:] >= x_train[:-1])
    torch.testing.assert_close(y_true, 2 * torch.sin(x_test) + x_test**0.8)
    assert regression_target(torch.tensor([0.0])).item() == 0.0
    assert not torch.equal(regression_data(seed=8)[1], y_train)


def test_bad_inputs():
    x = torch.linspace(0, 1, 4)
    with pytest.raises(ValueError, match="key_x has 4, values has 3"):
        nadaraya_watson(x, x, torch.zeros(3))
    with pytest.raises(ValueError, match="bandwidth must be a positive"):
        nadaraya_watson(x, x, torch.zeros(4), bandwidth=0.0)
    with pytest.raises(ValueError, match="1-D"):
        nadaraya_watson(x[:, None], x, torch.zeros(4))
    with pytest.raises(TypeError, match="floating-point"):
        nadaraya_watson(torch.arange(4), x, torch.zeros(4))


@pytest.mark.parametrize("bandwidth", [1e-25, 1e-30, 1e-45, 1e-200])
def test_nadaraya_watson_tiny_bandwidth_is_nearest_neighbour(bandwidth):
    predictions, weights = nadaraya_watson(
        torch.tensor([0.0, 1.0, 2.9]),
        torch.tensor([0.0, 1.0, 2.0, 3.0]),
        torch.tensor([1.0, 2.0, 3.0, 4.0]),
        bandwidth=bandwidth,
    )
    assert torch.equal(predictions, torch.tensor([1.0, 2.0, 4.0]))
    assert torch.equal(weights.sum(dim=1), torch.ones(3))


@pytest.mark.parametrize(
    "query, nearest",
    [(1e19, 3.0), (1e20, 3.0), (3e38, 3.0), (-1e25, 1.0), (-3e38, 1.0)],
)
def test_nadaraya_watson_far_query_gets_the_nearest_key(query, nearest):
    predictions, _ = nadaraya_watson(
        torch.tensor([query]),
        torch.tensor([0.0, 1.0, 2.0]),
        torch.tensor([1.0, 2.0, 3.0]),
    )
    assert predictions.item() == nearest


def test_nadaraya_watson_nan_query_stays_nan():
    predictions, _ = nadaraya_watson(
        torch.tensor([float("nan"), 1.0]),
        torch.tensor([0.0, 1.0]),
        torch.tensor([1.0, 2.0]),
    )
    assert torch.isnan(predictions[0]) and torch.isfinite(predictions[1])


# Kernel regression's data, target and extreme bandwidths.
@pytest.mark.parametrize(
    "kwargs",
    [
        {"n_test": 0},
        {"n_train": -1},
        {"seed": "0"},
        {"noise": float("nan")},
        {"n_train": 10**12},
    ],
)
def test_regression_data_refuses_bad_arguments(kwargs):
    with pytest.raises((ValueError, TypeError)):
        attnbook.regression_data(**kwargs)


def test_regression_target_refuses_what_is_not_a_tensor():
    with pytest.raises(TypeError, match="x"):
        attnbook.regression_target(None)


def test_extreme_bandwidths_give_the_limit_not_nan():
    x = torch.tensor([0.0, 1.0])
    wide = attnbook.gaussian_scores(x, x, 1e200)
    narrow = attnbook.gaussian_scores(x, x, 1e-200)
    assert (wide == 0).all()
    assert narrow[0, 0] == 0 and narrow[0, 1] == -float("inf")
    with pytest.raises(ValueError, match="bandwidth"):
        attnbook.gaussian_scores(x, x, 10**400)


def test_mean_squared_error_refuses_empty_or_mismatched_tensors():
    from attnbook.core.kernel_regression import mean_squared_error

    with pytest.raises(ValueError, match="shape"):
        mean_squared_error(torch.empty(0), torch.empty(0))
    with pytest.raises(ValueError, match="shape"):
        mean_squared_error(torch.zeros(3), torch.zeros(4))


def test_gaussian_scores_below_the_range_are_minus_inf_not_nan():
    scores = attnbook.gaussian_scores(
        torch.tensor([0.0, 1.0]), torch.tensor([0.0, 1.0]), 1e-320
    )
    assert not scores.isnan().any()
    assert torch.equal(scores.diagonal(), torch.zeros(2))
    assert (scores[0, 1] == -torch.inf).item()


def test_regression_target_counts_its_temporaries_before_allocating():
    from attnbook.core.kernel_regression import regression_target

    x = torch.zeros(()).expand(10**9)  # 4 GB as a copy; 12 GB in all
    refused(lambda: regression_target(x), ValueError, "f\\(x\\) and its two")
    small = torch.linspace(0, 5, 7)
    assert torch.equal(
        regression_target(small), 2 * torch.sin(small) + small.pow(0.8)
    )
