"""Bad sizes, probabilities and arguments get the book's clear errors,
across the package, before any work is done."""

import pytest
import torch

import attnbook
from attnbook import (
    AdditiveScore,
    BilinearScore,
    LayerNorm,
    MultiHeadAttention,
    PointerNetwork,
    PositionWiseFFN,
    SelfAttention,
    TransformerEncoder,
    TransformerEncoderBlock,
    attention,
    chunked_attention,
    lengths_to_mask,
    merge_heads,
    scaled_dot_score,
    split_heads,
)
from attnbook.core.chunked import StreamingAttention


def _randn(*shape, seed=0, dtype=torch.float32):
    return torch.randn(
        *shape, generator=torch.Generator().manual_seed(seed), dtype=dtype
    )


BAD_SIZES = [0, -1, True, False, 2.5, None, "4"]


@pytest.mark.parametrize("value", BAD_SIZES)
@pytest.mark.parametrize(
    "build",
    [
        lambda a: AdditiveScore(a, 4, 8),
        lambda a: AdditiveScore(4, a, 8),
        lambda a: AdditiveScore(4, 4, a),
        lambda a: BilinearScore(a, 4),
        lambda a: BilinearScore(4, a),
        lambda a: MultiHeadAttention(a, 2),
        lambda a: MultiHeadAttention(8, a),
        lambda a: SelfAttention(a),
        lambda a: LayerNorm(a),
        lambda a: PositionWiseFFN(a, 8),
        lambda a: PositionWiseFFN(8, a),
        lambda a: TransformerEncoderBlock(8, 2, a),
        lambda a: TransformerEncoder(a, 8, 2, 8, 1),
        lambda a: PointerNetwork(a),
        lambda a: split_heads(_randn(2, 3, 8), a),
        lambda a: attnbook.PositionalEncoding(a),
        lambda a: attnbook.LearnedPositionalEmbedding(4, a),
    ],
    ids=lambda f: "",
)
def test_constructors_refuse_bad_sizes(build, value):
    with pytest.raises((ValueError, TypeError)):
        build(value)


@pytest.mark.parametrize(
    "dropout", [-0.1, 1.0, 2.0, float("nan"), float("inf"), "0.1", None, True]
)
@pytest.mark.parametrize(
    "build",
    [
        lambda p: attnbook.PositionalEncoding(4, dropout=p),
        lambda p: PositionWiseFFN(4, 8, dropout=p),
        lambda p: TransformerEncoderBlock(4, 2, 8, dropout=p),
        lambda p: TransformerEncoder(5, 4, 2, 8, 1, dropout=p),
    ],
    ids=[
        "PositionalEncoding",
        "PositionWiseFFN",
        "TransformerEncoderBlock",
        "TransformerEncoder",
    ],
)
def test_dropout_must_be_a_probability(build, dropout):
    with pytest.raises(
        ValueError, match=r"dropout must be a number in \[0, 1\)"
    ):
        build(dropout)


@pytest.mark.parametrize(
    "call, message",
    [
        (
            lambda: split_heads(_randn(2, 3, 8), 3),
            "not divisible by num_heads = 3",
        ),
        (lambda: split_heads(_randn(8), 2), "x needs shape"),
        (lambda: merge_heads(_randn(3, 4)), "x needs shape"),
        (lambda: lengths_to_mask(None, 5), "valid_lens must be"),
        (
            lambda: attnbook.padding_mask(torch.tensor(3), 5),
            "one length per sequence",
        ),
        (
            lambda: attention(
                _randn(2, 3, 4), _randn(3, 5, 4), _randn(3, 5, 2)
            ),
            "do not broadcast",
        ),
        (
            lambda: scaled_dot_score(_randn(3, 0), _randn(5, 0)),
            "feature size d >= 1",
        ),
        (
            lambda: chunked_attention(
                _randn(3, 0), _randn(5, 0), _randn(5, 2)
            ),
            "feature size d >= 1",
        ),
        (
            lambda: attention(
                _randn(3, 4),
                _randn(5, 4),
                _randn(5, 2),
                score=lambda q, k: torch.zeros(3, 4),
            ),
            "score returned shape",
        ),
        (
            lambda: (
                StreamingAttention(_randn(3, 4))
                .update(_randn(5, 4), _randn(5, 2))
                .update(_randn(5, 4), _randn(5, 3))
            ),
            "earlier blocks had 2",
        ),
    ],
)
def test_sizes_get_clear_errors(call, message):
    with pytest.raises((ValueError, TypeError), match=message):
        call()
