"""Beam search (chapter 10): width 1 is greedy decoding, wider beams never
score lower, bad arguments are named; the chapter's held-out dates are
disjoint from both date models' training data."""

import pytest
import torch

from attnbook import EncoderDecoderTransformer
from attnbook.nn.beam_search import beam_search, sequence_log_probs


def _model(seed=0, eos=2):
    torch.manual_seed(seed)
    return EncoderDecoderTransformer(
        src_vocab_size=12, tgt_vocab_size=9, embed_dim=16, num_heads=2,
        ffn_hidden=32, num_encoder_layers=1, num_decoder_layers=2,
        max_src_len=10, max_tgt_len=12, bos=1, eos=eos,
    ).eval()  # fmt: skip


def _source(seed=1):
    g = torch.Generator().manual_seed(seed)
    return torch.randint(3, 12, (6, 7), generator=g), torch.tensor(
        [7, 5, 3, 7, 2, 6]
    )


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_width_one_is_greedy_decoding(seed):
    model = _model(seed)
    src, lens = _source(seed)
    greedy = model.generate(src, lens, max_len=10)
    beam, scores = beam_search(model, src, lens, beam_width=1, max_len=10)
    assert torch.equal(beam, greedy)
    assert torch.allclose(scores, sequence_log_probs(model, src, lens, beam))


@pytest.mark.parametrize("seed", [3, 4])
def test_a_beam_as_wide_as_the_vocabulary_finds_the_best_pair(seed):
    # two steps, width = vocabulary size: every first token is kept, so the
    # beam search is exhaustive over all pairs of tokens
    model = _model(seed, eos=8)
    src, lens = _source(seed)
    vocab = 9
    beam, scores = beam_search(model, src, lens, vocab, max_len=2)
    assert torch.allclose(scores, sequence_log_probs(model, src, lens, beam))
    pairs = torch.cartesian_prod(torch.arange(vocab), torch.arange(vocab))
    for i in range(src.shape[0]):
        every = sequence_log_probs(
            model, src[i : i + 1].expand(len(pairs), -1),
            lens[i : i + 1].expand(len(pairs)), pairs,
        )  # fmt: skip
        assert scores[i] == pytest.approx(every.max().item(), abs=1e-5)


def test_finished_prefixes_are_padded_with_eos():
    model = _model(5, eos=4)
    src, lens = _source(6)
    beam, _ = beam_search(model, src, lens, beam_width=3, max_len=12)
    for row in beam.tolist():
        if 4 in row:
            first = row.index(4)
            assert all(t == 4 for t in row[first:])


def test_bad_arguments_are_named():
    model = _model()
    src, lens = _source()
    with pytest.raises(ValueError, match="beam_width"):
        beam_search(model, src, lens, beam_width=0)
    with pytest.raises(ValueError, match="max_len"):
        beam_search(model, src, lens, max_len=13)
    with pytest.raises(TypeError, match="EncoderDecoderTransformer"):
        beam_search(torch.nn.Linear(2, 2), src, lens)


def test_chapter_10_held_out_dates_are_disjoint_from_training():
    from attnbook.experiments.luong_bahdanau import training_targets
    from attnbook.train.date_transformer import (
        TRAINING_RECIPE as TRANSFORMER,
    )
    from attnbook.train.date_transformer import (
        held_out_date_pairs,
    )
    from attnbook.train.date_translator import RECIPE as RNN

    sources, targets = held_out_date_pairs(300, 31337)
    assert len(set(sources)) > 250 and len(targets) == 300
    for recipe in (TRANSFORMER, RNN):
        seen = training_targets(
            recipe["seed"], recipe["steps"], recipe["batch_size"]
        )
        assert not seen & set(targets)


def test_date_transformer_beam_width_one_translates_as_greedy():
    from attnbook.tasks.date_transformer import pretrained_date_transformer

    translator = pretrained_date_transformer()
    texts = ["Monday, May 3, 1999", "3/5/1999", "1999 May 3", "2099-12-31"]
    assert translator.translate_beam(texts, 1) == translator.translate(texts)
    assert translator.translate_beam([], 3) == []
