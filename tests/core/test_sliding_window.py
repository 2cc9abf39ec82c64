"""sliding_window_mask against its definition, and chunked attention that
skips the blocks such a mask drops entirely."""

import pytest
import torch

from attnbook import agreement, attention, chunked_attention
from attnbook.core import chunked
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
        ((4, 3, 2), {}, "n_k = 3 must be at least n_q = 4"),
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


# ---------------------------------------------------------------------------
# chunked_attention skips the blocks a sliding window drops
# ---------------------------------------------------------------------------


def qkv(n_q, n_k, d=16, d_v=8, batch=(2,), seed=0, dtype=torch.float64):
    gen = torch.Generator().manual_seed(seed)
    return (
        torch.randn(*batch, n_q, d, generator=gen, dtype=dtype),
        torch.randn(*batch, n_k, d, generator=gen, dtype=dtype),
        torch.randn(*batch, n_k, d_v, generator=gen, dtype=dtype),
    )


@pytest.mark.parametrize(
    "n_q, n_k, window, chunk_size",
    [
        (200, 200, 30, 32),
        (200, 200, 1, 16),
        (64, 200, 50, 32),
        (97, 97, 97, 8),
    ],
)
@pytest.mark.parametrize("recompute_backward", [True, False])
def test_sliding_window_chunked_equals_masked_attention(
    n_q, n_k, window, chunk_size, recompute_backward
):
    q, k, v = (t.requires_grad_() for t in qkv(n_q, n_k))
    mask = sliding_window_mask(n_q, n_k, window)
    output = chunked_attention(
        q,
        k,
        v,
        mask=mask,
        chunk_size=chunk_size,
        recompute_backward=recompute_backward,
    )
    expected, _ = attention(q, k, v, mask=mask)
    assert agreement(output, expected, 1e-12) == "equal within 1e-12"
    grad = torch.randn_like(expected)
    got = torch.autograd.grad(output, (q, k, v), grad)
    wanted = torch.autograd.grad(expected, (q, k, v), grad)
    for a, b in zip(got, wanted):
        assert agreement(a, b, 1e-12) == "equal within 1e-12"


def test_float32_and_broadcast_batches_agree_with_attention():
    q, k, v = qkv(150, 150, batch=(1,), dtype=torch.float32)
    k, v = (
        k.expand(3, -1, -1),
        v.expand(3, -1, -1) * torch.arange(1.0, 4.0)[:, None, None],
    )
    mask = sliding_window_mask(150, 150, 20).expand(3, 150, 150)
    output = chunked_attention(q, k, v, mask=mask, chunk_size=16)
    expected, _ = attention(q, k, v, mask=mask)
    assert output.shape == (3, 150, 8)
    assert agreement(output, expected, 1e-5) == "equal within 1e-05"


def scored_tiles(monkeypatch, *args, **kwargs) -> list:
    """The (query rows, key columns) of every score block computed."""
    tiles = []
    update = chunked.StreamingAttention.update

    def counting(state, keys, values, mask=None):
        tiles.append((state.queries.shape[-2], keys.shape[-2]))
        return update(state, keys, values, mask)

    monkeypatch.setattr(chunked.StreamingAttention, "update", counting)
    with torch.no_grad():
        chunked_attention(*args, **kwargs)
    return tiles


def expected_tiles(n, window, size, rows_per_block):
    """Counted by hand: a block of query rows keeps key block j if some
    query i in it keeps some key of j, i.e. i - window < key <= i."""
    tiles = []
    for first in range(0, n, rows_per_block):
        last = min(first + rows_per_block, n) - 1  # the block's last query
        for start in range(0, n, size):
            if start <= last and start + size - 1 > first - window:
                tiles.append((last - first + 1, min(size, n - start)))
    return tiles


@pytest.mark.parametrize("n, window, size", [(2048, 64, 64), (1000, 100, 48)])
def test_only_the_blocks_the_window_keeps_are_scored(
    monkeypatch, n, window, size
):
    q, k, v = qkv(n, n, batch=())
    tiles = scored_tiles(
        monkeypatch,
        q,
        k,
        v,
        mask=sliding_window_mask(n, n, window),
        chunk_size=size,
    )
    rows = chunked.QUERY_BLOCK * size
    assert tiles == expected_tiles(n, window, size, rows)
    scored = sum(r * c for r, c in tiles)
    # grows like n * w, not n^2: each query meets at most its block's rows,
    # the window and one more key block
    assert scored <= n * (rows + window + size) < n * n
    # without a mask every query meets every key, in one pass
    assert scored_tiles(monkeypatch, q, k, v, chunk_size=size) == [
        (n, min(size, n - start)) for start in range(0, n, size)
    ]


def test_a_fully_masked_block_leaves_the_running_state_unchanged():
    # why skipping is exact: exp(lowest - m) = 0 and exp(m - m) = 1
    q, k, v = qkv(6, 8, batch=())
    keep = torch.rand(6, 8, generator=torch.Generator().manual_seed(3)) < 0.5
    keep[:, 0] = True
    state = chunked.StreamingAttention(q).update(k[:4], v[:4], keep[:, :4])
    before = (
        state.maximum.clone(),
        state.total.clone(),
        state.weighted.clone(),
    )
    state.update(k[4:], v[4:], torch.zeros(6, 4, dtype=torch.bool))
    after = (state.maximum, state.total, state.weighted)
    assert all(torch.equal(a, b) for a, b in zip(before, after))


def test_queries_that_keep_nothing_get_zeros():
    q, k, v = qkv(96, 96, batch=())
    keep = sliding_window_mask(96, 96, 8).clone()
    keep[:40] = False  # the first query blocks keep no key at all
    q, k, v = (t.requires_grad_() for t in (q, k, v))
    output = chunked_attention(q, k, v, mask=keep, chunk_size=16)
    assert (output[:40] == 0).all() and not torch.isnan(output).any()
    expected, _ = attention(q, k, v, mask=keep)
    assert agreement(output, expected, 1e-12) == "equal within 1e-12"
    # the backward pass skips the blocks too: key block 0 (keys 0-15) is
    # kept by no query, so its keys and values get exactly zero gradient
    grad = torch.randn_like(output)
    got = torch.autograd.grad(output, (q, k, v), grad)
    wanted = torch.autograd.grad(expected, (q, k, v), grad)
    for a, b in zip(got, wanted):
        assert agreement(a, b, 1e-12) == "equal within 1e-12"
    assert (got[1][:16] == 0).all() and (got[2][:16] == 0).all()
