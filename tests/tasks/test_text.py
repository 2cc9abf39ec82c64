"""attnbook.tasks.text: the character corpus, its batches and the count
baselines."""

import pytest
import torch

from attnbook.tasks.text import TOKEN_ID, VOCAB, corpus_split, encode

from _refusals import refused


def test_count_baselines_need_held_out_text():
    from attnbook.tasks import text

    for baseline in (text.unigram_bits_per_char, text.bigram_bits_per_char):
        with pytest.raises(ValueError, match="held_out"):
            baseline("hello world", "")


def test_text_batch_refuses_a_batch_beyond_the_limit():
    from attnbook.tasks.text import text_batch

    ids, g = torch.zeros(100, dtype=torch.long), torch.Generator()
    state = g.get_state()
    refused(
        lambda: text_batch(ids, 10**12, 8, g), ValueError, "the batch", ids
    )
    assert torch.equal(g.get_state(), state)


def _slow(text):
    return torch.tensor([TOKEN_ID[c] for c in text], dtype=torch.int64)


@pytest.mark.parametrize(
    "text", ["", "a", "\n", VOCAB, VOCAB[::-1] * 3, "Return the \n\n x"]
)
def test_encode_equals_the_per_character_ids(text):
    ids = encode(text)
    assert ids.dtype == torch.int64 and ids.shape == (len(text),)
    assert torch.equal(ids, _slow(text))


def test_encode_the_corpus():
    held_out = corpus_split()[1]
    assert torch.equal(encode(held_out), _slow(held_out))


@pytest.mark.parametrize("bad", ["\t", "ab\rc", "é", "x\x7f", "\x00"])
def test_encode_names_the_first_character_outside_vocab(bad):
    with pytest.raises(ValueError, match="is not in the vocabulary"):
        encode(bad)


def test_encode_returns_a_fresh_tensor():
    ids = encode("abc")
    ids[0] = 5
    assert encode("abc")[0] == TOKEN_ID["a"]
