"""attnbook.tasks.text: the character corpus, its batches and the count
baselines."""

import pytest
import torch

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
