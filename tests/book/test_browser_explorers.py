"""Every explorer moves in the built HTML book, with no kernel, and shows the frame Python draws.

For each chapter page with an explorer, in headless Chromium: every control is moved one
step with the keyboard (arrow keys on sliders and menus, Enter on a button); after each
move the picture must change, be sharp (twice as many pixels as it is shown with) and
match, pixel for pixel up to antialiasing, the frame that ``attnbook`` draws in this
process for the values the controls now show. Every frame fits the book's column and
its smallest text is at least 8 px (``attnbook.display.figures.MIN_TEXT_PX``). The page must make no request to any
other host, and its own content (its HTML with the embedded widget state, and its images;
not the shared scripts and styles under ``_static/``) must weigh at most 4 MB.
"""

import base64
import io
import os
import sys
from functools import lru_cache

import numpy as np
import pytest
from PIL import Image

from attnbook.display.figures import BOOK_COLUMN_PX, MIN_TEXT_PX

from conftest import ROOT

pytestmark = pytest.mark.browser

PAGE_BUDGET_BYTES = 4_000_000
TOLERANCE = 40  # per channel, of 255: antialiasing (see tests/_pixels.py)
MAX_DIFFERING = 0.002  # fraction of pixels

# Chapter -> (widget module, the explorer call in the chapter). The call must appear verbatim
# in the chapter's explorer cell (checked below), so the two cannot drift apart.
EXPLORERS = {
    "01_attention_basics": (
        "basics",
        "kernel_regression_explorer(bandwidth=0.3, n_train=50)",
    ),
    "02_scoring_functions": (
        "scoring",
        "scoring_explorer(dim=64, scaled=True, temperature=1.0)",
    ),
    "03_soft_and_hard_attention": (
        "soft_hard",
        "soft_hard_explorer(angle=60.0, length=3.0)",
    ),
    "04_key_value_multihead": (
        "multihead",
        "multihead_explorer(num_heads=2, head=1)",
    ),
    "05_seq2seq_attention": (
        "seq2seq",
        'seq2seq_explorer("Monday, May 3, 1999")',
    ),
    "06_pointer_networks": ("pointer", 'pointer_explorer("20, 5, 10")'),
    "07_self_attention": (
        "self_attention",
        'self_attention_explorer("the cat sat on the mat", token=0)',
    ),
    "08_positional_encoding": (
        "positional",
        "positional_explorer(position=10, delta=5, dim=16, base=10000.0)",
    ),
    "09_transformer_encoder": (
        "transformer",
        'cls_attention_explorer(model, text="cdAefgBhij", layer=0, head=1)',
    ),
    "10_transformer_decoder": (
        "decoder",
        'decoder_explorer(translator, text="Monday, May 3, 1999", step=1, layer=1)',
    ),
    "11_attention_at_scale": (
        "chunked",
        "chunked_explorer(n=4096, chunk_size=512)",
    ),
    "12_language_model": (
        "language_model",
        'decoding_explorer(lm, prompt="If the file does not ex", temperature=1.0)',
    ),
    "13_attention_at_inference": ("kv_cache", "kv_cache_explorer()"),
    "14_what_heads_learn": (
        "induction",
        "induction_training_explorer(models, induction_history, step=700)",
    ),
    "15_long_context_positions": ("long_context", "rope_scaling_explorer()"),
    "16_attention_as_a_gpu_kernel": (
        "gpu_kernels",
        'tiles_explorer(mask="causal", block=64, n=1024)',
    ),
    "17_fixed_size_memory": (
        "fixed_memory",
        "memory_explorer(key_dim=32, gate=1.0, pairs=32)",
    ),
    "18_recall_and_hybrids": (
        "recall",
        'recall_explorer(model="linear", key_dim=16)',
    ),
}


def _chapter_names():
    return sorted(
        path.stem for path in (ROOT / "book").glob("[0-9][0-9]_*.ipynb")
    )


def test_every_chapter_has_its_explorer_listed():
    import nbformat

    assert sorted(EXPLORERS) == _chapter_names()
    for chapter, (_, call) in EXPLORERS.items():
        notebook = nbformat.read(
            ROOT / "book" / f"{chapter}.ipynb", as_version=4
        )
        sources = [
            cell.source for cell in notebook.cells if cell.cell_type == "code"
        ]
        assert any(call in source for source in sources), (
            f"{chapter}: no cell calls {call}"
        )


