"""Every chapter in a real JupyterLab, driven by headless Chromium, as `make lab` sets it up.

Starts `jupyter lab` from the book's environment on 127.0.0.1 with `make lab`'s configuration
(lab/jupyter_lab_config.py; token, temporary config/data/runtime folders, a temporary copy of
book/ so autosave cannot touch the stored notebooks, chapters trusted with `jupyter trust` as
`make lab` does). Checks the file browser (chapters and back matter only) and that no news
pop-up appears; then for each chapter, before running it: every markdown cell rendered by
jupyterlab-myst with no raw MyST left (roles, directives, unresolved references), figure
references numbered as in the HTML book, solutions collapsed, the saved explorer shown; then
run all cells, assert no cell raised, press ArrowRight on the first slider, and assert that the
widget's figure changed. Screenshots (a rendered cross-reference and the moved explorer of each
chapter) go to _build/screenshots/lab/. Code blocks (show_source listings, ```python in markdown
cells) must show the code editor's syntax colours (lab/labextensions/attnbook-lab), in a generated
notebook and in a chapter with a listing. ATTNBOOK_NOTEBOOKS=/some/folder takes the chapters from
there instead of book/ (e.g. copies with collapsed solutions).
"""

import json
import os
import re
import secrets
import shutil
import socket
import subprocess
import time
import urllib.request
from pathlib import Path

import pytest
from playwright.sync_api import TimeoutError as PlaywrightTimeout

from conftest import ROOT, SCREENSHOTS, venv_bin

pytestmark = pytest.mark.lab

BOOK = ROOT / "book"
NOTEBOOKS = Path(os.environ.get("ATTNBOOK_NOTEBOOKS", BOOK))
CHAPTERS = sorted(path.name for path in BOOK.glob("[0-9][0-9]_*.ipynb"))
BACK_MATTER = sorted(path.name for path in BOOK.glob("*.md"))
LAB_CONFIG = ROOT / "lab" / "jupyter_lab_config.py"
RUN_TIMEOUT_MS = 240_000
# MyST source that must not be visible in a rendered markdown cell.
# A role stays visible as "{numref}" even where plain Markdown turns its `target` into code.
RAW_MYST = re.compile(
    r"\{(?:numref|ref|doc|cite|term|eq|glossary|download)\}|:::\{|```\{"
)
HIDE_TAGS = ("hide-cell", "hide-input", "hide-output")

MARKDOWN_RENDERED = r"""
() => {
  const panel = window.jupyterapp.shell.currentWidget;
  const markdown = panel.content.widgets.filter(cell => cell.model.type === 'markdown');
  const rendered = panel.node.querySelectorAll('.jp-MarkdownCell .myst').length;
  const unresolved = panel.node.querySelectorAll(
    '.myst [title="Cross Reference Not Found"], .myst [title="Citation Not Found"]').length;
  const untitled = [...panel.node.querySelectorAll('.myst a.link')].filter(
    link => /^\d\d_\w+$/.test(link.textContent.trim())).length;  // chapter titles arrive asynchronously
  return markdown.length > 0 && rendered === markdown.length && unresolved === 0 && untitled === 0;
}
"""

MARKDOWN_STATE = """
() => {
  const panel = window.jupyterapp.shell.currentWidget;
  const cells = panel.content.widgets;
  const markdown = cells.filter(cell => cell.model.type === 'markdown');
  const hideTags = %s;
  const hidden = cells.filter(cell => (cell.model.getMetadata('tags') || []).some(tag => hideTags.includes(tag)));
  return {
    markdown: markdown.length,
    texts: markdown.map(cell => { const node = cell.node.querySelector('.myst'); return node ? node.textContent : null; }),
    unresolved: [...panel.node.querySelectorAll(
      '.myst [title="Cross Reference Not Found"], .myst [title="Citation Not Found"]')].map(node => node.textContent),
    citations: [...panel.node.querySelectorAll('.myst span.attnbook-ref[data-attnbook-ref=citation]')].map(node => node.textContent),
    figureRefs: [...panel.node.querySelectorAll('.myst span.attnbook-ref[data-attnbook-ref=figure]')].map(node => node.textContent),
    documentLinks: [...panel.node.querySelectorAll('.myst a.attnbook-ref')].map(node => node.textContent),
    dropdowns: panel.node.querySelectorAll('.myst details').length,
    openDropdowns: panel.node.querySelectorAll('.myst details[open]').length,
    hidden: hidden.length,
    // each tag hides what the HTML book hides: hide-cell both, hide-input the source,
    // hide-output the output
    openHidden: hidden.filter(cell => {
      const tags = cell.model.getMetadata('tags') || [];
      const input = tags.includes('hide-cell') || tags.includes('hide-input');
      const output = cell.model.type === 'code' && (tags.includes('hide-cell') || tags.includes('hide-output'));
      return (input && !cell.inputHidden) || (output && !cell.outputHidden);
    })
      .map(cell => cells.indexOf(cell)),
  };
}
""" % json.dumps(list(HIDE_TAGS))

