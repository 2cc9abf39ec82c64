"""masked_softmax and lengths_to_mask, against torch.softmax and their invariants."""

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from attnbook import causal_mask, lengths_to_mask, masked_softmax

DTYPES = [torch.float32, torch.float64, torch.float16, torch.bfloat16]


def random_scores(shape, seed=0, dtype=torch.float64):
    return torch.randn(
        *shape, generator=torch.Generator().manual_seed(seed), dtype=dtype
    )


def test_without_mask_equals_torch_softmax_on_every_dim():
    scores = random_scores((3, 4, 5))
    for dim in (0, 1, -1):
        torch.testing.assert_close(
            masked_softmax(scores, dim=dim), torch.softmax(scores, dim=dim)
        )


def test_with_mask_equals_minus_infinity_recipe():
    scores = random_scores((4, 6, 7))
    keep = (
        torch.rand(4, 6, 7, generator=torch.Generator().manual_seed(1)) > 0.5
    )
    keep[..., 3] = True
    expected = torch.softmax(scores.masked_fill(~keep, float("-inf")), dim=-1)
    torch.testing.assert_close(masked_softmax(scores, keep), expected)


def test_mask_along_other_dim():
    scores = random_scores((5, 3))
    keep = torch.tensor([True, False, True, True, False])[:, None]
    expected = torch.softmax(scores.masked_fill(~keep, float("-inf")), dim=0)
    torch.testing.assert_close(masked_softmax(scores, keep, dim=0), expected)


@pytest.mark.parametrize("dtype", DTYPES)
def test_fully_masked_rows_are_zero_not_nan(dtype):
    scores = random_scores((3, 4), dtype=dtype)
    keep = torch.tensor([[True, False, True, False], [False] * 4, [True] * 4])
    weights = masked_softmax(scores, keep)
    assert weights.dtype == dtype
    assert torch.equal(weights[1], torch.zeros(4, dtype=dtype))
    assert torch.isfinite(weights).all()


@pytest.mark.parametrize("dtype", DTYPES)
def test_extreme_logits_stay_finite_with_finite_gradients(dtype):
    logits = torch.tensor(
        [[1e4, -1e4, 0.0, 5.0], [-1e4, -1e4, -1e4, -1e4]],
        dtype=dtype,
        requires_grad=True,
    )
    keep = torch.tensor(
        [[True, True, True, False], [True, False, True, False]]
    )
    weights = masked_softmax(logits, keep)
    assert torch.isfinite(weights).all()
    # The largest logit wins outright; the two kept -1e4 entries share the second row.
    assert weights[0].tolist() == [1.0, 0.0, 0.0, 0.0]
    torch.testing.assert_close(
        weights[1].float(), torch.tensor([0.5, 0.0, 0.5, 0.0])
    )
    (weights * torch.arange(4, dtype=dtype)).sum().backward()
    assert torch.isfinite(logits.grad).all()


def test_gradient_matches_torch_softmax_on_kept_entries():
    scores = random_scores((2, 5)).requires_grad_()
    keep = torch.tensor([[True, True, False, True, False], [True] * 5])
    upstream = random_scores((2, 5), seed=3)
    (masked_softmax(scores, keep) * upstream).sum().backward()
    reference_scores = scores.detach().clone().requires_grad_()
    reference = torch.softmax(
        reference_scores.masked_fill(~keep, float("-inf")), dim=-1
    )
    (reference * upstream).sum().backward()
    torch.testing.assert_close(scores.grad, reference_scores.grad)
    assert torch.equal(
        scores.grad[~keep], torch.zeros(int((~keep).sum()), dtype=scores.dtype)
    )


