"""What the scripts that ship results as JSON share: the ``--out`` option
(default: the package's data folder) and writing the file with the SHA-256
digest to pin."""

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
