"""Reliability, round 5 (issue 36): the probe's last core hangs, the
helpers' undocumented moves of the global RNG, silent NaNs and deep errors,
each now a clear error (or no move)."""

import time

import pytest
import torch

from attnbook import (
    DecoderOnlyTransformer,
    PointerNetwork,
    matrix_memory_limit,
    sliding_window_mask,
)


@pytest.fixture
def lm():
    torch.manual_seed(0)
    return DecoderOnlyTransformer(10, 8, 8, 2, 1, 16)


MANY_ROWS = torch.randint(0, 10, (1, 5)).expand(10**6, 5)


def _refused_fast(call, match):
    start = time.perf_counter()
    with pytest.raises(ValueError, match=match):
        call()
    assert time.perf_counter() - start < 5


def test_a_language_model_refuses_a_million_rows_before_the_work(lm):
    _refused_fast(
        lambda: lm(MANY_ROWS, mask=sliding_window_mask(5, window=2)),
        r"tokens of shape \(1000000, 5\): the forward pass computes about "
        r"[\d.]+ GiB of activations \(limit 4.0 GiB\)",
    )


def test_generate_refuses_a_million_rows_before_sampling(lm):
    generator = torch.Generator().manual_seed(0)
    state = generator.get_state()
    _refused_fast(
        lambda: lm.generate(MANY_ROWS, 2, top_k=3, generator=generator),
        r"tokens of shape \(1000000, 5\)",
    )
    assert torch.equal(generator.get_state(), state)


def test_the_activation_bound_leaves_ordinary_batches_alone(lm):
    tokens = torch.randint(0, 10, (64, 8))
    assert lm(tokens).shape == (64, 8, 10)
    assert matrix_memory_limit() == 4 * 2**30


def test_a_pointer_network_refuses_a_million_rows_before_decoding():
    torch.manual_seed(0)
    network = PointerNetwork(8)
    many = torch.rand(1, 5).expand(10**6, 5)
    _refused_fast(
        lambda: network.decode(many),
        r"x of shape \(1000000, 5\): a pointer network computes",
    )
    assert network.decode(torch.rand(3, 5)).shape == (3, 5)
