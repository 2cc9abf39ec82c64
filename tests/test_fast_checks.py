"""The two checks on every attention call's path, against torch's own."""

import random

import pytest
import torch

from attnbook._checks import all_finite, broadcast_shapes


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


def test_a_decoding_step_takes_the_plain_path_even_without_gradients():
    """attention overwrites the scores with the weights (the careful path)
    only for score matrices of at least REUSE_SCORES bytes; a step of one
    query reading a few keys is all fixed costs, kept low."""
    from attnbook.core.attention import REUSE_SCORES, _needs_care

    step = torch.randn(1, 4, 1, 16), torch.randn(1, 4, 12, 16)
    n = 1024
    big = torch.randn(n, 16), torch.randn(n, 16)
    assert n * n * 4 >= REUSE_SCORES
    with torch.no_grad():
        assert not _needs_care(*step, step[1], None)
        assert _needs_care(*big, big[1], None)
