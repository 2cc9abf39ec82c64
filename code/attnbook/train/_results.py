"""What the training scripts share: their command line (``--out``, default
the package's data folder; ``--check``; one option per recipe entry) and
writing a result file with the SHA-256 digest to pin."""

import argparse
import hashlib
from pathlib import Path

DATA = Path(__file__).resolve().parents[1] / "data"


def results_parser(description: str, filename: str) -> argparse.ArgumentParser:
    """An argument parser with ``--out``, by default ``data/<filename>``."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--out", type=Path, default=DATA / filename)
    return parser


def write_pinned(path: Path, text: str, constant: str, module: str) -> str:
    """Write ``text`` to ``path`` and print the digest to pin as
    ``constant`` in ``module``; returns the digest."""
    path.write_text(text)
    digest = hashlib.sha256(text.encode()).hexdigest()
    print(
        f"wrote {path}; SHA-256 (pin it as {constant} in {module}): {digest}"
    )
    return digest


def training_arguments(
    argv, description: str, recipe: dict, script: str, check: bool = True
):
    """The command line shared by the ``attnbook.train`` scripts: ``--out``,
    ``--check`` (unless ``check`` is False) and one option per recipe entry
    (``--batch-size 64``).
    Returns (args, the recipe as given, the command that reproduces it, e.g.
    ``python -m attnbook.train.sorter --steps 100``)."""
    parser = argparse.ArgumentParser(
        description=description,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--out",
        type=Path,
        default=None,
        help="where to write the weights (default: the package's data)",
    )
    if check:
        parser.add_argument(
            "--check",
            action="store_true",
            help="only evaluate the shipped weights",
        )
    for key, value in recipe.items():
        parser.add_argument(
            "--" + key.replace("_", "-"),
            type=type(value),
            default=value,
            help=f"training recipe (default {value})",
        )
    args = parser.parse_args(argv)
    given = {key: getattr(args, key) for key in recipe}
    changed = [
        f"--{key.replace('_', '-')} {value}"
        for key, value in given.items()
        if value != recipe[key]
    ]
    return args, given, " ".join([f"python -m attnbook.{script}", *changed])