def _arguments(module_name: str) -> dict:
    """What the chapter built before its explorer cell, for the explorers that need it."""
    if module_name == "transformer":
        from attnbook.tasks.order_classifier import pretrained_order_classifier

        model, _ = pretrained_order_classifier()
        return {"model": model}
    if module_name == "decoder":
        from attnbook.tasks.date_transformer import pretrained_date_transformer

        return {"translator": pretrained_date_transformer()}
    if module_name == "language_model":
        from attnbook.tasks.language_model import pretrained_language_model

        return {"lm": pretrained_language_model()}
    if module_name == "induction":
        from attnbook.tasks.induction import pretrained_induction_models

        models, induction_history = pretrained_induction_models()
        return {"models": models, "induction_history": induction_history}
    return {}


@lru_cache(maxsize=None)
def frame_grid(chapter: str):
    """The chapter's explorer built from frames in this process, as ``make notebooks`` builds it: its ``FrameGrid``."""
    import importlib

    import matplotlib

    matplotlib.use("Agg")
    module_name, call = EXPLORERS[chapter]
    module = importlib.import_module(f"attnbook.widgets.{module_name}")
    saved = os.environ.get("ATTNBOOK_EXPLORER_FRAMES")
    os.environ["ATTNBOOK_EXPLORER_FRAMES"] = "1"
    try:
        box = eval(call, {**vars(module), **_arguments(module_name)})  # noqa: S307 - the chapter's own call
    finally:
        if saved is None:
            os.environ.pop("ATTNBOOK_EXPLORER_FRAMES")
        else:
            os.environ["ATTNBOOK_EXPLORER_FRAMES"] = saved
    return box.frame_grid


def _rgb(png: bytes) -> np.ndarray:
    return np.asarray(
        Image.open(io.BytesIO(png)).convert("RGBA"), dtype=np.int16
    )


def differing_fraction(a: bytes, b: bytes) -> float:
    first, second = _rgb(a), _rgb(b)
    assert first.shape == second.shape, (
        f"pictures of different sizes: {first.shape} vs {second.shape}"
    )
    return float((np.abs(first - second).max(axis=-1) > TOLERANCE).mean())


STATE = """
async (box) => {
  const visible = el => el.offsetParent !== null;
  const controls = Array.from(box.querySelectorAll('.attnbook-control')).filter(visible).map(c => {
    const handle = c.querySelector('.noUi-handle');
    if (handle) return {kind: 'slider', index: Math.round(Number(handle.getAttribute('aria-valuenow'))),
                        last: Math.round(Number(handle.getAttribute('aria-valuemax')))};
    const select = c.querySelector('select');
    if (select) return {kind: 'menu', index: select.selectedIndex, last: select.options.length - 1};
    const buttons = Array.from(c.querySelectorAll('button'));
    return {kind: 'buttons', index: buttons.findIndex(b => b.classList.contains('mod-active')),
            last: buttons.length - 1};
  });
  const images = Array.from(box.querySelectorAll('img.attnbook-frame')).filter(visible);
  const frames = [];
  for (const img of images) {
    await img.decode().catch(() => {});
    const bytes = new Uint8Array(await (await fetch(img.src)).arrayBuffer());
    let text = '';
    for (let i = 0; i < bytes.length; i += 0x8000) text += String.fromCharCode.apply(null, bytes.subarray(i, i + 0x8000));
    frames.push({png: btoa(text), natural: [img.naturalWidth, img.naturalHeight],
                 shown: [img.clientWidth, img.clientHeight], width: Number(img.getAttribute('width'))});
  }
  return {controls, frames};
}
"""


def _focus_and_press(page, box, position: int, state: dict) -> None:
    """Move the ``position``-th visible control one step (back if it is at its last value)."""
    control = state["controls"][position]
    forward = control["index"] < control["last"]
    handle = box.evaluate_handle(
        """(box, [position, kind, target]) => {
             const c = Array.from(box.querySelectorAll('.attnbook-control')).filter(e => e.offsetParent !== null)[position];
             if (kind === 'slider') return c.querySelector('.noUi-handle');
             if (kind === 'menu') return c.querySelector('select');
             return c.querySelectorAll('button')[target];
           }""",
        [position, control["kind"], control["index"] + (1 if forward else -1)],
    )
    handle.as_element().focus()
    if control["kind"] == "slider":
        key = "ArrowRight" if forward else "ArrowLeft"
    elif control["kind"] == "menu":
        key = "ArrowDown" if forward else "ArrowUp"
    else:
        key = "Enter"
    handle.as_element().press(key)


