"""encode's table look-up gives the ids of the per-character path."""

import pytest
import torch

from attnbook.tasks.text import TOKEN_ID, VOCAB, corpus_split, encode


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
