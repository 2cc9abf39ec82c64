"""attnbook._checks: the two checks on every attention call's path against
torch's own, and the shared argument checks' messages."""

import random

import pytest
import torch

import attnbook
from attnbook import _checks
from attnbook._checks import all_finite, broadcast_shapes

from _refusals import wide


@pytest.mark.parametrize(
    "dtype", [torch.float16, torch.float32, torch.float64]
)
@pytest.mark.parametrize("bad", [float("nan"), float("inf"), -float("inf")])
def test_all_finite_finds_one_bad_entry_anywhere(dtype, bad):
    x = torch.randn(3, 50, 7).to(dtype)
    assert all_finite(x)
    for index in [(0, 0, 0), (2, 49, 6), (1, 20, 3)]:
        y = x.clone()
        y[index] = bad
        assert not all_finite(y)


def test_all_finite_is_exact_when_the_sum_overflows():
    big = torch.full((10,), torch.finfo(torch.float32).max)
    assert not torch.isfinite(big.sum())  # the fast path cannot decide
    assert all_finite(big)
    mixed = torch.tensor([torch.finfo(torch.float32).max, -float("inf")])
    assert not all_finite(mixed)
    half = torch.full((100,), 60000.0, dtype=torch.float16)
    assert all_finite(half)


def test_all_finite_other_kinds():
    assert all_finite(torch.empty(0, 4))
    assert all_finite(torch.arange(5))  # integers are finite
    assert all_finite(torch.ones(2, dtype=torch.bool))
    x = torch.randn(4, requires_grad=True)
    assert all_finite(x * 2)  # no graph needed, none built
    assert not all_finite(torch.tensor([1.0, float("nan"), 0, 0]) * x)


def test_broadcast_shapes_agrees_with_torch():
    rng = random.Random(0)
    for _ in range(5000):
        shapes = [
            tuple(rng.choice([0, 1, 2, 3]) for _ in range(rng.randint(0, 4)))
            for _ in range(rng.randint(1, 3))
        ]
        try:
            expected = torch.broadcast_shapes(*shapes)
        except RuntimeError:
            with pytest.raises(RuntimeError):
                broadcast_shapes(*shapes)
            continue
        got = broadcast_shapes(*shapes)
        assert got == expected and isinstance(got, torch.Size)


def test_a_broadcast_view_beyond_the_limit_is_refused_by_require_tensor():
    x = wide(torch.randn(2, 8))  # 32 GB if copied, 32 bytes held
    with pytest.raises(ValueError, match="x, a broadcast view"):
        _checks.require_tensor("x", x)


def test_a_real_tensor_beyond_the_limit_is_not_a_view_and_passes():
    x = torch.zeros(64, 4)  # 1,024 bytes, all held
    previous = attnbook.set_matrix_memory_limit(1000)
    try:
        assert _checks.require_tensor("x", x) is x
        with pytest.raises(ValueError, match="x, a broadcast view"):
            _checks.require_tensor("x", x[:1].expand(1000, 4))
    finally:
        attnbook.set_matrix_memory_limit(previous)


@pytest.mark.parametrize("value", [10**400, -(10**400)])
def test_an_int_beyond_every_float_is_not_a_finite_number(value):
    assert not _checks.is_finite_number(value)
    with pytest.raises(ValueError, match="delta must be a finite number"):
        _checks.require_finite_number("delta", value)


def test_require_shape_names_both_shapes():
    with pytest.raises(ValueError, match=r"fed must have shape \(2, 1, n\)"):
        _checks.require_shape("fed", torch.zeros(2, 3, 4), (2, 1, None))


@pytest.mark.parametrize(
    "settings, match",
    [
        (dict(steps=2.5), "steps must be a non-negative int"),
        (dict(steps=-1), "steps must be a non-negative int"),
        (dict(batch_size=None), "batch_size must be a positive int"),
        (dict(warmup="3"), "warmup must be a non-negative int"),
        (dict(seed=10**400), "seed = 1000"),
        (dict(lr=float("nan")), "lr must be a finite number"),
        (dict(lr=0.0), r"lr must be in \(0.0"),
        (dict(lr=1e300), "lr must be in"),
        (dict(weight_decay=-1.0), r"weight_decay must be in \[0.0"),
        (dict(eval_every=0), "eval_every must be a positive int"),
    ],
)
def test_require_training_names_the_setting(settings, match):
    with pytest.raises(ValueError, match=match):
        _checks.require_training(**settings)


def test_ordinary_sequences_only_says_yes_when_every_check_passes():
    """require_sequences' fast path: wherever it answers True, the checks
    one by one pass too; every way of failing one of them answers False."""
    from attnbook._checks import _ordinary_sequences, require_sequences

    q, k = torch.randn(2, 3, 5, 4), torch.randn(2, 3, 7, 4)
    assert _ordinary_sequences([q, k])
    require_sequences(queries=q, keys=k)
    for bad in (
        [q, torch.randn(1, 3, 7, 4)],  # broadcasts, but not one batch shape
        [q, torch.randn(7, 4)],
        [q, k.long()],
        [q, torch.randn(4)],
        [q, torch.randn(2, 3, 7, 4, device="meta")],
        [q, "keys"],
        [q, torch.randn(1, 1, 1, 4).expand(2, 3, 2**28, 4)],
    ):
        assert not _ordinary_sequences(bad)
