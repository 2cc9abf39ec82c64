"""Tests for attnbook.core.rotary.apply_rotary (RoPE).

References: the formula entry by entry with math.cos / math.sin, multiplication of complex
numbers with torch.complex tensors, and the shift matrix of attnbook.core.positional.
"""

import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import attnbook
from attnbook import apply_rotary, attention_weights
from attnbook.core.positional import position_shift_matrix

FAST = settings(max_examples=40, deadline=None)


def direct_rotary(x, positions, base=10000.0):
    """out[2j] = x[2j] cos a - x[2j+1] sin a, out[2j+1] = x[2j] sin a + x[2j+1] cos a, a = pos / base^(2j/d)."""
    x = x.double()
    n, d = x.shape
    out = torch.empty_like(x)
    for row in range(n):
        for j in range(d // 2):
            angle = float(positions[row]) / base ** (2 * j / d)
            a, b = x[row, 2 * j].item(), x[row, 2 * j + 1].item()
            out[row, 2 * j] = a * math.cos(angle) - b * math.sin(angle)
            out[row, 2 * j + 1] = a * math.sin(angle) + b * math.cos(angle)
    return out


def complex_rotary(x, positions, base=10000.0):
    """Each pair as one complex number x[2j] + i x[2j+1], multiplied by exp(i pos omega_j) with torch.complex."""
    d = x.shape[-1]
    omega = 1.0 / base ** (torch.arange(0, d, 2, dtype=torch.float64) / d)
    angle = positions.double()[..., None] * omega
    pairs = torch.view_as_complex(
        x.double().reshape(*x.shape[:-1], d // 2, 2).contiguous()
    )
    turned = pairs * torch.polar(torch.ones_like(angle), angle)
    return torch.view_as_real(turned).reshape(x.shape)


def gen(seed):
    return torch.Generator().manual_seed(seed)


@pytest.mark.parametrize(
    "n, d, base",
    [(3, 4, 10000.0), (7, 16, 10000.0), (5, 6, 100.0), (2, 2, 10.0)],
)
def test_matches_the_formula_entry_by_entry(n, d, base):
    x = torch.randn(n, d, generator=gen(n * d))
    positions = torch.tensor([0, 1, 5, 17, 250, 3, 1000][:n])
    out = apply_rotary(x, positions, base)
    assert out.shape == x.shape and out.dtype == x.dtype
    torch.testing.assert_close(
        out.double(), direct_rotary(x, positions, base), atol=1e-5, rtol=0
    )


@FAST
@given(
    n=st.integers(1, 8),
    half_d=st.integers(1, 12),
    seed=st.integers(0, 2**16),
    far=st.booleans(),
)
def test_equals_multiplying_complex_numbers(n, half_d, seed, far):
    x = torch.randn(2, n, 2 * half_d, generator=gen(seed), dtype=torch.float64)
    positions = torch.randint(
        0, 5000 if far else 20, (n,), generator=gen(seed + 1)
    )
    torch.testing.assert_close(
        apply_rotary(x, positions),
        complex_rotary(x, positions),
        atol=1e-10,
        rtol=0,
    )


@FAST
@given(
    i=st.integers(0, 2000),
    j=st.integers(0, 2000),
    shift=st.integers(-1000, 5000),
    half_d=st.integers(1, 16),
    seed=st.integers(0, 2**16),
)
def test_score_depends_only_on_the_offset(i, j, shift, half_d, seed):
    """rot(q, i) . rot(k, j) == rot(q, i + s) . rot(k, j + s) for any shift s (even into negative positions)."""
    q, k = torch.randn(2, 2 * half_d, generator=gen(seed), dtype=torch.float64)
    score = apply_rotary(q, i) @ apply_rotary(k, j)
    shifted = apply_rotary(q, i + shift) @ apply_rotary(k, j + shift)
    assert abs(score.item() - shifted.item()) < 1e-9 * (
        1 + q.norm().item() * k.norm().item()
    )


def test_score_is_q_times_the_shift_matrix_of_the_offset_times_k():
    """Row convention: rot(x, i) = x M(i), so rot(q, i) . rot(k, j) = q M(i - j) k^T."""
    q, k = torch.randn(2, 16, generator=gen(3), dtype=torch.float64)
    for i in (0, 4, 90):
        torch.testing.assert_close(
            apply_rotary(q, i),
            q @ position_shift_matrix(i, 16).double(),
            atol=1e-6,
            rtol=0,
        )
    for i, j in ((9, 2), (2, 9), (300, 300)):
        expected = q @ position_shift_matrix(i - j, 16).double() @ k
        torch.testing.assert_close(
            apply_rotary(q, i) @ apply_rotary(k, j),
            expected,
            atol=1e-5,
            rtol=0,
        )


def test_attention_weights_unchanged_when_every_position_moves():
    """A whole self-attention pattern with RoPE is invariant to shifting all positions at once."""
    q, k = torch.randn(2, 2, 6, 8, generator=gen(4), dtype=torch.float64)
    positions = torch.arange(6)
    near = attention_weights(
        apply_rotary(q, positions), apply_rotary(k, positions)
    )
    far = attention_weights(
        apply_rotary(q, positions + 1000), apply_rotary(k, positions + 1000)
    )
    torch.testing.assert_close(near, far, atol=1e-10, rtol=0)


@FAST
@given(
    half_d=st.integers(1, 32),
    seed=st.integers(0, 2**16),
    position=st.floats(-1e4, 1e4),
)
def test_norms_are_preserved_per_pair(half_d, seed, position):
    x = torch.randn(3, 2 * half_d, generator=gen(seed), dtype=torch.float64)
    out = apply_rotary(x, position)
    pair_norms = lambda t: t.reshape(3, half_d, 2).norm(dim=-1)
    torch.testing.assert_close(
        pair_norms(out), pair_norms(x), atol=1e-9, rtol=0
    )


def test_position_zero_is_the_identity_and_rotations_compose():
    x = torch.randn(4, 10, generator=gen(5), dtype=torch.float64)
    assert torch.equal(apply_rotary(x, 0), x)
    torch.testing.assert_close(
        apply_rotary(apply_rotary(x, 2.5), 4),
        apply_rotary(x, 6.5),
        atol=1e-12,
        rtol=0,
    )
    torch.testing.assert_close(
        apply_rotary(apply_rotary(x, 7), -7), x, atol=1e-12, rtol=0
    )


def test_float_and_int_positions_agree():
    x = torch.randn(5, 8, generator=gen(6))
    torch.testing.assert_close(
        apply_rotary(x, torch.arange(5)), apply_rotary(x, torch.arange(5.0))
    )


def test_broadcasting_over_batch_and_heads():
    """x (B, h, n, d) with positions (n,), or one row of positions per sequence (B, 1, n)."""
    x = torch.randn(2, 3, 5, 8, generator=gen(7))
    out = apply_rotary(x, torch.arange(5))
    for b in range(2):
        for h in range(3):
            torch.testing.assert_close(
                out[b, h], apply_rotary(x[b, h], torch.arange(5))
            )
    per_sequence = torch.tensor([[0, 1, 2, 3, 4], [10, 11, 12, 13, 14]])[
        :, None, :
    ]  # (B, 1, n)
    out = apply_rotary(x, per_sequence)
    torch.testing.assert_close(
        out[1, 2], apply_rotary(x[1, 2], torch.arange(10, 15))
    )


def test_dtype_is_kept_and_gradients_flow():
    x = torch.randn(
        3, 4, generator=gen(8), dtype=torch.float64, requires_grad=True
    )
    out = apply_rotary(x, torch.arange(3))
    assert out.dtype == torch.float64
    out.pow(2).sum().backward()  # |rot x|^2 = |x|^2, so the gradient is 2x
    torch.testing.assert_close(x.grad, 2 * x.detach())
    assert (
        apply_rotary(
            torch.zeros(2, 4, dtype=torch.float16), torch.arange(2)
        ).dtype
        == torch.float16
    )


@pytest.mark.parametrize(
    "x, positions, error, match",
    [
        (
            torch.zeros(3, 5),
            torch.arange(3),
            ValueError,
            r"even feature size d .* got shape \(3, 5\)",
        ),
        (
            torch.zeros(3, 0),
            torch.arange(3),
            ValueError,
            "even feature size d",
        ),
        (
            torch.zeros(2, 3, 4),
            torch.arange(4),
            ValueError,
            r"positions of shape \(4,\) do not broadcast .* \(2, 3\)",
        ),
        (
            torch.zeros(3, 4),
            torch.zeros(2, 3),
            ValueError,
            r"positions of shape \(2, 3\) would enlarge x",
        ),
        (
            torch.zeros(3, 4, dtype=torch.long),
            torch.arange(3),
            TypeError,
            "floating-point tensor, got dtype torch.int64",
        ),
        (
            torch.zeros(3, 4),
            torch.ones(3, dtype=torch.bool),
            TypeError,
            "integer or real numbers, got dtype torch.bool",
        ),
        (
            torch.zeros(3, 4),
            [0, 1, 2],
            TypeError,
            "positions must be a torch.Tensor, got list",
        ),
        (
            torch.zeros(3, 4),
            torch.tensor([0.0, float("nan"), 1.0]),
            ValueError,
            "finite",
        ),
    ],
)
def test_bad_input(x, positions, error, match):
    with pytest.raises(error, match=match):
        apply_rotary(x, positions)


# Smaller misuse, each with a clear error.
def test_rotary_positions_beyond_every_float_are_refused():
    x = torch.randn(4, 8)
    with pytest.raises(ValueError, match="finite"):
        attnbook.apply_rotary(x, 10**400)


def test_rotary_checks_the_shape_of_positions_before_their_values():
    x = torch.randn(4, 8)
    huge = torch.zeros(()).expand(10**9)  # a stride-0 view of 10**9 numbers
    with pytest.raises(ValueError, match="broadcast"):
        attnbook.apply_rotary(x, huge)