SAVED_EXPLORER_SHOWN = """
() => window.jupyterapp.shell.currentWidget.node.querySelectorAll('.jp-OutputArea .widget-slider').length > 0
"""

WAIT_FOR_RUN = """
async () => {
  const panel = window.jupyterapp.shell.currentWidget;
  await panel.sessionContext.ready;
  panel.content.activeCellIndex = 0;  // as a reader who opens the chapter and runs it all
  await window.jupyterapp.commands.execute('notebook:run-all-cells');
  const cells = panel.content.widgets.filter(cell => cell.model.type === 'code');
  return cells.length;
}
"""

RUN_STATE = """
() => {
  const panel = window.jupyterapp.shell.currentWidget;
  const kernel = panel.sessionContext.session && panel.sessionContext.session.kernel;
  const cells = panel.content.widgets.filter(cell => cell.model.type === 'code');
  const pending = cells.filter(cell => cell.model.executionCount === null).length;
  const errors = [];
  for (const cell of cells) {
    for (const output of cell.model.outputs.toJSON()) {
      if (output.output_type === 'error') errors.push(output.ename + ': ' + output.evalue);
    }
  }
  return {status: kernel ? kernel.status : 'none', pending, errors};
}
"""

FIRST_WIDGET_OUTPUT = """
() => {
  const notebook = window.jupyterapp.shell.currentWidget.node;
  const slider = notebook.querySelector('.widget-slider');
  if (!slider) return null;
  const handle = slider.querySelector('.noUi-handle');
  if (handle) handle.setAttribute('data-first-slider-handle', 'yes');
  const box = slider.closest('.widget-vbox') || slider.closest('.jp-OutputArea-output');
  const output = box.querySelector('.widget-output');
  return output ? output.innerHTML : box.innerHTML;
}
"""


SHUT_DOWN = """
async () => {
  const panel = window.jupyterapp.shell.currentWidget;
  await panel.sessionContext.shutdown();
}
"""


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    jupyter = venv_bin("jupyter")
    assert jupyter, "jupyter is not installed in the book's environment"
    home = tmp_path_factory.mktemp("lab")
    notebooks = home / "book"
    shutil.copytree(
        BOOK,
        notebooks,
        ignore=shutil.ignore_patterns(".ipynb_checkpoints", "_build"),
    )
    for chapter in CHAPTERS:
        shutil.copy(NOTEBOOKS / chapter, notebooks / chapter)
    token, port = secrets.token_hex(16), free_port()
    env = dict(os.environ)
    for name in (
        "JUPYTER_CONFIG_DIR",
        "JUPYTER_DATA_DIR",
        "JUPYTER_RUNTIME_DIR",
        "IPYTHONDIR",
    ):
        env[name] = str(home / name.lower())
    # As `make lab`: trust the chapters (a signature in JUPYTER_DATA_DIR; the files do not change).
    subprocess.run(
        [jupyter, "trust", *CHAPTERS],
        cwd=notebooks,
        env=env,
        check=True,
        capture_output=True,
    )
    process = subprocess.Popen(
        [
            jupyter,
            "lab",
            "--allow-root",
            "--no-browser",
            f"--config={LAB_CONFIG}",
            f"--IdentityProvider.token={token}",
            "--ServerApp.ip=127.0.0.1",
            f"--ServerApp.port={port}",
            "--ServerApp.port_retries=0",
            f"--ServerApp.root_dir={notebooks}",
            "--LabApp.expose_app_in_browser=True",
            "--ContentsManager.allow_hidden=False",
        ],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=open(home / "lab.log", "w"),
    )
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while True:
        try:
            with urllib.request.urlopen(
                f"{base}/api/status?token={token}", timeout=2
            ) as response:
                json.load(response)
                break
        except OSError:
            if process.poll() is not None or time.monotonic() > deadline:
                process.kill()
                pytest.fail(
                    f"JupyterLab did not start; log:\n{(home / 'lab.log').read_text()[-3000:]}"
                )
            time.sleep(0.3)
    yield base, token
    process.terminate()
    try:
        process.wait(timeout=15)
    except subprocess.TimeoutExpired:
        process.kill()


