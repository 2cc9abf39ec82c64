"""Shared fixtures: the built book, a local web server, and a headless Chromium."""

import functools
import http.server
import os
import shutil
import subprocess
import sys
import threading
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
BUILD = ROOT / "_build"
HTML = BUILD / "html"
SCREENSHOTS = BUILD / "screenshots"
CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-quic",
]


def require(found: bool, message: str) -> None:
    """Skip (on a laptop) or fail (under CI, where every test must run) when a tool is missing."""
    if found:
        return
    if os.environ.get("CI"):
        pytest.fail(f"this test must run under CI: {message}")
    pytest.skip(message)


def require_chromium():
    """Debian's Chromium, which the browser tests drive."""
    require(
        CHROMIUM.exists(),
        f"Chromium not found at {CHROMIUM}; install it with `apt-get install chromium`",
    )


def toc_documents() -> list:
    """Every document of the book in reading order, from _toc.yml (the root first), without extension."""
    import yaml

    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    files = [toc["root"]]
    for part in toc.get("parts", []):
        files += [chapter["file"] for chapter in part["chapters"]]
    return files


@pytest.fixture(scope="session")
def browser():
    require_chromium()
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(
            executable_path=str(CHROMIUM), args=CHROMIUM_ARGS
        )
        yield chromium
        chromium.close()


@pytest.fixture(scope="session")
def built_book():
    """The HTML book; built here (from the stored notebook outputs) if it is missing."""
    if not (HTML / "index.html").exists():
        jupyter_book = Path(sys.executable).with_name("jupyter-book")
        subprocess.run(
            [
                str(jupyter_book),
                "build",
                "-W",
                "-n",
                "--keep-going",
                str(ROOT),
            ],
            check=True,
            cwd=ROOT,
        )
    return HTML


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


@pytest.fixture(scope="session")
def book_server(built_book):
    """Serve the built book on 127.0.0.1 (a free port); yields the base URL."""
    handler = functools.partial(_QuietHandler, directory=str(built_book))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()


@pytest.fixture(scope="session")
def screenshot_dir():
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    return SCREENSHOTS


def venv_bin(name: str) -> str:
    """A command from the environment running the tests (the book's .venv)."""
    candidate = Path(sys.executable).with_name(name)
    return str(candidate) if candidate.exists() else shutil.which(name)


def _schedule_rank(item) -> int:
    """Longest first, so that `make test`'s parallel workers finish together.

    The JupyterLab tests (every chapter run again in a real Lab, in two files
    of half the chapters each, so that two workers share them) are the
    suite's longest files, the browser tests next, then the chapters under nbval, then
    the unit tests.
    """
    path = Path(str(item.fspath))
    if path.name.startswith("test_lab"):
        return 0
    if path.name.startswith(("test_browser", "test_pdf")):
        return 1
    if path.suffix == ".ipynb":
        return 2
    return 3


def pytest_collection_modifyitems(config, items):
    # sorted() is stable: within a file the tests keep their order.
    items[:] = sorted(items, key=_schedule_rank)
