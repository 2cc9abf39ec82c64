"""attnbook.measure.memory: the bytes of a score matrix."""

import pytest


def test_score_matrix_bytes_takes_whole_chunks_and_torch_dtypes():
    from attnbook.measure.memory import score_matrix_bytes

    assert score_matrix_bytes(4, 10, chunk_size=3) == 4 * 3 * 4
    with pytest.raises((TypeError, ValueError), match="chunk_size"):
        score_matrix_bytes(4, 10, chunk_size=2.5)
    with pytest.raises(TypeError, match="dtype"):
        score_matrix_bytes(4, 10, dtype="float32")
