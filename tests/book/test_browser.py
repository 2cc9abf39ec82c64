"""The built HTML book in a real headless Chromium: every page, fully offline.

For each page: the math is typeset by the locally served MathJax, every image has
loaded, saved widgets are rendered by the locally served ipywidgets manager, no
request leaves 127.0.0.1, and no JavaScript error is raised. Every figure outside the
widgets (cell output images) is sharp and unshrunk: its PNG is twice as wide as it is shown
(device pixel ratio 2) and it is shown at its declared 1x width, not narrowed by the column.
A screenshot of each page goes to _build/screenshots/ for a person to look at.
On every chapter page at 1280 px, no code block (cell input, output or listing) scrolls sideways.
"""

import json
from pathlib import Path

import pytest

from conftest import ROOT, toc_documents

pytestmark = pytest.mark.browser


def toc_pages():
    """Every page of the book, from _toc.yml, plus Sphinx's own index and search pages."""
    return [f"{name}.html" for name in toc_documents()] + [
        "genindex.html",
        "search.html",
    ]


PAGES = toc_pages()
RESULTS = {}

CHECK_PAGE = """
async () => {
  const closed = Array.from(document.querySelectorAll('details:not([open])'));
  closed.forEach(d => { d.open = true; });  // figures in hidden solutions get laid out too
  for (const img of Array.from(document.images)) {
    img.loading = 'eager';
    img.scrollIntoView();
    try { await img.decode(); } catch (e) {}
  }
  const figures = Array.from(document.querySelectorAll('.cell_output img'))
    .filter(i => !i.closest('.jupyter-widgets, .widget-output'))
    .map(i => {
      const figure = i.closest('figure');
      const caption = figure && figure.querySelector('figcaption');
      return {
        image: i.getAttribute('src').split('/').pop().slice(0, 16),
        caption: caption ? caption.textContent.trim().slice(0, 50) : '',
        natural: i.naturalWidth,
        shown: i.clientWidth,
        declared: parseFloat(i.getAttribute('width') || i.style.width) || null,
      };
    });
  closed.forEach(d => { d.open = false; });
  window.scrollTo(0, 0);
  const maths = Array.from(document.querySelectorAll('.math'));
  return {
    math: maths.length,
    typeset: maths.filter(m => m.querySelector('mjx-container')).length,
    raw_tex: maths.filter(m => !m.querySelector('mjx-container') && /\\\\\\(|\\\\\\[|\\$\\$/.test(m.textContent)).length,
    images: document.images.length,
    broken_images: Array.from(document.images).filter(i => !(i.complete && i.naturalWidth > 0)).map(i => i.src),
    widget_views: document.querySelectorAll('script[type="application/vnd.jupyter.widget-view+json"]').length,
    widgets: document.querySelectorAll('.jupyter-widgets').length,
    sliders: document.querySelectorAll('.widget-slider, .widget-hslider').length,
    widget_images: document.querySelectorAll('.jupyter-widgets img, .widget-output img').length,
    figures,
  };
}
"""


def figure_problem(page_path, figure, tolerance_px=3):
    """What is wrong with one figure measured in the page ('' if nothing): 2x and unshrunk."""
    where = f"{page_path}: image {figure['image']}... ({figure['caption'] or 'no caption'})"
    natural, shown, declared = (
        figure["natural"],
        figure["shown"],
        figure["declared"],
    )
    if declared is None:
        return f"{where}: no declared width (width attribute or style); its notebook output lacks width metadata"
    if abs(shown - declared) > 1:
        return f"{where}: shown {shown} px wide, declared {declared:g} px (shrunk by the column?)"
    if abs(natural - 2 * shown) > tolerance_px:
        return f"{where}: PNG {natural} px wide shown at {shown} px, not 2x"
    return ""


def test_figure_problem_names_the_page_and_the_image():
    sharp = {
        "image": "abc",
        "caption": "Fig. 1.1 x",
        "natural": 1122,
        "shown": 561,
        "declared": 561.0,
    }
    assert figure_problem("book/01.html", sharp) == ""
    shrunk = {**sharp, "natural": 1344, "shown": 600, "declared": 700.0}
    assert (
        "book/01.html: image abc... (Fig. 1.1 x): shown 600 px wide, declared 700"
        in figure_problem("book/01.html", shrunk)
    )
    blurred = {**sharp, "natural": 561}
    assert "PNG 561 px wide shown at 561 px, not 2x" in figure_problem(
        "book/01.html", blurred
    )
    assert "no declared width" in figure_problem(
        "book/01.html", {**sharp, "declared": None}
    )


