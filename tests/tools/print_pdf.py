"""Print the whole book as one PDF, offline: `make pdf` runs this.

1. Jupyter Book 1.x builds the book as a single HTML page (``--builder singlehtml``,
   warnings are errors) into ``<out dir>/site/``. Nothing is executed: the stored outputs are used.
2. That page is made printable: Sphinx's singlehtml builder writes the root document at
   ``book/intro.html`` with links relative to the output root, so the copy is written at the
   root, ``book.html`` (without the search index, which that builder does not write); myst-nb
   adds each notebook's saved widget state only to that notebook's own page, so the states of
   all chapters and the widget manager's scripts (as myst-nb recorded them in this build's
   environment) are added here; a print style sheet (``print.css``) hides the navigation and wraps code.
3. Debian's Chromium (driven by playwright, as the browser tests do) opens the page from a
   local server on 127.0.0.1, waits until MathJax has typeset every formula, every saved
   widget is rendered and every image is decoded, and prints it with a PDF outline
   (bookmarks) built from the headings: chapters at the top level, then sections.
   Any request to another host fails the run. Before printing, the page is laid out at the
   A4 text width to record every code block wider than it (cut at the margin on paper):
   ``wide_code`` in print.json, which tests/book/test_pdf.py checks.

Usage: python tests/tools/print_pdf.py [--out _build/pdf/attention-from-scratch.pdf]
"""

import argparse
import functools
import http.server
import io
import json
import pickle
import re
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(HERE.parent))
from conftest import CHROMIUM, CHROMIUM_ARGS, toc_documents  # noqa: E402  (one list of launch flags, one reading of _toc.yml)

DEFAULT_OUT = ROOT / "_build" / "pdf" / "attention-from-scratch.pdf"
WIDGET_STATE = "application/vnd.jupyter.widget-state+json"
PRINT_CSS = HERE / "print.css"

# Runs in the page before printing; returns what it found, for the checks below.
PREPARE = r"""
async () => {
  while (document.readyState !== 'complete') await new Promise(r => setTimeout(r, 100));
  // Widgets: the manager renders every saved view; wait until each view script has a widget.
  const views = document.querySelectorAll('script[type="application/vnd.jupyter.widget-view+json"]');
  for (let i = 0; i < 600; i++) {
    const rendered = Array.from(views).filter(v => v.parentElement.querySelector('.jupyter-widgets'));
    if (rendered.length === views.length) break;
    await new Promise(r => setTimeout(r, 100));
  }
  // Math: MathJax 3 typesets on start-up; typeset once more for anything added after (widget labels).
  await window.MathJax.startup.promise;
  await window.MathJax.typesetPromise();
  // Images, widget frames included: load and decode every one.
  for (const img of Array.from(document.images)) {
    img.loading = 'eager';
    try { await img.decode(); } catch (e) {}
  }
  // Exercises' solutions and other folded content: open, a PDF cannot be clicked.
  document.querySelectorAll('details').forEach(d => d.open = true);
  document.querySelectorAll('.toggle-hidden').forEach(e => e.classList.remove('toggle-hidden'));
  // The outline follows heading levels. Each document of the book sits inside the root
  // document's section one level down (chapters are h2): lift them one level, so chapters
  // are top-level bookmarks and their sections are under them.
  for (const anchor of document.querySelectorAll('span[id^="document-"]')) {
    const section = anchor.nextElementSibling;
    if (!section) continue;
    for (const h of Array.from(section.querySelectorAll('h2, h3, h4, h5, h6'))) {
      const lifted = document.createElement('h' + (Number(h.tagName[1]) - 1));
      for (const attr of Array.from(h.attributes)) lifted.setAttribute(attr.name, attr.value);
      lifted.classList.add('lifted-h' + h.tagName[1]);
      while (h.firstChild) lifted.appendChild(h.firstChild);
      h.replaceWith(lifted);
    }
    section.classList.add('book-document');
  }
  // The PDF outline takes each printed heading's text runs, joined without the spaces of
  // line breaks and without its math: give the outline each heading's own words, math as TeX.
  const tex = new Map();
  for (const item of window.MathJax.startup.document.math) tex.set(item.typesetRoot, item.math);
  const headings = Array.from(document.querySelectorAll('h1, h2, h3, h4, h5, h6'))
    .filter(h => h.getClientRects().length > 0)
    .map(h => {
      const copy = h.cloneNode(true);
      copy.querySelectorAll('.headerlink').forEach(e => e.remove());
      const live = h.querySelectorAll('mjx-container');
      copy.querySelectorAll('mjx-container').forEach((m, i) => m.replaceWith('$' + (tex.get(live[i]) || '') + '$'));
      return copy.textContent.replace(/\s+/g, ' ').trim();
    });
  const maths = Array.from(document.querySelectorAll('.math'));
  return {
    headings: headings,
    views: views.length,
    widgets: Array.from(views).filter(v => v.parentElement.querySelector('.jupyter-widgets')).length,
    // Pictures each explorer shows (a Stack of frames shows only its selected one).
    widget_frames: Array.from(views).map(v => Array.from(v.parentElement.querySelectorAll('img'))
      .filter(i => i.getClientRects().length > 0 && i.offsetWidth > 0).length),
    math: maths.length,
    typeset: maths.filter(m => m.querySelector('mjx-container')).length,
    images: document.images.length,
    broken_images: Array.from(document.images).filter(i => !(i.complete && i.naturalWidth > 0)).map(i => i.src),
    documents: document.querySelectorAll('.book-document').length,
  };
}
"""