def test_file_browser_shows_the_book_and_no_news_pop_up_and_back_matter_renders(
    lab, browser
):
    base, token = lab
    page = browser.new_page(viewport={"width": 1280, "height": 1000})
    page.goto(f"{base}/lab?reset&token={token}", wait_until="domcontentloaded")
    page.wait_for_function(
        "() => document.querySelectorAll('.jp-DirListing-itemName').length > 0",
        timeout=60_000,
    )
    page.wait_for_timeout(
        3000
    )  # the news question, when enabled, pops up within a second or two
    names = page.evaluate(
        "() => [...document.querySelectorAll('.jp-DirListing-itemName')].map(node => node.textContent)"
    )
    assert sorted(names) == sorted(CHAPTERS + BACK_MATTER)
    assert "_sphinx" not in names and not any(
        name.startswith("_") for name in names
    )
    body = page.evaluate("() => document.body.innerText")
    assert "Jupyter news" not in body
    assert not page.evaluate(
        "() => window.jupyterapp.isPluginActivated('@jupyterlab/apputils-extension:announcements')"
    )
    assert page.evaluate(
        "() => window.jupyterapp.isPluginActivated('attnbook-lab:book-references')"
    )
    shots = SCREENSHOTS / "lab"
    shots.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(shots / "file_browser.png"))

    # The back matter opens rendered (Markdown Preview, by jupyterlab-myst), links titled.
    stems = [Path(name).stem for name in CHAPTERS + BACK_MATTER]
    for name in BACK_MATTER:
        page.locator(".jp-DirListing-itemName", has_text=name).dblclick()
        links = """() => [...window.jupyterapp.shell.currentWidget.node.querySelectorAll('.myst a.link')]
                           .map(link => link.textContent.trim())"""
        try:  # rendered, and the linked documents' titles (fetched asynchronously) in place
            page.wait_for_function(
                f"""() => window.jupyterapp.shell.currentWidget.title.label === {json.dumps(name)}
                       && window.jupyterapp.shell.currentWidget.node.querySelector('.myst h1')
                       && !({links})().some(text => {json.dumps(stems)}.includes(text))""",
                timeout=30_000,
            )
        except PlaywrightTimeout:
            pass  # the assertions below say what is missing
        text = page.evaluate(
            "() => (window.jupyterapp.shell.currentWidget.node.querySelector('.myst') || {}).textContent"
        )
        assert text, f"{name}: not rendered by jupyterlab-myst"
        assert RAW_MYST.findall(text) == [], (
            f"{name}: raw MyST in JupyterLab's preview"
        )
        shown = page.evaluate(links)
        assert not set(shown) & set(stems), (
            f"{name}: links shown as file names: {shown}"
        )
    page.close()


def figure_names(chapter: str) -> list:
    """The chapter's figures in order: the names in their cells' mystnb.figure metadata."""
    nb = json.loads((NOTEBOOKS / chapter).read_text())
    return [
        cell["metadata"]["mystnb"]["figure"]["name"]
        for cell in nb["cells"]
        if cell["cell_type"] == "code"
        and "name" in cell["metadata"].get("mystnb", {}).get("figure", {})
    ]


def expected_figure_refs(chapter: str) -> list:
    """The chapter's {numref} roles in order, as the HTML book numbers them: "Fig. C.k"."""
    nb = json.loads((NOTEBOOKS / chapter).read_text())
    names = figure_names(chapter)
    return [
        f"Fig. {int(chapter[:2])}.{names.index(label) + 1}"
        for cell in nb["cells"]
        if cell["cell_type"] == "markdown"
        for label in re.findall(
            r"\{numref\}`([^`]+)`", "".join(cell["source"])
        )
    ]


