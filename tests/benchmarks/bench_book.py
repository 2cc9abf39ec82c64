"""`make book` time from the stored outputs: a cold Jupyter Book build, nothing executed.

The build writes to a temporary folder (``--path-output``), so it is cold (no Sphinx
cache) and never touches the shared ``_build/``. Same command as `make book`
otherwise. Target: <= 60 s.
"""

import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _common import ROOT, row

NAME = "book"
TARGET_S = 60.0


def command(output: Path) -> list:
    jupyter_book = Path(sys.executable).with_name("jupyter-book")
    return [
        str(jupyter_book),
        "build",
        "-W",
        "-n",
        "--keep-going",
        "--path-output",
        str(output),
        str(ROOT),
    ]


def run(quick: bool = False) -> list:
    if quick:  # no build: the command line only
        return [
            row(
                NAME,
                "build command",
                None,
                "",
                "",
                None,
                " ".join(command(Path("TMP"))[1:]),
            )
        ]
    output = Path(tempfile.mkdtemp(prefix="attnbook-bench-book-"))
    try:
        start = time.perf_counter()
        completed = subprocess.run(
            command(output), cwd=ROOT, capture_output=True, text=True
        )
        elapsed = time.perf_counter() - start
    finally:
        shutil.rmtree(output, ignore_errors=True)
    passed = completed.returncode == 0
    note = (
        "cold build into a temporary folder"
        if passed
        else "FAILED: " + completed.stderr.strip()[-200:]
    )
    return [
        row(
            NAME,
            "make book (jupyter-book build, stored outputs)",
            elapsed,
            "s",
            f"<= {TARGET_S:g}",
            passed and elapsed <= TARGET_S,
            note,
        )
    ]