# A4 less the left and right margins of page.pdf() below, in CSS pixels (96 per inch).
MARGIN_MM = 15
PRINT_WIDTH_PX = round((210 - 2 * MARGIN_MM) / 25.4 * 96)

# Every printed code block wider than the column (its text is cut on paper): which document
# (chapter) it is in, and its widest line. Runs after PREPARE has marked the documents. Each is
# then marked `too-wide`, which print.css wraps: unwrapped, it would widen the page and Chromium
# would shrink the whole book to fit it.
WIDE_CODE = """
() => {
  const shown = Array.from(document.querySelectorAll('pre')).filter(pre => pre.getClientRects().length > 0);
  const wide = shown.filter(pre => pre.scrollWidth > pre.clientWidth).map(pre => {
    const document_ = pre.closest('section.book-document');
    const heading = document_ && document_.querySelector('h1');
    const title = heading ? heading.textContent.replace(/[#¶]/g, '').trim() : '';
    const widest = pre.textContent.split('\\n').reduce((a, b) => (b.length > a.length ? b : a), '');
    return {document: title.slice(0, 60), line: widest.slice(0, 60), length: widest.length};
  });
  shown.filter(pre => pre.scrollWidth > pre.clientWidth).forEach(pre => pre.classList.add('too-wide'));
  return {code_blocks: shown.length, wide_code: wide};
}
"""

FOOTER = (
    '<div style="font-size:8px; width:100%; text-align:center; color:#555;">'
    '<span class="pageNumber"></span></div>'
)


def build_singlehtml(site: Path) -> Path:
    """The book as one HTML page (warnings are errors); returns the singlehtml folder."""
    jupyter_book = Path(sys.executable).with_name("jupyter-book")
    command = [
        str(jupyter_book),
        "build",
        "--builder",
        "singlehtml",
        "--path-output",
        str(site),
        "-W",
        "-n",
        "--keep-going",
        str(ROOT),
    ]
    subprocess.run(command, cwd=ROOT, check=True, stdout=subprocess.DEVNULL)
    return site / "_build" / "singlehtml"


def widget_head(singlehtml: Path) -> str:
    """Script tags for every chapter's saved widget state, then the widget manager's scripts:
    what myst-nb put on each chapter's own page, read from the same build (its environment)."""
    from myst_nb.sphinx_ import NbMetadataCollector

    with open(
        singlehtml.parent / ".doctrees" / "environment.pickle", "rb"
    ) as file:
        env = pickle.load(file)
    states, scripts = [], []
    for name in toc_documents():
        for uri, attributes in NbMetadataCollector.get_js_files(
            env, name
        ).values():
            if uri is None and attributes.get("type") == WIDGET_STATE:
                states.append(
                    f'<script type="{WIDGET_STATE}">{attributes["body"]}</script>'
                )
            elif uri is not None and uri not in scripts:
                scripts.append(uri)
    return "\n".join(
        states + [f'<script src="_static/{uri}"></script>' for uri in scripts]
    )


