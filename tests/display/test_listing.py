"""show_source: the plain text is the source, the Markdown a fenced python block."""

import inspect
import textwrap

import pytest

from attnbook.display.listing import Listing, show_source


def double(x):
    """Twice x."""
    return 2 * x


class Counter:
    """Counts."""

    def __init__(self):
        self.count = 0

    def step(self, by=1):
        self.count += by
        return self.count

    @property
    def doubled(self):
        return 2 * self.count

    @staticmethod
    def zero():
        return 0


def with_fence():
    """Prints a Markdown fence:

    ```python
    ```
    """
    return "```"


def test_text_is_the_source_without_trailing_newline():
    listing = show_source(double)
    assert isinstance(listing, Listing)
    assert repr(listing) == inspect.getsource(double).rstrip("\n")
    assert repr(listing).startswith("def double(x):") and repr(
        listing
    ).endswith("return 2 * x")


def test_markdown_is_a_fenced_python_block():
    markdown = show_source(double)._repr_markdown_()
    assert markdown == "```python\n" + repr(show_source(double)) + "\n```"


def test_fence_is_longer_than_any_backticks_in_the_code():
    markdown = show_source(with_fence)._repr_markdown_()
    assert markdown.startswith("````python\n") and markdown.endswith("\n````")


def test_method_is_dedented():
    text = repr(show_source(Counter.step))
    assert text == textwrap.dedent(inspect.getsource(Counter.step)).rstrip(
        "\n"
    )
    assert text.startswith("def step(self, by=1):\n    self.count += by")


def test_class_property_and_staticmethod():
    assert repr(show_source(Counter)).startswith(
        'class Counter:\n    """Counts."""'
    )
    assert repr(show_source(Counter.doubled)).startswith(
        "@property\ndef doubled(self):"
    )
    assert repr(show_source(Counter.__dict__["zero"])).startswith(
        "@staticmethod\ndef zero():"
    )


def test_ipython_plain_text_is_the_source():
    pretty = pytest.importorskip("IPython.lib.pretty")
    assert pretty.pretty(show_source(Counter.step)) == repr(
        show_source(Counter.step)
    )


@pytest.mark.parametrize("obj", [3, "def f(): pass", len])
def test_no_source_is_a_type_error_naming_the_argument(obj):
    with pytest.raises(
        TypeError, match=r"show_source\(obj\): obj must be a function"
    ):
        show_source(obj)
