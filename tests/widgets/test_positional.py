"""The chapter-8 explorer (attnbook.widgets.positional): its view."""

import pytest


def test_positional_view_keeps_its_table_small():
    from attnbook.widgets.positional import positional_view

    with pytest.raises(ValueError, match="numbers"):
        positional_view(dim=4096, num_positions=100_000)