def cited_keys(chapter: str) -> int:
    """How many keys the chapter's {cite} roles name (each is one rendered citation)."""
    notebook = json.loads((NOTEBOOKS / chapter).read_text())
    roles = re.findall(
        r"\{cite(?::[pt])?\}`([^`]+)`",
        "".join(
            "".join(cell["source"])
            for cell in notebook["cells"]
            if cell["cell_type"] == "markdown"
        ),
    )
    return sum(len(role.split(",")) for role in roles)


def check_markdown_before_run(page, chapter: str, shots: Path):
    """Rendered MyST, numbered figure references, collapsed solutions, the saved explorer; screenshot."""
    try:
        page.wait_for_function(MARKDOWN_RENDERED, timeout=60_000)
    except PlaywrightTimeout:
        pass  # the assertions below say what is missing
    state = page.evaluate(MARKDOWN_STATE)
    assert None not in state["texts"], (
        f"{chapter}: markdown cells not rendered by jupyterlab-myst"
    )
    raw = [
        match.group(0)
        + " in: "
        + text[max(0, match.start() - 40) : match.end() + 40]
        for text in state["texts"]
        for match in RAW_MYST.finditer(text)
    ]
    assert raw == [], f"{chapter}: raw MyST in rendered markdown: {raw[:5]}"
    assert state["unresolved"] == [], (
        f"{chapter}: unresolved references shown as bare labels: {state['unresolved']}"
    )
    assert state["figureRefs"] == expected_figure_refs(chapter)
    assert len(state["citations"]) == cited_keys(chapter), (
        f"{chapter}: citations not written as the HTML book does: {state['citations']}"
    )
    assert all(
        # authors may hold digits ("bloc97"), the year stands apart
        re.fullmatch(r"\(?[^()]+?(, | \()\d{4}[a-z]?\)?(; )?", text)
        for text in state["citations"]
    ), state["citations"]
    assert state["documentLinks"] and not any(
        re.fullmatch(r"\d\d_\w+", text) for text in state["documentLinks"]
    ), (
        f"{chapter}: chapter links without their titles: {state['documentLinks']}"
    )
    assert state["dropdowns"] > 0 and state["openDropdowns"] == 0, (
        f"{chapter}: solution dropdowns open: {state}"
    )
    assert state["hidden"] > 0 and state["openHidden"] == [], (
        f"{chapter}: hidden cells shown open in JupyterLab (cells {state['openHidden']}); run tests/tools/collapse_solutions.py"
    )
    page.wait_for_function(SAVED_EXPLORER_SHOWN, timeout=30_000)

    # One rendered cross-reference: the first figure reference, then a click on it shows the figure.
    reference = page.locator(
        ".jp-MarkdownCell .myst span.attnbook-ref[data-attnbook-ref=figure]"
    ).first
    reference.scroll_into_view_if_needed()
    cell = (
        page.locator(".jp-MarkdownCell")
        .filter(
            has=page.locator("span.attnbook-ref[data-attnbook-ref=figure]")
        )
        .first
    )
    cell.screenshot(path=str(shots / f"{Path(chapter).stem}_reference.png"))
    text = reference.text_content()
    reference.click()
    active = page.evaluate("""() => {
      const notebook = window.jupyterapp.shell.currentWidget.content;
      const meta = notebook.activeCell.model.getMetadata('mystnb');
      return meta && meta.figure ? meta.figure.name : null;
    }""")
    assert re.fullmatch(rf"Fig\. {int(chapter[:2])}\.\d+", text), text
    assert active == figure_names(chapter)[int(text.rsplit(".", 1)[1]) - 1], (
        f"{chapter}: {text} showed {active}"
    )