@settings(max_examples=40, deadline=None)
@given(
    rows=st.integers(1, 5),
    cols=st.integers(1, 8),
    seed=st.integers(0, 10_000),
    dtype=st.sampled_from(DTYPES),
)
def test_invariants_rows_sum_to_one_and_masked_entries_are_zero(
    rows, cols, seed, dtype
):
    generator = torch.Generator().manual_seed(seed)
    scores = (torch.randn(rows, cols, generator=generator) * 20).to(dtype)
    keep = torch.rand(rows, cols, generator=generator) > 0.4
    weights = masked_softmax(scores, keep)
    assert torch.all(weights[~keep] == 0)
    sums = weights.float().sum(dim=-1)
    has_kept = keep.any(dim=-1)
    tolerance = 1e-2 if dtype in (torch.float16, torch.bfloat16) else 1e-5
    assert torch.allclose(
        sums[has_kept], torch.ones(int(has_kept.sum())), atol=tolerance
    )
    assert torch.all(sums[~has_kept] == 0)
    assert torch.all(weights >= 0)


def test_broadcast_mask():
    scores = random_scores((2, 3, 4))
    key_padding = torch.tensor(
        [[True, True, False, False], [True, True, True, True]]
    )[:, None, :]
    weights = masked_softmax(scores, key_padding)
    assert torch.all(weights[0, :, 2:] == 0)
    torch.testing.assert_close(weights[1], torch.softmax(scores[1], dim=-1))


def test_bad_inputs_name_the_problem():
    with pytest.raises(ValueError, match=r"\(2, 4\).*\(2, 3\)"):
        masked_softmax(torch.zeros(2, 3), torch.ones(2, 4, dtype=torch.bool))
    with pytest.raises(TypeError, match="boolean"):
        masked_softmax(torch.zeros(2, 3), torch.ones(2, 3))
    with pytest.raises(TypeError, match="floating-point"):
        masked_softmax(torch.zeros(2, 3, dtype=torch.long))
    with pytest.raises(TypeError, match="torch.Tensor"):
        masked_softmax([[1.0, 2.0]])
    with pytest.raises(ValueError, match="enlarge"):
        masked_softmax(torch.zeros(3), torch.ones(2, 3, dtype=torch.bool))


def test_lengths_to_mask_matches_direct_definition():
    lengths = torch.tensor([[0, 3], [5, 1]])
    mask = lengths_to_mask(lengths, 5)
    assert mask.shape == (2, 2, 5)
    for i in range(2):
        for j in range(2):
            assert mask[i, j].tolist() == [
                position < lengths[i, j].item() for position in range(5)
            ]
    assert lengths_to_mask([2], 3).tolist() == [[True, True, False]]


def test_lengths_to_mask_rejects_lengths_outside_range():
    # the message names the argument (valid_lens) and the length at fault
    with pytest.raises(ValueError, match="valid_lens: valid length 4 is out"):
        lengths_to_mask(torch.tensor([1, 4]), 3)
    with pytest.raises(ValueError, match="valid_lens: valid length -1"):
        lengths_to_mask([-1], 3)
    with pytest.raises(TypeError, match="integers"):
        lengths_to_mask(torch.tensor([1.5]), 3)
    with pytest.raises(ValueError, match="n must be"):
        lengths_to_mask([1], -2)


@pytest.mark.parametrize("with_mask", [False, True])
def test_inplace_overwrites_scores_with_the_same_weights(with_mask):
    scores = random_scores((3, 5))
    keep = (
        torch.tensor([[True, False, True, True, False]] * 2 + [[False] * 5])
        if with_mask
        else None
    )
    expected = masked_softmax(scores, keep)
    buffer = scores.clone()
    result = masked_softmax(buffer, keep, inplace=True)
    assert result.data_ptr() == buffer.data_ptr()
    assert torch.equal(result, expected)


def test_inplace_refuses_scores_that_need_a_gradient():
    scores = random_scores((2, 3)).requires_grad_()
    with pytest.raises(ValueError, match="inplace"):
        masked_softmax(scores, inplace=True)
    with torch.no_grad():
        masked_softmax(scores.detach().clone(), inplace=True)


@pytest.mark.parametrize("device", ["x", -1, 2.5, object()])
def test_causal_mask_names_a_bad_device(device):
    # torch's own messages ("Device index must not be negative") do not say
    # which argument is at fault
    with pytest.raises(ValueError, match="device must be None, a torch.dev"):
        causal_mask(3, device=device)


