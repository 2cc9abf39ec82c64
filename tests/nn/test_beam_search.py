"""Beam search (chapter 10): width 1 is greedy decoding, wider beams never
score lower, bad arguments are named; the chapter's held-out dates are
disjoint from both date models' training data."""

import pytest
import torch

from attnbook import EncoderDecoderTransformer, KVCache
from attnbook.nn.beam_search import (
    beam_search,
    length_penalty,
    sequence_log_probs,
)


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


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
@pytest.mark.parametrize("alpha", [0.0, 0.6, 2.0])
def test_the_cached_search_gives_the_beams_of_the_uncached_one(seed, alpha):
    # the reference re-runs decode over every whole prefix; the cached
    # search must gather each layer's cache by the beams' parents to agree
    model = _model(seed, eos=4)
    src, lens = _source(seed + 10)
    for width in (2, 3, 5):
        slow = beam_search(model, src, lens, width, 10, alpha=alpha)
        fast = beam_search(
            model, src, lens, width, 10, alpha=alpha, use_cache=True
        )
        assert torch.equal(fast[0], slow[0])
        assert torch.allclose(fast[1], slow[1], atol=1e-5)


def test_the_beams_change_parents_so_the_reorder_is_needed(monkeypatch):
    # without the gather the cached search would read another beam's past:
    # check that these inputs do make beams swap parents, and that a
    # search which skips the gather gives other beams
    model = _model(1, eos=4)
    src, lens = _source(11)
    slow = beam_search(model, src, lens, 3, 10)
    monkeypatch.setattr(KVCache, "reorder", lambda cache, rows: None)
    wrong = beam_search(model, src, lens, 3, 10, use_cache=True)
    assert not torch.equal(wrong[0], slow[0])


def test_reorder_gathers_rows_and_leaves_empty_layers_empty():
    keys = torch.arange(4.0).view(4, 1, 1, 1).expand(4, 2, 3, 2)
    cache = KVCache(2)
    cache.append(0, keys, -keys)
    cache.reorder(torch.tensor([2, 2, 0, 3]))
    assert cache.keys[0][:, 0, 0, 0].tolist() == [2.0, 2.0, 0.0, 3.0]
    assert cache.values[0][:, 1, 2, 1].tolist() == [-2.0, -2.0, 0.0, -3.0]
    assert cache.keys[1] is None and cache.values[1] is None


def test_reorder_may_change_the_batch_and_keeps_appending():
    # beam search starts from B rows and may keep any number of them
    cache = KVCache(1)
    keys = torch.arange(3.0).view(3, 1, 1, 1).expand(3, 2, 2, 4)
    cache.append(0, keys, keys + 10)
    cache.reorder(torch.tensor([1, 1, 2, 0, 0]))
    assert cache.keys[0].shape == (5, 2, 2, 4) and len(cache) == 2
    new = torch.full((5, 2, 1, 4), 7.0)
    keys, values = cache.append(0, new, new)
    assert keys[:, 0, :, 0].tolist() == [
        [1, 1, 7],
        [1, 1, 7],
        [2, 2, 7],
        [0, 0, 7],
        [0, 0, 7],
    ]
    assert values[:, 1, 0, 3].tolist() == [11, 11, 12, 10, 10]


def test_reorder_of_an_empty_cache_changes_nothing():
    cache = KVCache(2)
    cache.reorder(torch.tensor([0, 0, 1]))
    assert cache.keys == [None, None] and cache.values == [None, None]


@pytest.mark.parametrize(
    "rows, error, match",
    [
        ([0, 1], TypeError, "rows must be a torch.Tensor"),
        (torch.tensor([0.0, 1.0]), TypeError, "int64"),
        (torch.tensor([0, 1], dtype=torch.int32), TypeError, "int64"),
        (torch.tensor([True, False]), TypeError, "int64"),
        (torch.tensor([[0, 1]]), ValueError, r"1-D"),
        (torch.tensor([0, 4]), ValueError, r"in \[0, 4\).*0 \.\. 4"),
        (torch.tensor([-1, 0]), ValueError, r"in \[0, 4\)"),
        (torch.tensor([0, 1], device="meta"), ValueError, "meta"),
    ],
)
def test_reorder_refuses_bad_rows_before_anything_changes(rows, error, match):
    cache = KVCache(2)
    keys = torch.randn(4, 2, 3, 5)
    cache.append(0, keys, 2 * keys)
    cache.append(1, -keys, keys)
    before = [t.clone() for t in cache.keys + cache.values]
    with pytest.raises(error, match=match):
        cache.reorder(rows)
    assert all(
        torch.equal(a, b) for a, b in zip(before, cache.keys + cache.values)
    )


