"""Slow-memory traffic of attention (chapter 11): the tiled forward pass
against attention and the log-sum-exp; its counts against the formula; the
plain algorithm's count; the tiling figure."""

import math

import matplotlib
import pytest
import torch

from attnbook import attention
from attnbook.display.tiling import draw_tiling
from attnbook.experiments.io_traffic import (
    SlowMemory,
    block_sizes,
    on_chip_numbers,
    plain_attention_traffic,
    tiled_attention,
)

matplotlib.use("Agg")


def qkv(n_q, n_k, d, d_v, seed=0):
    g = torch.Generator().manual_seed(seed)
    return (
        torch.randn(n_q, d, generator=g, dtype=torch.float64),
        torch.randn(n_k, d, generator=g, dtype=torch.float64),
        torch.randn(n_k, d_v, generator=g, dtype=torch.float64),
    )


@pytest.mark.parametrize(
    "n_q, n_k, d, d_v, sram",
    [(37, 53, 8, 5, 32), (64, 64, 16, 16, 1024), (5, 200, 4, 3, 4096)],
)
def test_tiled_attention_is_attention_and_counts_every_number(
    n_q, n_k, d, d_v, sram
):
    q, k, v = qkv(n_q, n_k, d, d_v)
    out, lse, hbm = tiled_attention(q, k, v, sram)
    expected, _ = attention(q, k, v)
    torch.testing.assert_close(out, expected, rtol=0, atol=1e-12)
    scores = q @ k.T / math.sqrt(d)
    torch.testing.assert_close(
        lse, torch.logsumexp(scores, dim=1), rtol=0, atol=1e-12
    )
    rows, cols = block_sizes(sram, d, d_v)
    blocks = math.ceil(n_q / rows)
    assert hbm.reads == n_q * d + blocks * n_k * (d + d_v)
    assert hbm.writes == n_q * d_v + n_q


def test_block_sizes_follow_the_paper_where_its_tiles_fit():
    # B = ceil(M / 4d) on the side that stays on chip, min(B, d) on the other
    assert block_sizes(65536, 64) == (256, 64)
    assert block_sizes(131072, 64) == (512, 64)


@pytest.mark.parametrize("d, d_v", [(64, 64), (8, 5), (128, 64)])
def test_block_sizes_fit_the_fast_memory(d, d_v):
    # the paper's 64 x 64 at M = 16,384, d = 64 would hold 20,608 numbers
    assert on_chip_numbers(64, 64, 64) == 20608
    assert block_sizes(16384, 64) == (52, 52)
    for sram in (on_chip_numbers(1, 1, d, d_v), 100, 4096, 16384, 49152):
        if sram < on_chip_numbers(1, 1, d, d_v):
            continue
        rows, cols = block_sizes(sram, d, d_v)
        assert on_chip_numbers(rows, cols, d, d_v) <= sram
        assert rows <= math.ceil(sram / (4 * d)) and cols == min(rows, d)
        # the largest B_r that fits, up to the paper's
        bigger = on_chip_numbers(rows + 1, min(rows + 1, d), d, d_v)
        assert rows == math.ceil(sram / (4 * d)) or bigger > sram


def test_traffic_falls_like_one_over_m_and_beats_plain():
    q, k, v = qkv(512, 512, 32, 32)
    plain = plain_attention_traffic(512, 512, 32)
    assert plain == 4 * 512 * 512 + 4 * 512 * 32
    small = tiled_attention(q, k, v, 8192)[2].total
    large = tiled_attention(q, k, v, 32768)[2].total
    assert large < small < plain
    # the n^2 d^2 / M term dominates: four times the memory, about a
    # quarter of the re-reads of K and V (at least: small tiles shrink more)
    rereads = [total - 2 * 512 * 32 - 512 for total in (small, large)]
    assert 4 * rereads[1] <= rereads[0] <= 5 * rereads[1]


def test_slow_memory_counts_loads_and_stores():
    memory = SlowMemory()
    memory.load(torch.zeros(3, 4))
    memory.store(torch.zeros(5))
    assert (memory.reads, memory.writes, memory.total) == (12, 5, 17)


@pytest.mark.parametrize(
    "call, error",
    [
        (lambda q, k, v: tiled_attention(q, k[:, :3], v, 64), ValueError),
        (lambda q, k, v: tiled_attention(q, k, v[:4], 64), ValueError),
        (lambda q, k, v: tiled_attention(q, k, v, 4), ValueError),
        (lambda q, k, v: tiled_attention(q.float(), k, v, 64), TypeError),
        (
            lambda q, k, v: tiled_attention(q.half(), k.half(), v.half(), 64),
            TypeError,
        ),  # fmt: skip
        (lambda q, k, v: tiled_attention(q[0], k, v, 64), ValueError),
        (lambda q, k, v: tiled_attention(q * math.nan, k, v, 64), ValueError),
        (lambda q, k, v: plain_attention_traffic(0, 4, 4), ValueError),
    ],
)
def test_bad_input_is_refused_clearly(call, error):
    q, k, v = qkv(6, 9, 4, 4)
    with pytest.raises(error):
        call(q, k, v)


def test_the_tiling_figure_draws_and_refuses_tiles_outside():
    figure = draw_tiling(blocks=4, row=1, column=2)
    assert len(figure.axes) == 2
    with pytest.raises(ValueError, match="row"):
        draw_tiling(blocks=3, row=3)