def printable_page(singlehtml: Path) -> Path:
    """Write book.html at the singlehtml root: widget states, manager scripts, print style."""
    source = singlehtml / f"{toc_documents()[0]}.html"
    html = source.read_text()
    if WIDGET_STATE in html:
        raise RuntimeError(
            f"{source} already holds widget state: the injection below would render twice"
        )
    shutil.copy(PRINT_CSS, singlehtml / "_static" / "book-print.css")
    head = (
        widget_head(singlehtml)
        + '\n<link rel="stylesheet" href="_static/book-print.css">\n'
    )
    html = html.replace("</head>", head + "</head>", 1)
    # The search page's index is not written by the singlehtml builder (and a PDF has no search).
    html = html.replace('<script src="searchindex.js"></script>', "")
    page = singlehtml / "book.html"
    page.write_text(html)
    return page


TEX_WORDS = {
    r"\sqrt": "√",
    r"\top": "ᵀ",
    r"\times": "×",
    r"\le": "≤",
    r"\ge": "≥",
    r"\cdot": "·",
    r"\infty": "∞",
    r"\alpha": "α",
    r"\sigma": "σ",
}


def plain_title(heading: str) -> str:
    """A heading's text with its math ($...$, TeX) written as plain characters, for a bookmark."""

    def plain(match):
        text = match.group(1)
        for command, character in TEX_WORDS.items():
            text = re.sub(
                re.escape(command) + r"(?![A-Za-z])", character, text
            )
        text = re.sub(
            r"\\([A-Za-z]+)", r"\1", text
        )  # any other command: its name
        text = (
            text.replace("^2", "²")
            .replace("^ᵀ", "ᵀ")
            .replace("{", "")
            .replace("}", "")
        )
        return re.sub(r"\s+", " ", text).strip()

    return re.sub(r"\$([^$]*)\$", plain, heading)


def retitle_outline(pdf: Path, out: Path, headings: list) -> int:
    """Write pdf to out with each bookmark named by its heading's words (Chromium joins a wrapped
    heading's lines without a space and drops its math). Bookmarks follow the printed headings
    one for one. The new titles are appended as an incremental update (new versions of the
    outline's objects and a cross-reference section for them): the rest of the file, tens of
    thousands of objects, is copied as bytes, not parsed."""
    from pypdf import PdfReader
    from pypdf.generic import NameObject, TextStringObject

    data = pdf.read_bytes()
    reader = PdfReader(io.BytesIO(data))

    def entries(
        reference,
    ):  # the outline's items in reading order: each item, then its children
        while reference is not None:
            item = reference.get_object()
            yield reference, item
            yield from entries(item.get("/First"))
            reference = item.get("/Next")

    bookmarks = list(
        entries(reader.trailer["/Root"]["/Outlines"].get("/First"))
    )
    if len(bookmarks) != len(headings):
        raise RuntimeError(
            f"{len(bookmarks)} bookmarks for {len(headings)} printed headings: "
            f"cannot name them; first bookmarks {[item['/Title'] for _, item in bookmarks[:5]]}"
        )
    update = io.BytesIO()
    update.write(data if data.endswith(b"\n") else data + b"\n")
    offsets = {}
    for (reference, item), heading in zip(bookmarks, headings):
        item[NameObject("/Title")] = TextStringObject(plain_title(heading))
        offsets[reference.idnum] = (update.tell(), reference.generation)
        update.write(
            f"{reference.idnum} {reference.generation} obj\n".encode()
        )
        item.write_to_stream(update)
        update.write(b"\nendobj\n")
    xref = update.tell()
    update.write(b"xref\n")
    for idnum in sorted(offsets):
        offset, generation = offsets[idnum]
        update.write(
            f"{idnum} 1\n{offset:010d} {generation:05d} n\r\n".encode()
        )
    previous = int(re.findall(rb"startxref\s+(\d+)", data)[-1])
    trailer = reader.trailer
    size = max(int(trailer["/Size"]), max(offsets) + 1)
    info = (
        f" /Info {trailer.raw_get('/Info').idnum} 0 R"
        if "/Info" in trailer
        else ""
    )
    update.write(
        f"trailer\n<< /Size {size} /Root {trailer.raw_get('/Root').idnum} 0 R{info} /Prev {previous} >>\n"
        f"startxref\n{xref}\n%%EOF\n".encode()
    )
    out.write_bytes(update.getvalue())
    return len(bookmarks)


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