def test_reorder_names_rows_on_another_device_and_mixed_layers():
    cache = KVCache(2)
    cache.append(0, torch.zeros(4, 1, 1, 2), torch.zeros(4, 1, 1, 2))
    cache.append(1, torch.zeros(3, 1, 1, 2), torch.zeros(3, 1, 1, 2))
    with pytest.raises(ValueError, match="different batch sizes"):
        cache.reorder(torch.tensor([0]))
    assert cache.keys[0].shape[0] == 4 and cache.keys[1].shape[0] == 3
    if torch.cuda.is_available():  # pragma: no cover - needs a GPU
        cache = KVCache(1)
        cache.append(0, torch.zeros(2, 1, 1, 2), torch.zeros(2, 1, 1, 2))
        with pytest.raises(ValueError, match="rows are on cuda"):
            cache.reorder(torch.tensor([0, 1], device="cuda"))


def _output_lengths(tokens, eos):
    is_eos = tokens == eos
    first = torch.where(
        is_eos.any(1), is_eos.float().argmax(1), tokens.shape[1] - 1
    )
    return (first + 1).float()


@pytest.mark.parametrize("seed", [3, 4])
@pytest.mark.parametrize("alpha", [0.6, 3.0])
def test_with_a_length_penalty_a_full_beam_finds_the_best_pair(seed, alpha):
    # width = vocabulary size over two steps is exhaustive: the result is the
    # pair with the best log p / lp(length), length counted up to the EOS
    model = _model(seed, eos=8)
    src, lens = _source(seed)
    vocab = 9
    beam, scores = beam_search(model, src, lens, vocab, 2, alpha=alpha)
    expect = sequence_log_probs(model, src, lens, beam) / length_penalty(
        _output_lengths(beam, 8), alpha
    )
    assert torch.allclose(scores, expect, atol=1e-5)
    pairs = torch.cartesian_prod(torch.arange(vocab), torch.arange(vocab))
    pairs = pairs[(pairs[:, 0] != 8) | (pairs[:, 1] == 8)]  # EOS pads
    lp = length_penalty(_output_lengths(pairs, 8), alpha)
    for i in range(src.shape[0]):
        every = sequence_log_probs(
            model, src[i : i + 1].expand(len(pairs), -1),
            lens[i : i + 1].expand(len(pairs)), pairs,
        )  # fmt: skip
        assert scores[i] == pytest.approx((every / lp).max().item(), abs=1e-5)


def test_length_penalty_is_gnmts():
    lengths = torch.tensor([1.0, 7.0, 25.0])
    assert torch.equal(length_penalty(lengths, 0.0), torch.ones(3))
    assert torch.allclose(
        length_penalty(lengths, 0.6),
        torch.tensor([1.0, 2.0**0.6, 5.0**0.6]),
    )


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
    for alpha in (-0.5, float("nan")):
        with pytest.raises(ValueError, match="alpha"):
            beam_search(model, src, lens, alpha=alpha)
    with pytest.raises(ValueError, match="use_cache"):
        beam_search(model, src, lens, use_cache=1)


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


@pytest.mark.parametrize(
    "tokens, match",
    [
        (None, "tokens must be a torch.Tensor"),
        (torch.tensor(3), "tokens must have 2 dimensions"),
        (torch.zeros(2, 0, dtype=torch.long), "T >= 1"),
        (torch.full((2, 4), 99), "tokens holds id 99"),
    ],
)
def test_sequence_log_probs_names_bad_tokens(tokens, match):
    from attnbook.nn.beam_search import sequence_log_probs
    from attnbook.nn.decoder import EncoderDecoderTransformer

    torch.manual_seed(0)
    model = EncoderDecoderTransformer(10, 10, 8, 2, 16, 1, 1)
    src, lens = torch.randint(3, 10, (2, 5)), torch.tensor([5, 3])
    with pytest.raises((TypeError, ValueError), match=match):
        sequence_log_probs(model, src, lens, tokens)
    assert sequence_log_probs(model, src, lens, torch.ones(2, 4).long()).shape
