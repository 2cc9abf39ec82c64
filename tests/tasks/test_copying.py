"""attnbook.tasks.copying: the copy task's batches and their checks."""

import pytest
import torch

from attnbook.tasks import copying


@pytest.mark.parametrize(
    "lengths",
    [[0, 1], [-1, 2], [1.5, 2], [True, 2], [], None, "3", [3], 0, True, 2.5],
)
def test_copy_batch_refuses_bad_lengths(lengths):
    with pytest.raises((TypeError, ValueError)):
        copying.copy_batch(2, lengths, torch.Generator().manual_seed(0))


def test_copy_batch_needs_a_generator():
    with pytest.raises(TypeError, match="Generator"):
        copying.copy_batch(2, 3, None)


def test_copy_batch_refuses_strings_beyond_the_limit():
    from attnbook.tasks.copying import copy_batch

    with pytest.raises(ValueError, match="GiB"):
        copy_batch(4, 10**9, torch.Generator())
