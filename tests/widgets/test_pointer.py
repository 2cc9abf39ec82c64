"""The chapter-6 explorer (attnbook.widgets.pointer): its text box and view."""

import pytest

pytest.importorskip("ipywidgets")

from attnbook.widgets import pointer as pointer_widget


def test_pointer_text_box_names_a_number_outside_float32():
    with pytest.raises(ValueError, match="1e39 is too large.*float32"):
        pointer_widget.parse_numbers("1e39, 2")
    assert pointer_widget.parse_numbers("3.4e38, -3.4e38") == [3.4e38, -3.4e38]
    view = pointer_widget.pointer_view("3.4e38, -3.4e38, 1")
    assert view["order"] == [1, 3, 2]