def test_causal_mask_too_large_names_its_sizes():
    with pytest.raises(ValueError, match="smaller n_q or n_k"):
        causal_mask(10**12)


def test_inplace_refuses_an_expanded_view_before_writing():
    # The shared row used to get -inf written into it.
    row = torch.randn(1, 4)
    before = row.clone()
    keep = torch.tensor([[True, False, True, True]] * 3)
    with pytest.raises(ValueError, match="own their memory"):
        masked_softmax(row.expand(3, 4), keep, inplace=True)
    with pytest.raises(ValueError, match="own their memory"):
        masked_softmax(row.expand(3, 4), inplace=True)
    assert torch.equal(row, before)
    # a transposed (non-contiguous but not overlapping) buffer is fine
    buffer = torch.randn(4, 3).t()
    expected = torch.softmax(buffer, dim=-1)
    assert torch.allclose(masked_softmax(buffer, inplace=True), expected)


@pytest.mark.parametrize(
    "dtype", [torch.float32, torch.float64, torch.float16, torch.bfloat16]
)
def test_masked_softmax_limits(dtype):
    inf = float("inf")
    rows = torch.tensor(
        [
            [0.0, inf, 1.0],
            [inf, inf, 1.0],
            [-inf, -inf, -inf],
            [-inf, 0.0, 0.0],
        ],
        dtype=dtype,
    )
    expected = torch.tensor(
        [[0, 1, 0], [0.5, 0.5, 0], [0, 0, 0], [0, 0.5, 0.5]], dtype=dtype
    )
    assert torch.equal(masked_softmax(rows), expected)
    with torch.no_grad():
        copy = rows.clone()
        assert torch.equal(masked_softmax(copy, inplace=True), expected)


def test_masked_softmax_keeps_a_kept_nan_visible():
    weights = masked_softmax(torch.tensor([[0.0, float("nan"), 1.0]]))
    assert torch.isnan(weights).all()
    masked = masked_softmax(
        torch.tensor([[0.0, float("nan"), 0.0]]),
        torch.tensor([[True, False, True]]),
    )
    assert torch.equal(masked, torch.tensor([[0.5, 0.0, 0.5]]))


# A kept score equal to the dtype's most negative number is a score.
@pytest.mark.parametrize(
    "dtype", [torch.float16, torch.bfloat16, torch.float32, torch.float64]
)
def test_a_kept_score_at_finfo_min_keeps_its_weight(dtype):
    lowest = torch.finfo(dtype).min
    scores = torch.tensor([[lowest, 0.0, 0.0]], dtype=dtype)
    keep = torch.tensor([[True, False, False]])
    expected = torch.tensor([[1.0, 0.0, 0.0]], dtype=dtype)
    assert torch.equal(masked_softmax(scores, keep), expected)
    assert torch.equal(
        masked_softmax(scores.clone(), keep, inplace=True), expected
    )


def test_a_fully_masked_row_is_zeros_and_its_gradient_finite():
    scores = torch.randn(2, 4, requires_grad=True)
    keep = torch.tensor([[True, True, False, False], [False] * 4])
    weights = masked_softmax(scores, keep)
    weights.sum().backward()
    assert (weights[1] == 0).all() and torch.isfinite(scores.grad).all()
    assert torch.allclose(weights[0].sum(), torch.tensor(1.0))


# Plausible misuse of the core API gets a clear error.
@pytest.mark.parametrize("dim", [2, -3, 1.0, "x"])
def test_masked_softmax_refuses_a_bad_dim(dim):
    with pytest.raises((ValueError, TypeError), match="dim"):
        masked_softmax(torch.randn(3, 4), dim=dim)


def test_masked_softmax_inplace_must_be_a_bool():
    scores = torch.randn(2, 3)
    before = scores.clone()
    with pytest.raises(ValueError, match="inplace"):
        masked_softmax(scores, inplace="yes")
    assert torch.equal(scores, before)
