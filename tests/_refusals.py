"""Shared by the tests of clean refusals: a call refused with a clear error
leaves what the caller owns (its tensors, a cache, torch's global random
state) as it was."""

import copy

import pytest
import torch

from attnbook.nn.language_model import KVCache


def refused(call, error, match, *owned):
    """``call()`` raises ``error`` matching ``match``; the tensors (or
    objects) in ``owned`` and torch's global RNG are as they were."""
    before = [copy.deepcopy(o) for o in owned]
    rng = torch.get_rng_state()
    with pytest.raises(error, match=match):
        call()
    assert torch.equal(torch.get_rng_state(), rng)
    for old, new in zip(before, owned):
        _assert_same(old, new)


def _assert_same(old, new):
    if isinstance(old, torch.Tensor):
        assert old.shape == new.shape and old.dtype == new.dtype
        assert old.stride() == new.stride()
        # compare what the tensors hold (their storage), not the view: a
        # broadcast view of 10**9 rows would be materialised by a comparison
        old_bytes = bytes(old.untyped_storage())
        assert bytes(new.untyped_storage()) == old_bytes
    elif isinstance(old, KVCache):
        assert len(old.keys) == len(new.keys)
        for a, b in zip(old.keys + old.values, new.keys + new.values):
            assert (a is None and b is None) or torch.equal(a, b)
    elif isinstance(old, (list, tuple)):
        for a, b in zip(old, new):
            _assert_same(a, b)


def wide(t: torch.Tensor, rows: int = 10**9) -> torch.Tensor:
    """A stride-0 view with ``rows`` rows (the probe's hostile view)."""
    return t[:1].expand(rows, *t.shape[1:])
