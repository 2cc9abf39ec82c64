"""Tests for attnbook.core.long_context: ALiBi's slopes and biases, RoPE's scaled frequencies.

References, written out here independently of the code:
- ALiBi (Press et al. 2022, arXiv 2108.12409): slopes 2^(-8i/h) for h a power of two; for other h
  the rule of get_slopes in github.com/ofirpress/attention_with_linear_biases (the slopes of the
  power of two below, then every other slope of twice that); biases by a double loop.
- Position interpolation (Chen et al. 2023): every frequency divided by the factor.
- NTK-aware scaling: base' = base * s^(d/(d-2)).
- YaRN (Peng et al. 2023, arXiv 2309.00071, section 3.2): h = (1 - gamma) theta / s + gamma theta with
  the ramp gamma on r = L / wavelength between alpha = 1 and beta = 32; sqrt(1/t) = 0.1 ln s + 1.
"""

import math

import pytest
import torch

from attnbook import (
    alibi_bias,
    alibi_slopes,
    apply_rotary,
    causal_mask,
    rope_frequencies,
    yarn_attention_scale,
)
from attnbook.core.positional import pair_frequencies

# ---------------------------------------------------------------- ALiBi slopes


def test_slopes_of_eight_heads_are_the_papers_halves():
    # "For models with 8 heads, the slopes that we used are the geometric sequence 1/2^1, 1/2^2, ..., 1/2^8"
    expected = torch.tensor(
        [1 / 2**k for k in range(1, 9)], dtype=torch.float64
    )
    assert torch.equal(alibi_slopes(8), expected)


@pytest.mark.parametrize("h", [1, 2, 4, 16, 32])
def test_slopes_of_a_power_of_two(h):
    expected = torch.tensor(
        [2 ** (-8 * i / h) for i in range(1, h + 1)], dtype=torch.float64
    )
    torch.testing.assert_close(alibi_slopes(h), expected, atol=0, rtol=1e-15)
    assert (
        alibi_slopes(h).shape == (h,)
        and alibi_slopes(h).dtype == torch.float64
    )


def test_slopes_of_twelve_heads_by_hand():
    # 12 heads: the 8 slopes of 8 heads (2^-1 .. 2^-8), then the slopes of 16 heads at i = 1, 3, 5, 7:
    # 2^(-8*1/16), 2^(-8*3/16), 2^(-8*5/16), 2^(-8*7/16) = 2^-0.5, 2^-1.5, 2^-2.5, 2^-3.5.
    expected = [2.0**-k for k in range(1, 9)] + [
        2.0**-0.5,
        2.0**-1.5,
        2.0**-2.5,
        2.0**-3.5,
    ]
    torch.testing.assert_close(
        alibi_slopes(12),
        torch.tensor(expected, dtype=torch.float64),
        atol=0,
        rtol=1e-15,
    )


def official_get_slopes(n):
    """The recursion of get_slopes in ofirpress/attention_with_linear_biases, written out again."""

    def power_of_2(n):
        start = 2 ** (-(2 ** -(math.log2(n) - 3)))
        return [start * start**i for i in range(n)]

    if math.log2(n).is_integer():
        return power_of_2(n)
    closest = 2 ** math.floor(math.log2(n))
    return (
        power_of_2(closest)
        + official_get_slopes(2 * closest)[0::2][: n - closest]
    )


@pytest.mark.parametrize("h", [3, 5, 6, 7, 9, 12, 20, 24, 40, 48, 96])
def test_slopes_follow_the_official_rule_for_any_head_count(h):
    expected = torch.tensor(official_get_slopes(h), dtype=torch.float64)
    torch.testing.assert_close(alibi_slopes(h), expected, atol=0, rtol=1e-13)


@pytest.mark.parametrize("bad", [0, -1, 2.0, True, None, "8"])
def test_slopes_refuse_a_bad_head_count(bad):
    with pytest.raises(ValueError, match="num_heads"):
        alibi_slopes(bad)