@pytest.mark.parametrize("page_path", PAGES)
def test_page_renders_offline(page_path, browser, book_server, screenshot_dir):
    assert (ROOT / "_build" / "html" / page_path).exists(), (
        f"{page_path} was not built"
    )
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    requests, errors, failed = [], [], []
    page.on("request", lambda request: requests.append(request.url))
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.on("requestfailed", lambda request: failed.append(request.url))
    page.goto(f"{book_server}/{page_path}", wait_until="networkidle")

    html = page.content()
    has_math = 'class="math' in html
    if has_math:
        page.wait_for_selector(
            "mjx-container", state="attached", timeout=20_000
        )
    if "application/vnd.jupyter.widget-state+json" in html:
        page.wait_for_selector(
            ".jupyter-widgets", state="attached", timeout=20_000
        )
        page.wait_for_timeout(500)
    found = page.evaluate(CHECK_PAGE)
    page.wait_for_load_state("networkidle")
    name = Path(page_path).with_suffix("").as_posix().replace("/", "__")
    page.screenshot(path=str(screenshot_dir / f"{name}.png"), full_page=True)
    page.close()

    outside = [
        url
        for url in requests
        if not url.startswith((book_server, "data:", "blob:", "about:"))
    ]
    figures = found.pop("figures")
    RESULTS[page_path] = {
        **found,
        "figures": len(figures),
        "requests": len(requests),
        "outside_requests": len(outside),
    }
    assert outside == [], f"requests left 127.0.0.1: {outside[:5]}"
    assert failed == [], f"requests failed: {failed[:5]}"
    assert errors == [], f"page errors: {errors[:3]}"
    assert found["broken_images"] == [], (
        f"images did not load: {found['broken_images'][:3]}"
    )
    blurred = [
        problem
        for figure in figures
        if (problem := figure_problem(page_path, figure))
    ]
    assert blurred == [], (
        "figures not sharp at 2x or shrunk by the column:\n"
        + "\n".join(blurred)
    )
    if page_path.startswith("book/") and page_path[5:7].isdigit():
        assert figures, f"{page_path}: no figure found in the cell outputs"
    if has_math:
        assert found["typeset"] == found["math"] > 0, (
            f"only {found['typeset']} of {found['math']} math elements typeset"
        )
    if found["widget_views"]:
        assert found["widgets"] >= found["widget_views"], (
            "saved widgets were not rendered"
        )
        assert found["sliders"] >= 1 and found["widget_images"] >= 1, (
            f"widget controls or figure missing: {found}"
        )


def test_every_chapter_page_was_checked(screenshot_dir):
    """Write the totals for the record (pages, math elements, outside requests)."""
    checked = [page for page in PAGES if page in RESULTS]
    summary = {
        "pages": len(checked),
        "math_elements": sum(RESULTS[p]["math"] for p in checked),
        "images": sum(RESULTS[p]["images"] for p in checked),
        "widgets": sum(RESULTS[p]["widgets"] for p in checked),
        "requests": sum(RESULTS[p]["requests"] for p in checked),
        "outside_requests": sum(
            RESULTS[p]["outside_requests"] for p in checked
        ),
        "per_page": RESULTS,
    }
    (screenshot_dir / "summary.json").write_text(json.dumps(summary, indent=1))
    print({key: value for key, value in summary.items() if key != "per_page"})
    assert len(checked) == len(PAGES), (
        f"pages not checked: {sorted(set(PAGES) - set(checked))}"
    )
    assert summary["outside_requests"] == 0


CHAPTER_PAGES = [
    page for page in PAGES if page.startswith("book/") and page[5:7].isdigit()
]

# Every visible code block that scrolls sideways (hidden solutions opened), with its widest line.
WIDE_CODE = """
() => {
  document.querySelectorAll('details:not([open])').forEach(d => { d.open = true; });
  const shown = Array.from(document.querySelectorAll('pre')).filter(pre => pre.getClientRects().length > 0);
  const wide = shown.filter(pre => pre.scrollWidth > pre.clientWidth).map(pre => {
    const widest = pre.textContent.split('\\n').reduce((a, b) => (b.length > a.length ? b : a), '');
    return {line: widest.slice(0, 60), length: widest.length};
  });
  return {shown: shown.length, wide};
}
"""


def wide_code_message(page_path, found, first=5):
    """The failure message: the page, how many code blocks scroll sideways, the first few widest lines."""
    lines = [
        f"{page_path}: {len(found['wide'])} of {found['shown']} code blocks scroll sideways at 1280 px"
    ]
    lines += [
        f"  {block['length']} characters: {block['line']!r}"
        for block in found["wide"][:first]
    ]
    return "\n".join(lines)


def test_wide_code_message_names_the_page_and_the_lines():
    found = {
        "shown": 9,
        "wide": [{"line": "x = 1  # " + "a" * 51, "length": 95}] * 7,
    }
    message = wide_code_message("book/01.html", found).splitlines()
    assert (
        message[0]
        == "book/01.html: 7 of 9 code blocks scroll sideways at 1280 px"
    )
    assert message[1] == "  95 characters: " + repr("x = 1  # " + "a" * 51)
    assert len(message) == 6


@pytest.mark.parametrize("page_path", CHAPTER_PAGES)
def test_code_does_not_scroll_sideways(page_path, browser, book_server):
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    page.goto(f"{book_server}/{page_path}", wait_until="networkidle")
    if (
        "application/vnd.jupyter.widget-state+json" in page.content()
    ):  # widget outputs lay out too
        page.wait_for_selector(
            ".jupyter-widgets", state="attached", timeout=20_000
        )
    found = page.evaluate(WIDE_CODE)
    page.close()
    assert found["shown"] > 0, f"{page_path}: no code block found"
    if found["wide"]:
        pytest.fail(wide_code_message(page_path, found), pytrace=False)
