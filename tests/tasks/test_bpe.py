"""The byte-pair encoder: exact round trips on any Unicode text, merges
learned and applied in order (a hand-worked example and a plain-Python
reference written after minbpe's BasicTokenizer), and clear errors."""

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from attnbook import BytePairEncoder
from attnbook.tasks.bpe import _merge_pair

ENGLISH = (
    "Return the number of items in the list. If the list is empty, return "
    "zero. The items of the list are returned in the order they were added."
)


# -- a reference in plain Python, after minbpe's BasicTokenizer ----------


def _stats(ids):
    counts = {}
    for pair in zip(ids, ids[1:]):
        counts[pair] = counts.get(pair, 0) + 1
    return counts


def _merge(ids, pair, new_id):
    out, i = [], 0
    while i < len(ids):
        if i < len(ids) - 1 and (ids[i], ids[i + 1]) == pair:
            out.append(new_id)
            i += 2
        else:
            out.append(ids[i])
            i += 1
    return out


def reference_train(text, num_merges):
    ids, merges = list(text.encode("utf-8")), []
    for i in range(num_merges):
        stats = _stats(ids)
        pair = max(stats, key=stats.get)  # first of the most frequent
        merges.append(pair)
        ids = _merge(ids, pair, 256 + i)
    return merges


def reference_encode(merges, text):
    """minbpe's encode: always merge the present pair learned first."""
    rank = {pair: i for i, pair in enumerate(merges)}
    ids = list(text.encode("utf-8"))
    while len(ids) >= 2:
        pair = min(_stats(ids), key=lambda p: rank.get(p, float("inf")))
        if pair not in rank:
            break
        ids = _merge(ids, pair, 256 + rank[pair])
    return ids


@pytest.fixture(scope="module")
def english():
    return BytePairEncoder.train(ENGLISH, 40)


# -- behaviour -----------------------------------------------------------


def test_the_hand_worked_example():
    # "aaabdaaabac": "aa" occurs 4 times (overlaps counted) -> 256; then
    # (256, "a") and ("a", "b") both occur twice, the first seen wins ->
    # 257 = "aaa"; then (257, "b") twice -> 258 = "aaab".
    bpe = BytePairEncoder.train("aaabdaaabac", 3)
    a, b, c, d = map(ord, "abcd")
    assert bpe.merges == [(a, a), (256, a), (257, b)]
    assert bpe.encode("aaabdaaabac") == [258, d, 258, a, c]
    assert bpe.token_bytes[258] == b"aaab"
    assert bpe.vocab_size == 259


def test_merges_are_applied_in_the_order_learned():
    # learned: 256 = "ab", then 257 = "bc"; "abc" must become [256, "c"],
    # not ["a", 257], although "bc" would also fit
    bpe = BytePairEncoder([(97, 98), (98, 99)])
    assert bpe.encode("abc") == [256, 99]
    swapped = BytePairEncoder([(98, 99), (97, 98)])
    assert swapped.encode("abc") == [97, 256]


def test_a_run_of_one_byte_is_merged_left_to_right():
    ids = torch.tensor([7, 7, 7, 7, 7, 1, 7, 7])
    assert _merge_pair(ids, (7, 7), 300).tolist() == [300, 300, 7, 1, 300]


def test_merges_and_ids_match_the_minbpe_style_reference():
    merges = reference_train(ENGLISH, 40)
    bpe = BytePairEncoder.train(ENGLISH, 40)
    assert bpe.merges == merges
    for text in (ENGLISH, "the list of items", "zzz", "", "Ünïcödé 列表"):
        assert bpe.encode(text) == reference_encode(merges, text)


@settings(max_examples=60, deadline=None)
@given(st.text(max_size=200), st.integers(0, 30))
def test_training_on_any_text_matches_the_reference(text, num_merges):
    num_merges = min(num_merges, max(0, len(text.encode("utf-8")) - 1))
    try:
        merges = reference_train(text, num_merges)
    except ValueError:  # the reference ran out of pairs (max of nothing)
        with pytest.raises(ValueError, match="no pair left"):
            BytePairEncoder.train(text, num_merges)
        return
    bpe = BytePairEncoder.train(text, num_merges)
    assert bpe.merges == merges
    assert bpe.encode(text) == reference_encode(merges, text)
    assert bpe.decode(bpe.encode(text)) == text


@settings(max_examples=200, deadline=None)
@given(st.text())
def test_any_unicode_text_round_trips(english, text):
    ids = english.encode(text)
    assert english.decode(ids) == text
    assert all(0 <= i < english.vocab_size for i in ids)
    assert len(ids) <= len(text.encode("utf-8"))


def test_merges_compress_the_text_they_were_learned_on(english):
    assert len(english.encode(ENGLISH)) < 0.7 * len(ENGLISH.encode("utf-8"))
    # each learned token stands for the bytes of its two parts
    for i, (a, b) in enumerate(english.merges):
        token = english.token_bytes[256 + i]
        assert token == english.token_bytes[a] + english.token_bytes[b]


def test_decode_takes_a_tensor_and_can_replace_cut_characters(english):
    ids = english.encode("é")  # two bytes, never merged here
    assert len(ids) == 2
    assert english.decode(torch.tensor(ids)) == "é"
    assert english.decode(ids[:1], errors="replace") == "\ufffd"


# -- errors ----------------------------------------------------------------


@pytest.mark.parametrize(
    "text, num_merges, error, words",
    [
        (b"abc", 1, TypeError, "text must be a str"),
        ("abc", 1.0, TypeError, "num_merges must be an int"),
        ("abc", True, TypeError, "num_merges must be an int"),
        ("abc", -1, ValueError, "num_merges must be >= 0"),
        ("abc", 3, ValueError, "at most 2"),
        ("aaaa", 3, ValueError, "no pair left"),
    ],
)
def test_bad_training_input_is_named(text, num_merges, error, words):
    with pytest.raises(error, match=words):
        BytePairEncoder.train(text, num_merges)


@pytest.mark.parametrize(
    "ids, error, words",
    [
        ("abc", TypeError, "ids must be a list of ints"),
        ([1.0], TypeError, "ids must be a list of ints"),
        ([True], TypeError, "ids must be a list of ints"),
        ([296], ValueError, r"ids\[0\] = 296 is outside \[0, 296\)"),
        ([5, -1], ValueError, r"ids\[1\] = -1"),
        ([0xFF], ValueError, "not valid UTF-8"),
        (torch.zeros(2, 2, dtype=torch.int64), TypeError, "1-D integer"),
        (torch.zeros(2), TypeError, "1-D integer"),
    ],
)
def test_bad_ids_are_named(english, ids, error, words):
    with pytest.raises(error, match=words):
        english.decode(ids)


def test_bad_arguments_elsewhere_are_named(english):
    with pytest.raises(TypeError, match="text must be a str"):
        english.encode(["a"])
    with pytest.raises(ValueError, match="errors must be"):
        english.decode([97], errors="ignore")
    with pytest.raises(ValueError, match=r"merges\[0\]"):
        BytePairEncoder([(0, 256)])  # 256 does not exist yet
    with pytest.raises(ValueError, match=r"merges\[1\]"):
        BytePairEncoder([(1, 2), (1, 2, 3)])
    with pytest.raises(TypeError, match="merges must be a list"):
        BytePairEncoder("ab")
