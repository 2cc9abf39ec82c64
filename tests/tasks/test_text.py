"""attnbook.tasks.text: the character corpus, its batches and the count
baselines."""

import pytest


def test_count_baselines_need_held_out_text():
    from attnbook.tasks import text

    for baseline in (text.unigram_bits_per_char, text.bigram_bits_per_char):
        with pytest.raises(ValueError, match="held_out"):
            baseline("hello world", "")
