"""Printed source listings: ``show_source(f)`` shows the code of ``f``, syntax-coloured.

The listing is a display object with two forms. Its plain text is the source itself, which
nbval re-checks like any other output. Its Markdown is the same source in a fenced ``python``
block: the HTML book (myst-nb) and JupyterLab (jupyterlab-myst) show it coloured.
"""

import inspect
import re
import textwrap


class Listing:
    """The source code of one object, shown as a Python code block."""

    def __init__(self, source: str):
        self.source = source

    def __repr__(self) -> str:
        return self.source

    def _repr_markdown_(self) -> str:
        # A fence longer than any run of backticks in the code, so the code cannot close it.
        longest = max(
            (len(run) for run in re.findall("`+", self.source)), default=0
        )
        fence = "`" * max(3, longest + 1)
        return f"{fence}python\n{self.source}\n{fence}"


def show_source(obj) -> Listing:
    """The source of a function, method, class or property, dedented, as a `Listing`.

    In a notebook the listing shows as a syntax-coloured code block; ``repr()`` of it, and
    its ``text/plain`` output, is the source text without its trailing newline.
    """
    if isinstance(obj, property):
        obj = obj.fget
    if isinstance(obj, (classmethod, staticmethod)):
        obj = obj.__func__
    try:
        source = inspect.getsource(obj)
    except (
        TypeError,
        OSError,
    ) as error:  # no source: built in, or typed at a prompt
        raise TypeError(
            f"show_source(obj): obj must be a function, method, class or property "
            f"written in Python, not {type(obj).__name__} {obj!r:.60}"
        ) from error
    return Listing(textwrap.dedent(source).rstrip("\n"))