def print_pdf(singlehtml: Path, page_file: Path, out: Path) -> dict:
    """Print page_file (served from singlehtml on 127.0.0.1) to out; returns what was found."""
    from playwright.sync_api import sync_playwright

    handler = functools.partial(_QuietHandler, directory=str(singlehtml))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{server.server_address[1]}"
    requests, errors, failed = [], [], []
    printed = out.with_name(
        out.stem + ".partial.pdf"
    )  # becomes `out` only once every check passed
    try:
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(
                executable_path=str(CHROMIUM), args=CHROMIUM_ARGS
            )
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            page.on("request", lambda request: requests.append(request.url))
            page.on("pageerror", lambda error: errors.append(str(error)))
            page.on(
                "requestfailed", lambda request: failed.append(request.url)
            )
            page.on(
                "response",
                lambda response: (
                    response.status >= 400
                    and failed.append(
                        f"{response.url} (HTTP {response.status})"
                    )
                ),
            )
            page.emulate_media(media="print")
            clock = [time.perf_counter()]
            page.goto(
                f"{base}/{page_file.name}", wait_until="load", timeout=120_000
            )
            page.wait_for_load_state("networkidle")
            clock.append(time.perf_counter())
            found = page.evaluate(PREPARE)
            page.wait_for_load_state("networkidle")
            page.set_viewport_size(
                {"width": PRINT_WIDTH_PX, "height": 900}
            )  # the paper's column
            found.update(page.evaluate(WIDE_CODE))
            page.set_viewport_size({"width": 1280, "height": 900})
            clock.append(time.perf_counter())
            out.parent.mkdir(parents=True, exist_ok=True)
            page.pdf(
                path=str(printed),
                format="A4",
                print_background=True,
                outline=True,
                tagged=True,
                margin={
                    "top": "16mm",
                    "bottom": "16mm",
                    "left": f"{MARGIN_MM}mm",
                    "right": f"{MARGIN_MM}mm",
                },
                display_header_footer=True,
                header_template="<span></span>",
                footer_template=FOOTER,
            )
            clock.append(time.perf_counter())
            browser.close()
    finally:
        server.shutdown()
    outside = [
        url
        for url in requests
        if not url.startswith((base, "data:", "blob:", "about:"))
    ]
    problems = []
    if outside:
        problems.append(f"requests left 127.0.0.1: {outside[:5]}")
    if failed:
        problems.append(f"requests failed: {failed[:5]}")
    if errors:
        problems.append(f"page errors: {errors[:3]}")
    if found["broken_images"]:
        problems.append(f"images did not load: {found['broken_images'][:3]}")
    if found["typeset"] != found["math"]:
        problems.append(
            f"only {found['typeset']} of {found['math']} formulas typeset"
        )
    if found["widgets"] != found["views"]:
        problems.append(
            f"only {found['widgets']} of {found['views']} saved widgets rendered"
        )
    if problems:
        raise RuntimeError(
            "the PDF is not printable offline: " + "; ".join(problems)
        )
    bookmarks = retitle_outline(printed, out, found.pop("headings"))
    printed.unlink()
    clock.append(time.perf_counter())
    steps = ["load", "typeset_and_render", "print", "outline"]
    seconds = {
        step: round(end - start, 1)
        for step, start, end in zip(steps, clock, clock[1:])
    }
    return {
        **found,
        "bookmarks": bookmarks,
        "seconds": seconds,
        "requests": len(requests),
        "outside_requests": len(outside),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    parser.add_argument(
        "--reuse-site",
        action="store_true",
        help="print the single page already built next to --out (to try print styles)",
    )
    args = parser.parse_args()
    out = args.out.resolve()
    if not CHROMIUM.exists():
        sys.exit(
            f"Chromium not found at {CHROMIUM}; install it with `apt-get install chromium`"
        )
    start = time.perf_counter()
    site = out.parent / "site"
    singlehtml = (
        site / "_build" / "singlehtml"
        if args.reuse_site
        else build_singlehtml(site)
    )
    built = time.perf_counter()
    found = print_pdf(singlehtml, printable_page(singlehtml), out)
    done = time.perf_counter()
    (out.parent / "print.json").write_text(json.dumps(found, indent=1))
    print(
        f"{out}: {out.stat().st_size / 1e6:.1f} MB; {found['math']} formulas, {found['images']} images, "
        f"{found['widgets']} widgets, {found['requests']} requests (0 to other hosts); "
        f"single page built in {built - start:.0f} s, printed in {done - built:.0f} s"
    )


if __name__ == "__main__":
    main()
