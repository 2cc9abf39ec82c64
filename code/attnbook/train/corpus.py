"""Extract chapter 12's corpus: the docstrings of Python's standard library.

    # rebuild attnbook/data/python_docstrings.txt.gz from this Python
    python -m attnbook.train.corpus
    # elsewhere, e.g. to compare digests
    python -m attnbook.train.corpus --out /tmp/docstrings.txt.gz

The text is English written by the people who wrote Python's standard library
(Python Software Foundation licence, shipped next to it as
``python_docstrings_LICENSE.txt``). One document per module, in sorted order
of module name; a document is the module's docstring followed by the
docstrings of its classes and functions in source order, each cleaned by
``inspect.cleandoc`` and separated by a blank line. A docstring is kept only
if it is ASCII, has no tab or other control character, and was not already
kept (exact duplicates are dropped). Documents are separated by a form feed
(``\\f``), which never occurs inside one.

Excluded folders: tests, IDLE, lib2to3, the turtle demos, the codecs of
``encodings`` (generated boilerplate), ``pydoc_data`` and ``site-packages``.
The shipped file was made with CPython 3.11.7; another version gives another
file (the chapters read the shipped one, pinned by
``attnbook.tasks.text.CORPUS_SHA256``).
"""

import argparse
import ast
import gzip
import hashlib
import inspect
import os
import sysconfig
from pathlib import Path

from .._checks import require_text
from ..tasks.text import CORPUS_FILE, DOCUMENT_SEPARATOR

EXCLUDED = {
    "test",
    "tests",
    "idle_test",
    "idlelib",
    "lib2to3",
    "turtledemo",
    "encodings",
    "pydoc_data",
    "site-packages",
    "__phello__",
}
EXCLUDED_FILES = {"this.py", "antigravity.py", "__hello__.py"}


def _path(name: str, value):
    if not isinstance(value, (str, os.PathLike)) or not str(value):
        raise TypeError(f"{name} must be a path, got {value!r:.40}")
    return value


def _directory(name: str, value) -> Path:
    """A path to an existing directory (a str or a Path)."""
    path = Path(_path(name, value))
    if not path.is_dir():
        raise ValueError(f"{name} must be a directory, got {str(path)!r:.60}")
    return path


def module_files(lib: Path) -> list:
    """The standard library's .py files under ``lib``, sorted by module
    name, without the excluded folders and files."""
    lib = _directory("lib", lib)
    files = []
    for path in lib.rglob("*.py"):
        parts = path.relative_to(lib).parts
        if EXCLUDED & set(parts[:-1]) or path.name in EXCLUDED_FILES:
            continue
        if parts[0].startswith("config-"):
            continue
        files.append(path)
    return sorted(files, key=lambda p: module_name(p, lib))


def module_name(path: Path, lib: Path) -> str:
    """'email.mime.text' for lib/email/mime/text.py."""
    path, lib = Path(_path("path", path)), Path(_path("lib", lib))
    if not path.is_relative_to(lib):
        raise ValueError(f"path {path} is not under lib {lib}")
    parts = list(path.relative_to(lib).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def docstrings(tree: ast.AST):
    """The docstrings of a module, then of its classes and functions, in
    source order (depth first)."""
    kinds = (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)
    if isinstance(tree, kinds):
        text = ast.get_docstring(tree, clean=False)
        if text:
            yield text
    for child in ast.iter_child_nodes(tree):
        yield from docstrings(child)


def clean(text: str):
    """A docstring as prose (dedented, no trailing spaces), or None if it
    holds a non-ASCII or control character."""
    text = inspect.cleandoc(require_text("text", text))
    text = "\n".join(line.rstrip() for line in text.splitlines()).strip()
    printable = all(c == "\n" or " " <= c <= "~" for c in text)
    return text if text and printable else None


def extract(lib: Path) -> list:
    """One document (str) per module of ``lib``, in sorted module order;
    empty documents are left out."""
    seen, documents = set(), []
    for path in module_files(lib):
        try:
            tree = ast.parse(path.read_text(encoding="utf-8"))
        except (SyntaxError, UnicodeDecodeError):
            continue
        kept = []
        for text in map(clean, docstrings(tree)):
            if text is not None and text not in seen:
                seen.add(text)
                kept.append(text)
        if kept:
            documents.append("\n\n".join(kept))
    return documents


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--lib",
        type=Path,
        default=Path(sysconfig.get_paths()["stdlib"]),
        help="the standard library folder (default: this Python's)",
    )
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args(argv)
    out = (
        args.out or Path(__file__).resolve().parents[1] / "data" / CORPUS_FILE
    )
    documents = extract(args.lib)
    text = DOCUMENT_SEPARATOR.join(documents)
    data = text.encode("ascii")
    out.parent.mkdir(parents=True, exist_ok=True)
    # mtime=0 and no file name inside: the same text gives the same bytes
    with open(out, "wb") as raw:
        with gzip.GzipFile(
            filename="", mode="wb", compresslevel=9, fileobj=raw, mtime=0
        ) as packed:
            packed.write(data)
    print(
        f"{len(documents)} documents, {len(data):,} characters; saved {out} "
        f"({out.stat().st_size:,} bytes); SHA-256 (pin it as CORPUS_SHA256 "
        "in attnbook/tasks/text.py): "
        f"{hashlib.sha256(out.read_bytes()).hexdigest()}"
    )


if __name__ == "__main__":
    main()
