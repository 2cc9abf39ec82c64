"""Chapter 17's retrieval experiment and explorer view: the memories
behave as the algebra says, and nothing moves the global random state."""

import pytest
import torch

from attnbook.experiments.memory_retrieval import (
    MEMORIES,
    performer_errors,
    random_pairs,
    retrieval_curve,
    retrieval_errors,
)
from attnbook.widgets.fixed_memory import memory_view


def test_least_squares_exact_up_to_d_and_softmax_always():
    keys, values = random_pairs(16, 16, 8, seed=3)
    assert retrieval_errors("least squares", keys, values).max() < 1e-20
    assert retrieval_errors("softmax", keys, values).max() < 1e-6
    keys, values = random_pairs(32, 16, 8, seed=3)
    error = retrieval_errors("least squares", keys, values).mean()
    assert 0.3 < error < 0.7  # about 1 - d/P = 0.5


def test_sum_of_outer_products_interferes_like_p_minus_1_over_d():
    curve = retrieval_curve("linear", 64, [16, 64], seeds=range(4))
    means = curve.mean(0)
    assert abs(means[0] - 15 / 64) < 0.05
    assert abs(means[1] - 63 / 64) < 0.15


def test_delta_rule_beats_the_sum_and_overwrites_exactly():
    curve = {m: retrieval_curve(m, 32, [32], seeds=(0, 1)) for m in MEMORIES}
    assert curve["delta"].mean() < 0.8 * curve["linear"].mean()
    keys, values = random_pairs(40, 16, 4, seed=1)
    errors = retrieval_errors("delta", keys, values)
    assert errors[-1] < 1e-20  # beta = 1: the last pair is exact


def test_gate_fades_old_pairs_of_the_sum():
    keys, values = random_pairs(4, 64, 4, seed=0)
    keys = torch.linalg.qr(keys.T).Q.T  # orthonormal: no interference
    gate = torch.full((4,), 0.5, dtype=torch.float64)
    errors = retrieval_errors("linear", keys, values, gate=gate)
    # pair i keeps 0.5**(3 - i) of its value: error (1 - that)^2
    expected = torch.tensor([0.875**2, 0.75**2, 0.5**2, 0.0])
    assert (errors - expected.double()).abs().max() < 1e-12


def test_performer_errors_fall_and_rng_untouched():
    state = torch.get_rng_state()
    errors = performer_errors([16, 1024], seeds=(0, 1), n=16, dim=8)
    assert torch.equal(state, torch.get_rng_state())
    assert (errors[:, 1] < errors[:, 0]).all()


def test_memory_view():
    view = memory_view(key_dim=16, gate=1.0, pairs=8)
    assert len(view["errors"]["delta"]) == 8
    assert view["errors"]["delta"][-1] < 1e-20
    with pytest.raises(ValueError, match="gate"):
        memory_view(gate=0.0)


def test_bad_input():
    keys, values = random_pairs(4, 8, 3)
    with pytest.raises(ValueError, match="memory"):
        retrieval_errors("lstm", keys, values)
    with pytest.raises(ValueError, match="keys and values"):
        retrieval_errors("delta", keys, values[:3])
    with pytest.raises(ValueError, match="pair_counts"):
        retrieval_curve("delta", 8, [])
