"""The memory limit: a matrix or batch too large for it is refused before
it is allocated, and the limit can be read and changed."""

import pytest
import torch

import attnbook
from attnbook import (
    AdditiveScore,
    MultiHeadAttention,
    PointerNetwork,
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

from _refusals import refused
from _tensors import seeded_randn


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
    q = seeded_randn(64, 4)
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


# Every large allocation is checked against the memory limit first.
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


# The same in the Transformer's modules.
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


def _batch_calls():
    from attnbook.tasks.convex_hull import hull_batch
    from attnbook.tasks.induction import repeated_batch
    from attnbook.tasks.long_context import lab_batch
    from attnbook.tasks.recall import recall_batch

    huge = 10**12
    return [
        ("repeated_batch", lambda g: repeated_batch(huge, 3, 8, 10, g)),
        ("repeated_batch", lambda g: repeated_batch(2, 3, huge, 10, g)),
        ("lab_batch", lambda g: lab_batch(huge, 48, g)),
        ("hull_batch", lambda g: hull_batch(huge, 6, g)),
        ("hull_batch", lambda g: hull_batch(2, huge, g)),
        ("recall_batch", lambda g: recall_batch(huge, 3, g)),
        ("recall_batch", lambda g: recall_batch(2, 3, g, num_keys=huge)),
    ]


@pytest.mark.parametrize("index", range(7))
def test_batch_makers_refuse_a_batch_beyond_the_memory_limit(index):
    name, call = _batch_calls()[index]
    generator = torch.Generator().manual_seed(0)
    state = generator.get_state()
    with pytest.raises(ValueError, match=r"the batch.* would take .* GiB"):
        call(generator)
    assert torch.equal(generator.get_state(), state), name


def test_evaluations_and_sequence_sets_bound_their_work():
    from attnbook.nn.attention_only import AttentionOnlyTransformer
    from attnbook.tasks.induction import evaluate
    from attnbook.tasks.order_classifier import training_sequences
    from attnbook.tasks.sorting import sorting_accuracy

    torch.manual_seed(0)
    model = AttentionOnlyTransformer(64, 64, 8, 2, 1)
    with pytest.raises(ValueError, match="the evaluation tokens of shape"):
        evaluate(model, batches=10**12, batch_size=2)
    with pytest.raises(ValueError, match="the evaluation sequences of shape"):
        sorting_accuracy(PointerNetwork(8), 5, num_sequences=10**12)
    with pytest.raises(ValueError, match="the training sequences of shape"):
        training_sequences(steps=10**12, batch_size=2, seed=0, max_len=6)