# ---------------------------------------------------------------- ALiBi biases


def loop_bias(slopes, n_q, n_k):
    """bias[h, i, j] = -m_h (p - j) if j <= p else -inf, p = n_k - n_q + i, one entry at a time."""
    out = torch.empty(len(slopes), n_q, n_k, dtype=torch.float64)
    for h, m in enumerate(slopes.tolist()):
        for i in range(n_q):
            p = n_k - n_q + i
            for j in range(n_k):
                out[h, i, j] = -m * (p - j) if j <= p else float("-inf")
    return out


@pytest.mark.parametrize(
    "h, n_q, n_k",
    [(8, 5, None), (4, 3, 7), (12, 1, 6), (3, 6, 6), (2, 0, 4), (5, 4, 4)],
)
def test_bias_matches_a_double_loop(h, n_q, n_k):
    bias = alibi_bias(h, n_q, n_k, dtype=torch.float64)
    expected = loop_bias(alibi_slopes(h), n_q, n_q if n_k is None else n_k)
    assert bias.shape == expected.shape
    torch.testing.assert_close(bias, expected, atol=0, rtol=0)


def test_bias_is_float32_by_default_and_zero_on_the_own_position():
    bias = alibi_bias(8, 6)
    assert bias.dtype == torch.float32 and bias.shape == (8, 6, 6)
    assert torch.equal(bias.diagonal(dim1=-2, dim2=-1), torch.zeros(8, 6))
    assert not torch.signbit(
        bias.diagonal(dim1=-2, dim2=-1)
    ).any()  # +0, not -0
    torch.testing.assert_close(
        bias.double(), loop_bias(alibi_slopes(8), 6, 6), atol=1e-7, rtol=1e-7
    )


def test_bias_is_the_causal_mask_where_infinite():
    for n_q, n_k in [(5, 5), (3, 8)]:
        bias = alibi_bias(4, n_q, n_k)
        assert torch.equal(
            torch.isfinite(bias), causal_mask(n_q, n_k).expand(4, -1, -1)
        )


def test_bias_with_the_scores_gives_the_alibi_weights():
    # Equal scores: weights proportional to 2^(-m distance), nearest key heaviest.
    bias = alibi_bias(2, 4)
    weights = torch.softmax(torch.zeros(2, 4, 4) + bias, dim=-1)
    m = alibi_slopes(2)[0].item()
    row = torch.tensor([math.exp(-m * d) for d in (3, 2, 1, 0)])
    torch.testing.assert_close(weights[0, 3], row / row.sum())


def test_bias_on_a_device_and_dtype():
    bias = alibi_bias(2, 3, 5, dtype=torch.bfloat16, device="cpu")
    assert bias.dtype == torch.bfloat16 and bias.device.type == "cpu"


@pytest.mark.parametrize(
    "kwargs, error, match",
    [
        (dict(num_heads=0, n_q=3), ValueError, "num_heads"),
        (dict(num_heads=2, n_q=-1), ValueError, "n_q"),
        (
            dict(num_heads=2, n_q=4, n_k=3),
            ValueError,
            "n_k = 3 must be at least n_q = 4",
        ),
        (dict(num_heads=2, n_q=2.0), ValueError, "n_q"),
        (dict(num_heads=2, n_q=2, dtype=torch.int64), TypeError, "dtype"),
        (dict(num_heads=2, n_q=2, device="nowhere"), ValueError, "device"),
    ],
)
def test_bias_refuses_bad_arguments(kwargs, error, match):
    with pytest.raises(error, match=match):
        alibi_bias(**kwargs)


def test_bias_refuses_a_float16_overflow_and_a_huge_matrix():
    with pytest.raises(ValueError, match="float16"):
        alibi_bias(1, 1, 200_000, dtype=torch.float16)
    with pytest.raises(ValueError, match="would take"):
        alibi_bias(64, 2**16, 2**16)