# The chapters are split between this file and test_lab_later_chapters.py,
# each with its own Lab server, so that `make test`'s parallel workers share
# the suite's longest test; together the two halves cover every chapter.
FIRST_HALF = CHAPTERS[: len(CHAPTERS) // 2]


@pytest.mark.parametrize("chapter", FIRST_HALF)
def test_chapter_runs_and_its_explorer_reacts(chapter, lab, browser):
    run_chapter_and_move_its_explorer(chapter, lab, browser)


def run_chapter_and_move_its_explorer(chapter, lab, browser):
    """Run every cell of ``chapter`` in Lab, assert no cell raised, press
    ArrowRight on its first slider and assert that the figure changed."""
    base, token = lab
    page = browser.new_page(viewport={"width": 1280, "height": 1000})
    page_errors = []
    page.on("pageerror", lambda error: page_errors.append(str(error)))
    shots = SCREENSHOTS / "lab"
    shots.mkdir(parents=True, exist_ok=True)
    # ?reset: a fresh workspace, so earlier chapters' tabs are not restored next to this one.
    page.goto(
        f"{base}/lab/tree/{chapter}?reset&token={token}",
        wait_until="domcontentloaded",
    )
    page.wait_for_function(
        "() => window.jupyterapp && window.jupyterapp.shell.currentWidget "
        "&& window.jupyterapp.shell.currentWidget.sessionContext",
        timeout=60_000,
    )
    check_markdown_before_run(page, chapter, shots)
    page.evaluate(WAIT_FOR_RUN)
    deadline = time.monotonic() + RUN_TIMEOUT_MS / 1000
    while True:
        state = page.evaluate(RUN_STATE)
        if state["errors"] or (
            state["pending"] == 0 and state["status"] == "idle"
        ):
            break
        assert time.monotonic() < deadline, (
            f"{chapter} did not finish running: {state}"
        )
        page.wait_for_timeout(500)
    assert state["errors"] == [], f"{chapter} raised: {state['errors']}"

    page.wait_for_function(
        f"() => ({FIRST_WIDGET_OUTPUT})() !== null", timeout=30_000
    )
    before = page.evaluate(FIRST_WIDGET_OUTPUT)
    handle = page.locator("[data-first-slider-handle=yes]")
    handle.scroll_into_view_if_needed()
    handle.focus()
    page.keyboard.press("ArrowRight")
    page.wait_for_function(
        f"() => ({FIRST_WIDGET_OUTPUT})() !== {json.dumps(before)}",
        timeout=30_000,
    )
    page.screenshot(path=str(shots / f"{Path(chapter).stem}.png"))
    page.evaluate(SHUT_DOWN)
    page.close()
    assert page_errors == [], (
        f"JavaScript errors in JupyterLab: {page_errors[:3]}"
    )


# Code blocks as jupyterlab-myst renders them (highlight.js spans classed
# hljs-*), coloured by lab/labextensions/attnbook-lab with the code editor's
# colours: for each python block, where it is, the distinct colours of its
# tokens, the colour of `def`/`return`, and that of plain text.
LISTING_COLOURS = r"""
() => [...window.jupyterapp.shell.currentWidget.node.querySelectorAll('.myst pre code.language-python')]
  .map(code => {
    const colour = node => getComputedStyle(node).color;
    const spans = [...code.querySelectorAll('span')].filter(span => span.textContent.trim());
    const tokens = spans.filter(span => /\bhljs-/.test(span.className));
    const keyword = tokens.find(span => span.classList.contains('hljs-keyword')
                                        && /^(def|return)$/.test(span.textContent.trim()));
    // Plain text: a name outside any token (a span with no hljs-* class).
    const plain = spans.find(span => !span.className && !span.querySelector('span')
                                     && /[A-Za-z_]\w*/.test(span.textContent));
    return {
      where: code.closest('.jp-MarkdownCell') ? 'markdown cell' : code.closest('.jp-OutputArea') ? 'output' : 'other',
      colours: [...new Set(tokens.map(colour))],
      keyword: keyword ? colour(keyword) : null,
      plain: plain ? colour(plain) : null,
    };
  })
"""

MARKDOWN_LISTING = '''A fenced code block in a markdown cell:

```python
@property
def size(self, scale=None):
    """Its size."""
    return len(self.items) * 2  # doubled
```
'''


def chapter_with_listing():
    """The first chapter with a show_source listing (```python Markdown) in
    its saved outputs, or None."""
    for chapter in CHAPTERS:
        for cell in json.loads((NOTEBOOKS / chapter).read_text())["cells"]:
            for output in cell.get("outputs", []):
                if "```python" in "".join(
                    output.get("data", {}).get("text/markdown", "")
                ):
                    return chapter
    return None


def listing_notebook() -> dict:
    """A notebook: a fenced python block in a markdown cell, and a saved
    show_source output."""
    from attnbook import show_source

    listing = show_source(show_source)
    return {
        "nbformat": 4,
        "nbformat_minor": 5,
        "metadata": {
            "kernelspec": {
                "name": "python3",
                "display_name": "Python 3",
                "language": "python",
            }
        },
        "cells": [
            {
                "cell_type": "markdown",
                "id": "listing-markdown",
                "metadata": {},
                "source": MARKDOWN_LISTING,
            },
            {
                "cell_type": "code",
                "id": "listing-output",
                "execution_count": 1,
                # Trusted, so the server signs the notebook as it saves it
                # (as after a reader's own run): its Markdown output shows.
                "metadata": {"trusted": True},
                "source": "show_source(show_source)",
                "outputs": [
                    {
                        "output_type": "execute_result",
                        "execution_count": 1,
                        "metadata": {},
                        "data": {
                            "text/plain": repr(listing),
                            "text/markdown": listing._repr_markdown_(),
                        },
                    }
                ],
            },
        ],
    }


def contents_api(base, token, path, method, body=None):
    request = urllib.request.Request(
        f"{base}/api/contents/{path}?token={token}",
        method=method,
        data=None if body is None else json.dumps(body).encode(),
        headers={"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=30) as response:
        return response.status


@pytest.mark.parametrize("source", ["generated", "chapter"])
def test_code_listings_are_syntax_coloured(source, lab, browser):
    """show_source listings and ```python blocks of markdown cells in the
    colours of the code editor: 3 or more, keywords unlike plain names."""
    base, token = lab
    if source == "chapter":
        name = chapter_with_listing()
        if name is None:
            pytest.skip(
                "no chapter has a show_source listing in its outputs yet"
            )
    else:
        name = "listing_colours.ipynb"
        nb = listing_notebook()
        contents_api(
            base, token, name, "PUT", {"type": "notebook", "content": nb}
        )
    page = browser.new_page(viewport={"width": 1280, "height": 1000})
    try:
        page.goto(
            f"{base}/lab/tree/{name}?reset&token={token}",
            wait_until="domcontentloaded",
        )
        wanted = {"output"} | (
            {"markdown cell"} if source == "generated" else set()
        )
        try:
            page.wait_for_function(
                f"""() => window.jupyterapp && window.jupyterapp.shell.currentWidget
                       && window.jupyterapp.shell.currentWidget.node
                       && {json.dumps(sorted(wanted))}.every(where =>
                            ({LISTING_COLOURS})().some(block => block.where === where
                                                         && block.colours.length >= 3))""",
                timeout=60_000,
            )
        except PlaywrightTimeout:
            pass  # the assertions below say what is missing
        blocks = page.evaluate(LISTING_COLOURS)
        shots = SCREENSHOTS / "lab"
        shots.mkdir(parents=True, exist_ok=True)
        listing = page.locator(".jp-OutputArea .myst pre").first
        if listing.count():
            listing.scroll_into_view_if_needed()
            listing.screenshot(path=str(shots / f"listing_{source}.png"))
    finally:
        page.close()
        if source == "generated":
            contents_api(base, token, name, "DELETE")
    assert {block["where"] for block in blocks} >= wanted, (
        f"{name}: no rendered python code block in {wanted - {b['where'] for b in blocks}}"
    )
    # Every listing (a chapter's markdown cells may hold short blocks of few
    # colours).
    for block in blocks:
        if block["where"] not in wanted:
            continue
        assert len(block["colours"]) >= 3, (
            f"{name}: a python block in a {block['where']} has token colours {block['colours']}"
        )
        assert block["keyword"] and block["plain"], (
            f"{name}: no def/return or no plain name in a {block['where']}: {block}"
        )
        assert block["keyword"] != block["plain"], (
            f"{name}: def/return coloured as plain names in a {block['where']}: {block}"
        )
