"""Source listings: ``show_source(f)`` shows the code of ``f`` as a code block.

The listing is a display object with two forms. Its plain text is the source
itself, which nbval re-checks like any other output. Its Markdown is the same
source in a fenced ``python`` block, which the HTML book (myst-nb) and the PDF
show syntax-coloured and JupyterLab (jupyterlab-myst) as a code block.
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
        # Longer than any run of backticks in the code, which cannot close it.
        runs = re.findall("`+", self.source)
        fence = "`" * max([3] + [len(run) + 1 for run in runs])
        return f"{fence}python\n{self.source}\n{fence}"


def show_source(obj) -> Listing:
    """The source of a function, method, class or property, as a `Listing`.

    The source is dedented. In a notebook the listing shows as a code block;
    ``repr()`` of it, its ``text/plain`` output, is the source text without
    its trailing newline.
    """
    if isinstance(obj, property):
        obj = obj.fget
    if isinstance(obj, (classmethod, staticmethod)):
        obj = obj.__func__
    if type(obj).__module__.startswith("triton"):  # a @triton.jit kernel
        obj = obj.fn
    try:
        source = inspect.getsource(obj)
    except (TypeError, OSError) as error:  # built in, or typed at a prompt
        raise TypeError(
            "show_source(obj): obj must be a function, method, class or "
            f"property written in Python, not {type(obj).__name__} "
            f"{obj!r:.60}"
        ) from error
    return Listing(textwrap.dedent(source).rstrip("\n"))
