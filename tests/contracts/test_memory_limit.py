"""The memory limit: a matrix or batch too large for it is refused before
it is allocated, and the limit can be read and changed."""

import pytest
import torch

import attnbook
from attnbook import (
    AdditiveScore,
    MultiHeadAttention,
    attention,
    chunked_attention,
)


def _randn(*shape, seed=0, dtype=torch.float32):
    return torch.randn(
        *shape, generator=torch.Generator().manual_seed(seed), dtype=dtype
    )


def test_too_big_a_score_matrix_is_refused_before_allocation():
    x = torch.zeros(1, 1).expand(200_000, 1)
    with pytest.raises(
        ValueError, match=r"\(200000, 200000\).*149\.0 GiB.*chunked_attention"
    ):
        attention(x, x, x)
    with pytest.raises(ValueError, match="chunked_attention"):
        MultiHeadAttention(8, 8)(*(torch.zeros(1, 100_000, 8),) * 3)
    with pytest.raises(ValueError, match="additive score's hidden tensor"):
        attention(
            torch.zeros(20_000, 4),
            torch.zeros(20_000, 4),
            torch.zeros(20_000, 1),
            score=AdditiveScore(4, 4, 512),
        )


def test_the_limit_can_be_changed():
    q = _randn(64, 4)
    previous = attnbook.set_matrix_memory_limit(1000)
    try:
        with pytest.raises(ValueError, match=r"\(64, 64\)"):
            attention(q, q, q)
        # blocks of 64 x 2 scores (512 bytes): never the whole matrix
        chunked_attention(q, q, q, chunk_size=2)
    finally:
        attnbook.set_matrix_memory_limit(previous)
    attention(q, q, q)


@pytest.mark.parametrize(
    "limit, message",
    [
        (0, "limit_bytes must be a positive int, got 0"),
        (True, "limit_bytes must be a positive int, got True"),
        (2**63, r"limit_bytes = 9223372036854775808 is too large \(at most"),
    ],
)
def test_a_bad_memory_limit_is_refused_as_require_int_refuses_it(
    limit, message
):
    before = attnbook.matrix_memory_limit()
    with pytest.raises(ValueError, match=message):
        attnbook.set_matrix_memory_limit(limit)
    assert attnbook.matrix_memory_limit() == before
