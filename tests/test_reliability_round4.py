"""Reliability, round 4 (issue 21): what the last full probe run still found
in the helpers, and the new chapter 13 helpers, each now a clear error."""

import pytest
import torch

from attnbook.experiments.complexity import median_forward_time
from attnbook.experiments.hard_training import leave_one_out_baseline
from attnbook.experiments.kv_sharing import (
    cached_numbers_per_token,
    results_json,
)
from attnbook.experiments.score_scaling import softmax_jacobian


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


def test_the_leave_one_out_baseline_refuses_a_huge_view_before_allocating():
    huge = torch.zeros(1).expand(10**9)
    with pytest.raises(ValueError, match=r"baselines of shape \(2, 10+\)"):
        leave_one_out_baseline(huge)


def test_median_forward_time_names_a_layer_that_cannot_take_x():
    layer, x = torch.nn.Linear(2, 2), torch.randn(2, 6, 4)
    state = torch.random.get_rng_state()
    with pytest.raises(ValueError, match=r"Linear\) cannot take x of shape"):
        median_forward_time(layer, x)
    assert torch.equal(torch.random.get_rng_state(), state)


@pytest.mark.parametrize("config", [None, "x", [("num_kv_heads", 2)]])
def test_cached_numbers_per_token_needs_a_dict(config):
    with pytest.raises(TypeError, match="config must be a dict"):
        cached_numbers_per_token(config)


@pytest.mark.parametrize("records", [None, "abc", [None], [{"seed": 0}]])
def test_results_json_needs_run_variant_records(records):
    with pytest.raises(TypeError, match="records must be a list"):
        results_json(records)
