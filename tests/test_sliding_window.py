"""sliding_window_mask against its definition, and chunked attention that
skips the blocks such a mask drops entirely."""

import pytest
import torch

from attnbook.core.masking import causal_mask, sliding_window_mask


def loop_mask(n_q: int, n_k: int, window: int) -> torch.Tensor:
    """The definition, one entry at a time: query i sits at n_k - n_q + i
    and keeps its own position and the window - 1 before it."""
    keep = torch.zeros(n_q, n_k, dtype=torch.bool)
    for i in range(n_q):
        position = n_k - n_q + i
        for j in range(n_k):
            keep[i, j] = position - window < j <= position
    return keep


@pytest.mark.parametrize(
    "n_q, n_k", [(1, 1), (5, 5), (3, 8), (1, 9), (0, 4), (7, 7)]
)
@pytest.mark.parametrize("window", [1, 2, 3, 5])
def test_sliding_window_mask_matches_the_loop(n_q, n_k, window):
    mask = sliding_window_mask(n_q, n_k, window)
    assert mask.dtype == torch.bool and mask.shape == (n_q, n_k)
    assert torch.equal(mask, loop_mask(n_q, n_k, window))


def test_each_query_keeps_exactly_its_window():
    mask = sliding_window_mask(20, 20, 4)
    assert mask.sum(dim=-1).tolist() == [1, 2, 3] + [4] * 17
    assert mask.diagonal().all()  # every query keeps its own position


@pytest.mark.parametrize("n_q, n_k", [(6, 6), (2, 6), (0, 3)])
def test_a_window_as_long_as_the_keys_is_the_causal_mask(n_q, n_k):
    for window in (n_k, n_k + 1, 10**6, None):
        if window == 0:
            continue
        assert torch.equal(
            sliding_window_mask(n_q, n_k, window), causal_mask(n_q, n_k)
        )
    assert torch.equal(sliding_window_mask(n_q), causal_mask(n_q))


def test_a_shorter_window_is_not_the_causal_mask():
    # the comparison above can fail: a window shorter than n_k drops keys
    assert not torch.equal(sliding_window_mask(6, 6, 5), causal_mask(6))


@pytest.mark.parametrize(
    "args, kwargs, match",
    [
        ((4, 4, 0), {}, "window must be a positive int"),
        ((4, 4, 2.0), {}, "window must be a positive int"),
        ((4, 4, True), {}, "window must be a positive int"),
        ((4, 3, 2), {}, "n_k must be an int >= 4"),
        ((-1, None, 2), {}, "n_q must be a non-negative int"),
        ((4, 4, 2), {"device": "x"}, "device must be"),
        ((10**6, 10**6, 2), {}, "smaller n_q or n_k"),
    ],
)
def test_sliding_window_mask_bad_arguments(args, kwargs, match):
    with pytest.raises(ValueError, match=match):
        sliding_window_mask(*args, **kwargs)


def test_sliding_window_mask_on_a_device():
    mask = sliding_window_mask(3, 5, 2, device=torch.device("cpu"))
    assert mask.device == torch.device("cpu")
