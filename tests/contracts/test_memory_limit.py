"""The memory limit: a matrix or batch too large for it is refused before
it is allocated, and the limit can be read and changed."""

import pytest
import torch
from _refusals import refused

import attnbook
from attnbook import (
    AdditiveScore,
    MultiHeadAttention,
    attention,
    chunked_attention,
    dot_score,
)
from attnbook.nn.decoder import (
    EncoderDecoderTransformer,
    TransformerDecoder,
    TransformerDecoderBlock,
)
from attnbook.nn.encoder import (
    LayerNorm,
    PositionWiseFFN,
    TransformerEncoderBlock,
)
from attnbook.nn.language_model import KVCache
from attnbook.nn.self_attention import SelfAttention


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


def refused_before_allocating(build) -> None:
    """``build()`` raises the memory-limit ValueError and leaves torch's
    global random state as it was."""
    state = torch.get_rng_state()
    with pytest.raises(ValueError, match="GiB"):
        build()
    assert torch.equal(state, torch.get_rng_state())


# D8: every large allocation is checked against the memory limit first.
@pytest.mark.parametrize(
    "call",
    [
        lambda: dot_score(torch.zeros(10**5, 2), torch.zeros(10**5, 2)),
        lambda: attnbook.scaled_dot_score(
            torch.zeros(10**5, 2), torch.zeros(10**5, 2)
        ),
        lambda: attnbook.lengths_to_mask(torch.tensor([3]), 10**12),
        lambda: attnbook.AdditiveScore(10**6, 10**6, 10**4),
        lambda: attnbook.BilinearScore(10**6, 10**6),
    ],
    ids=["dot", "scaled_dot", "lengths_to_mask", "additive", "bilinear"],
)
def test_huge_allocations_are_refused_before_they_start(call):
    refused_before_allocating(call)


# D8, D9 (b), D10, D14 in the Transformer's modules.
@pytest.mark.parametrize(
    "build",
    [
        lambda: attnbook.MultiHeadAttention(10**6, 1),
        lambda: attnbook.TransformerEncoder(10**12, 8, 2, 16, 1),
        lambda: attnbook.TransformerEncoder(10, 8, 2, 16, 10**12),
        lambda: attnbook.TransformerDecoder(8, 2, 16, 10**12),
        lambda: attnbook.causal_mask(10**6),
    ],
    ids=["mha", "vocab", "encoder_layers", "decoder_layers", "causal_mask"],
)
def test_huge_transformer_parts_are_refused_before_drawing(build):
    refused_before_allocating(build)


@pytest.mark.parametrize(
    "build",
    [
        lambda: __import__("attnbook.nn.seq2seq").nn.seq2seq.Seq2Seq(
            10**12, 9
        ),
        lambda: attnbook.DecoderOnlyTransformer(10**12),
        lambda: attnbook.DecoderOnlyTransformer(10, num_layers=10**12),
        lambda: attnbook.PointerNetwork(10**6),
    ],
    ids=["seq2seq", "lm_vocab", "lm_layers", "pointer"],
)
def test_huge_models_are_refused_before_drawing(build):
    refused_before_allocating(build)


@pytest.mark.parametrize(
    "build, match",
    [
        (lambda: LayerNorm(10**12), "the weights of LayerNorm"),
        (lambda: PositionWiseFFN(10**12, 8), "PositionWiseFFN"),
        (lambda: PositionWiseFFN(8, 10**12), "PositionWiseFFN"),
        (lambda: TransformerEncoderBlock(8, 2, 10**12), "EncoderBlock"),
        (lambda: TransformerDecoderBlock(8, 2, 10**12), "DecoderBlock"),
        (lambda: TransformerDecoder(8, 2, None, 1), "ffn_hidden"),
        (lambda: TransformerDecoder(8, 2, "3", 1), "ffn_hidden"),
        (lambda: TransformerDecoder(8, 2, 10**400, 1), "ffn_hidden"),
        (lambda: EncoderDecoderTransformer(10, 10**12), "target side"),
        (lambda: SelfAttention(10**12), "the weights of SelfAttention"),
        (lambda: KVCache(10**12), "KVCache's lists of layers"),
    ],
)
def test_a_layer_too_large_is_refused_before_drawing(build, match):
    refused(build, ValueError, match)