# ---------------------------------------------------------------- RoPE frequencies


def theta(d, base=10000.0):
    """theta_j = base^(-2j/d), j = 0 .. d/2 - 1, as Python floats."""
    return [base ** (-2 * j / d) for j in range(d // 2)]


def as_tensor(values):
    return torch.tensor(values, dtype=torch.float64)


@pytest.mark.parametrize(
    "d, base", [(2, 10000.0), (8, 10000.0), (64, 10000.0), (16, 500.0)]
)
def test_unscaled_frequencies_are_ropes(d, base):
    freqs = rope_frequencies(d, base)
    assert freqs.shape == (d // 2,) and freqs.dtype == torch.float64
    torch.testing.assert_close(
        freqs, as_tensor(theta(d, base)), atol=0, rtol=1e-14
    )
    # bit-identical to what apply_rotary uses
    assert torch.equal(freqs, pair_frequencies(d, base))


@pytest.mark.parametrize("factor", [1.0, 2.0, 8, 32.5])
def test_linear_divides_every_frequency_by_the_factor(factor):
    freqs = rope_frequencies(16, scaling="linear", factor=factor)
    torch.testing.assert_close(
        freqs, as_tensor([t / factor for t in theta(16)]), atol=0, rtol=1e-14
    )


def test_linear_is_apply_rotary_at_positions_over_the_factor():
    x = torch.randn(
        5, 8, generator=torch.Generator().manual_seed(0), dtype=torch.float64
    )
    positions = torch.arange(5) * 3
    freqs = rope_frequencies(8, scaling="linear", factor=4.0)
    angle = positions.double()[:, None] * freqs
    even, odd = x[:, 0::2], x[:, 1::2]
    turned = torch.stack(
        (
            even * angle.cos() - odd * angle.sin(),
            even * angle.sin() + odd * angle.cos(),
        ),
        dim=-1,
    ).flatten(-2)
    torch.testing.assert_close(
        turned, apply_rotary(x, positions / 4.0), atol=1e-12, rtol=0
    )


@pytest.mark.parametrize(
    "d, base, factor", [(8, 10000.0, 4.0), (64, 10000.0, 8.0), (4, 100.0, 2.0)]
)
def test_ntk_raises_the_base(d, base, factor):
    new_base = base * factor ** (d / (d - 2))
    freqs = rope_frequencies(d, base, scaling="ntk", factor=factor)
    torch.testing.assert_close(
        freqs, as_tensor(theta(d, new_base)), atol=0, rtol=1e-13
    )
    # the fastest pair is untouched, the slowest divided by the factor exactly
    assert freqs[0] == 1.0
    torch.testing.assert_close(
        freqs[-1].item(), theta(d, base)[-1] / factor, atol=0, rtol=1e-12
    )


def yarn_by_hand(d, base, factor, L, alpha=1.0, beta=32.0):
    """h = (1 - gamma(r)) theta / s + gamma(r) theta, r = L / (2 pi / theta)."""
    out = []
    for t in theta(d, base):
        r = L / (2 * math.pi / t)
        gamma = (
            0.0
            if r < alpha
            else 1.0
            if r > beta
            else (r - alpha) / (beta - alpha)
        )
        out.append((1 - gamma) * t / factor + gamma * t)
    return out


@pytest.mark.parametrize(
    "d, base, factor, L",
    [
        (64, 10000.0, 8.0, 2048),
        (128, 10000.0, 16.0, 4096),
        (16, 10000.0, 4.0, 64),
    ],
)
def test_yarn_matches_the_papers_ramp(d, base, factor, L):
    freqs = rope_frequencies(
        d, base, scaling="yarn", factor=factor, original_context=L
    )
    torch.testing.assert_close(
        freqs, as_tensor(yarn_by_hand(d, base, factor, L)), atol=0, rtol=1e-12
    )


def test_yarn_keeps_the_fast_pairs_and_interpolates_the_slow_ones():
    d, factor, L = 64, 8.0, 2048
    base_freqs = pair_frequencies(d)
    freqs = rope_frequencies(
        d, scaling="yarn", factor=factor, original_context=L
    )
    turns = L * base_freqs / (2 * math.pi)
    fast, slow = turns > 32, turns < 1
    assert fast.sum() >= 5 and slow.sum() >= 5  # both ends are there
    assert torch.equal(
        freqs[fast], base_freqs[fast]
    )  # high frequencies unchanged
    torch.testing.assert_close(
        freqs[slow], base_freqs[slow] / factor, atol=0, rtol=1e-15
    )
    middle = ~(fast | slow)
    assert (
        (freqs[middle] < base_freqs[middle])
        & (freqs[middle] > base_freqs[middle] / factor)
    ).all()


def test_yarn_agrees_with_the_reference_code_outside_its_ramp():
    # github.com/jquesnelle/yarn (and Hugging Face's _compute_yarn_parameters) ramp linearly in the
    # pair index between floor(d at r = 32) and ceil(d at r = 1); outside that range both are the
    # paper's h exactly.
    d, base, factor, L = 64, 10000.0, 8.0, 2048

    def correction_dim(rotations):
        return (
            d * math.log(L / (rotations * 2 * math.pi)) / (2 * math.log(base))
        )

    low, high = math.floor(correction_dim(32)), math.ceil(correction_dim(1))
    j = torch.arange(d // 2, dtype=torch.float64)
    keep = 1 - ((j - low) / (high - low)).clamp(0, 1)
    base_freqs = torch.tensor(theta(d, base), dtype=torch.float64)
    reference = base_freqs / factor * (1 - keep) + base_freqs * keep
    ours = rope_frequencies(
        d, base, scaling="yarn", factor=factor, original_context=L
    )
    outside = (j <= low) | (j >= high)
    torch.testing.assert_close(
        ours[outside], reference[outside], atol=0, rtol=1e-15
    )
    inside = ~outside
    assert (
        inside.any()
        and (ours[inside] - reference[inside]).abs().max()
        < 0.2 * base_freqs[inside].max()
    )


def test_yarn_custom_alpha_beta():
    d, base, factor, L = 32, 10000.0, 4.0, 512
    freqs = rope_frequencies(
        d,
        base,
        scaling="yarn",
        factor=factor,
        original_context=L,
        alpha=2.0,
        beta=8.0,
    )
    torch.testing.assert_close(
        freqs,
        as_tensor(yarn_by_hand(d, base, factor, L, 2.0, 8.0)),
        atol=0,
        rtol=1e-12,
    )


@pytest.mark.parametrize("scaling", ["linear", "ntk", "yarn"])
def test_factor_one_changes_nothing(scaling):
    extra = {"original_context": 128} if scaling == "yarn" else {}
    freqs = rope_frequencies(32, scaling=scaling, factor=1.0, **extra)
    torch.testing.assert_close(freqs, pair_frequencies(32), atol=0, rtol=1e-15)


@pytest.mark.parametrize(
    "s, expected",
    [(1.0, 1.0), (8.0, 0.1 * math.log(8) + 1), (16, 0.1 * math.log(16) + 1)],
)
def test_yarn_attention_scale(s, expected):
    assert yarn_attention_scale(s) == pytest.approx(expected, rel=1e-15)
    assert yarn_attention_scale(8.0) == pytest.approx(
        1.2079, abs=1e-4
    )  # the paper's s = 8 example


@pytest.mark.parametrize(
    "args, kwargs, error, match",
    [
        ((7,), {}, ValueError, "head_dim must be even"),
        ((0,), {}, ValueError, "head_dim"),
        ((8.0,), {}, ValueError, "head_dim"),
        ((8, 1.0), {}, ValueError, "base"),
        ((8, float("nan")), {}, ValueError, "base"),
        ((8,), {"scaling": "dynamic"}, ValueError, "scaling must be one of"),
        ((8,), {"scaling": ["ntk"]}, ValueError, "scaling must be one of"),
        (
            (8,),
            {"scaling": torch.tensor([1.0, 2.0])},
            ValueError,
            "scaling must be one of",
        ),
        ((8,), {"factor": 2.0}, ValueError, "needs a scaling"),
        ((8,), {"scaling": "linear", "factor": 0.5}, ValueError, "factor"),
        (
            (8,),
            {"scaling": "linear", "factor": float("inf")},
            ValueError,
            "factor",
        ),
        ((8,), {"scaling": "linear", "factor": True}, ValueError, "factor"),
        ((2,), {"scaling": "ntk", "factor": 2.0}, ValueError, "head_dim >= 4"),
        (
            (8,),
            {"scaling": "ntk", "factor": 1e300},
            ValueError,
            "beyond every float",
        ),
        (
            (8,),
            {"scaling": "yarn", "factor": 2.0},
            ValueError,
            "original_context",
        ),
        (
            (8,),
            {"scaling": "yarn", "factor": 2.0, "original_context": 0},
            ValueError,
            "original_context",
        ),
        (
            (8,),
            {"scaling": "linear", "factor": 2.0, "original_context": 64},
            ValueError,
            "belong to scaling='yarn'",
        ),
        (
            (8,),
            {"scaling": "ntk", "factor": 2.0, "beta": 16.0},
            ValueError,
            "belong to scaling='yarn'",
        ),
        (
            (8,),
            {
                "scaling": "yarn",
                "factor": 2.0,
                "original_context": 64,
                "alpha": 0.0,
            },
            ValueError,
            "alpha",
        ),
        (
            (8,),
            {
                "scaling": "yarn",
                "factor": 2.0,
                "original_context": 64,
                "alpha": 4.0,
                "beta": 4.0,
            },
            ValueError,
            "beta",
        ),
    ],
)
def test_rope_frequencies_refuse_bad_arguments(args, kwargs, error, match):
    with pytest.raises(error, match=match):
        rope_frequencies(*args, **kwargs)


@pytest.mark.parametrize("bad", [0.5, 0, -2.0, float("nan"), "8", None, True])
def test_yarn_attention_scale_refuses_bad_factors(bad):
    with pytest.raises(ValueError, match="factor"):
        yarn_attention_scale(bad)


def test_nothing_touches_the_global_random_state():
    state = torch.get_rng_state()
    alibi_bias(4, 5)
    rope_frequencies(16, scaling="yarn", factor=4.0, original_context=64)
    assert torch.equal(state, torch.get_rng_state())


def test_rope_score_by_distance_refuses_no_frequency():
    from attnbook.core.long_context import rope_score_by_distance

    with pytest.raises(ValueError, match="at least one frequency"):
        rope_score_by_distance(torch.randn(0), torch.arange(5.0))
    score = rope_score_by_distance(torch.ones(2), torch.zeros(1))
    assert score.tolist() == [1.0]


def test_position_scheme_model_checks_embed_tokens_and_rope_base():
    """Probe findings: embed reached nn.Embedding with bad tokens, and a
    rope_base of None or 10**400 failed inside float()."""
    from attnbook.nn.position_schemes import PositionSchemeTransformer

    sizes = dict(vocab_size=16, embed_dim=8, num_heads=2, num_layers=1)
    model = PositionSchemeTransformer("rope", max_len=32, **sizes)
    for tokens in (None, torch.zeros(2, 6), torch.full((2, 6), 16)):
        with pytest.raises((TypeError, ValueError), match="tokens"):
            model.embed(tokens)
    for base in (None, 10**400, 0.5, float("nan")):
        with pytest.raises(ValueError, match="rope_base"):
            PositionSchemeTransformer("rope", rope_base=base, **sizes)
