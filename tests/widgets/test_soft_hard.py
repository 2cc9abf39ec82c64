"""The chapter-3 explorer (attnbook.widgets.soft_hard): its query and view."""

import pytest


def test_angle_query_refuses_nan():
    from attnbook.widgets.soft_hard import angle_query

    with pytest.raises(ValueError, match="angle"):
        angle_query(float("nan"))