def _values(grid, state: dict) -> dict:
    """The control values the page shows, from each visible control's index."""
    values = {}
    for (name, choices), control in zip(grid.grid.items(), state["controls"]):
        values[name] = choices.pairs(values)[control["index"]][1]
    return values


def _indices(state: dict) -> tuple:
    return tuple(control["index"] for control in state["controls"])


def _chapters_with_pages():
    return [
        c
        for c in EXPLORERS
        if (ROOT / "_build" / "html" / "book" / f"{c}.html").exists()
    ] or list(EXPLORERS)


@pytest.mark.parametrize("chapter", _chapters_with_pages())
def test_explorer_moves_without_a_kernel(chapter, browser, book_server):
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    requests = []
    page.on("request", lambda request: requests.append(request.url))
    page.goto(f"{book_server}/book/{chapter}.html", wait_until="networkidle")
    page.wait_for_selector(
        ".attnbook-explorer img.attnbook-frame",
        state="attached",
        timeout=30_000,
    )
    boxes = page.query_selector_all(".attnbook-explorer")
    assert len(boxes) == 1, (
        f"{chapter}: {len(boxes)} explorers built from frames (expected 1)"
    )
    box = boxes[0]
    box.scroll_into_view_if_needed()
    grid = frame_grid(chapter)
    widths = {width for _, width, _ in grid.frames().values()}
    assert max(widths) <= BOOK_COLUMN_PX, (
        f"{chapter}: frames {sorted(widths)} px wide, column {BOOK_COLUMN_PX}"
    )
    assert grid.smallest_text >= MIN_TEXT_PX, (
        f"{chapter}: text of {grid.smallest_text:.1f} px in a frame"
    )

    state = box.evaluate(STATE)
    assert len(state["controls"]) == len(grid.grid), (
        f"{chapter}: controls {state['controls']}"
    )
    moves = []
    for position in range(len(grid.grid)):
        before = state
        _focus_and_press(page, box, position, before)
        page.wait_for_timeout(150)
        state = box.evaluate(STATE)
        name = list(grid.grid)[position]
        assert (
            state["controls"][position]["index"]
            != before["controls"][position]["index"]
        ), f"{chapter}: the key did not move {name!r}"
        (frame,) = state["frames"]
        shown = base64.b64decode(frame["png"])
        assert shown != base64.b64decode(before["frames"][0]["png"]), (
            f"{chapter}: moving {name!r} changed nothing"
        )
        values = _values(grid, state)
        expected, width, height = grid.frames()[_indices(state)]
        fraction = differing_fraction(shown, expected)
        assert fraction < MAX_DIFFERING, (
            f"{chapter}, {values}: {fraction:.2%} of pixels differ from Python's frame"
        )
        sizes = {key: frame[key] for key in ("shown", "natural", "width")}
        # Shown at its 1x size (the height may round the other way), with twice the pixels.
        assert (
            frame["shown"][0] == width == frame["width"]
            and abs(frame["shown"][1] - height) <= 1
        ), f"{chapter}: {sizes}, drawn for {width}x{height}"
        assert (
            abs(frame["natural"][0] - 2 * width) <= 1
            and abs(frame["natural"][1] - 2 * height) <= 1
        ), (
            f"{chapter}: frame not drawn at 2x: {sizes}, drawn for {width}x{height}"
        )
        moves.append((name, values))
    assert len(moves) == len(grid.grid)

    weight = page.evaluate(
        """() => {
             const own = performance.getEntriesByType('resource').filter(r => !r.name.includes('/_static/')
                                                                   && r.name.startsWith(location.origin));
             const nav = performance.getEntriesByType('navigation')[0];
             return {page: nav.decodedBodySize, resources: own.reduce((s, r) => s + r.decodedBodySize, 0),
                     names: own.map(r => r.name)};
           }"""
    )
    page.close()
    outside = [
        url
        for url in requests
        if not url.startswith((book_server, "data:", "blob:", "about:"))
    ]
    assert outside == [], f"{chapter}: requests to other hosts: {outside[:5]}"
    total = weight["page"] + weight["resources"]
    print(
        f"{chapter}: page {weight['page'] / 1e6:.2f} MB + images {weight['resources'] / 1e6:.2f} MB"
    )
    assert total <= PAGE_BUDGET_BYTES, (
        f"{chapter}: the page's own content is {total / 1e6:.2f} MB (budget 4 MB)"
    )


if __name__ == "__main__":  # pragma: no cover
    sys.exit(pytest.main([__file__, "-v"]))
