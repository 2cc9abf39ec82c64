"""The thread-count context managers restore what was there, even after an error."""

import pytest
import torch

from attnbook.measure.threads import single_thread, torch_threads


def test_single_thread_sets_one_and_restores():
    before = torch.get_num_threads()
    with single_thread():
        assert torch.get_num_threads() == 1
    assert torch.get_num_threads() == before


def test_torch_threads_restores_after_an_error_and_none_leaves_it():
    before = torch.get_num_threads()
    with pytest.raises(RuntimeError, match="boom"):
        with torch_threads(1):
            raise RuntimeError("boom")
    assert torch.get_num_threads() == before
    with torch_threads(None):
        assert torch.get_num_threads() == before


def test_bad_counts():
    for bad in (0, -2, 1.5, True):
        with pytest.raises(ValueError, match="count must be a positive int"):
            with torch_threads(bad):
                pass


@pytest.mark.parametrize("count", [0, 2**31, 10**12, 2.5])
def test_torch_threads_refuses_a_count_torch_cannot_take(count):
    from attnbook.measure.threads import torch_threads

    threads = torch.get_num_threads()
    with pytest.raises(ValueError, match="count must be"):
        with torch_threads(count):
            pass
    assert torch.get_num_threads() == threads
