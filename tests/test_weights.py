"""attnbook._weights: pinned weight files, loaded only when their digest
matches."""

import pytest


def test_a_damaged_weight_file_never_suggests_weights_only_false(monkeypatch):
    from attnbook import _weights

    monkeypatch.setattr(_weights, "read_pinned", lambda name, digest: b"junk")
    with pytest.raises(ValueError) as error:
        _weights.load_pinned("any.pt", "0" * 64)
    assert "weights_only" not in str(error.value)
