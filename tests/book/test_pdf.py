"""The book as one PDF (`make pdf`, printed by tests/tools/print_pdf.py): complete and typeset.

The PDF is read back with poppler's `pdftotext`/`pdfinfo` and `pypdf`: its page count is in a
sane range, every chapter's title is in its text, no formula was left as raw TeX, its outline
(bookmarks) has one entry per chapter with the chapter's sections under it, printing made no
request to another host, no code block is wider than the column (its lines would be cut), and
the built HTML book's intro page links a copy of it.
"""

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path
from urllib.parse import urljoin, urlparse

import pytest

from conftest import HTML, ROOT, require, require_chromium, toc_documents

PDF = ROOT / "_build" / "pdf" / "attention-from-scratch.pdf"
PRINT_REPORT = PDF.parent / "print.json"

# Measured: 233-251 A4 pages for the 11 chapters and the front and back matter (2026-11-23;
# 271 with code at 9.5pt, never wrapped except the blocks wider than the column, 2026-11-25),
# 15-27 pages a chapter. Fewer than 150 pages means whole chapters or their outputs went missing; more than
# 600 means the layout broke (a figure or a few lines a page, or text printed at a huge size).
MIN_PAGES, MAX_PAGES = 150, 600

# TeX that MathJax typesets; left in the text it means a formula was not typeset.
TEX_COMMAND = re.compile(
    r"\\(frac|sqrt|mathbf|mathbb|mathcal|mathrm|operatorname|text|sum|prod|"
    r"alpha|beta|sigma|top|cdot|times|left|right|begin|end|partial|odot|le|ge|"
    r"in|log|exp|max|tanh|quad|qquad|Big|big|dots|ldots)(?![A-Za-z])"
)
INLINE_DOLLAR = re.compile(r"\$[^$\s][^$]*\$|\$\$")
MATH_DELIMITER = re.compile(
    r"\\\(|\\\)|\\\[|\\\]"
)  # \( \) \[ \]: math MathJax never reached


def require_tool(name: str) -> str:
    """The path of a poppler tool (skip on a laptop without it, fail under CI)."""
    path = shutil.which(name)
    require(
        path is not None,
        f"`{name}` not found; install it with `apt-get install poppler-utils`",
    )
    return path


@pytest.fixture(scope="module")
def book_pdf():
    """The printed book; printed here (from the stored outputs) if it is missing."""
    if not PDF.exists():
        require_chromium()
        subprocess.run(
            [
                sys.executable,
                str(ROOT / "tests" / "tools" / "print_pdf.py"),
                "--out",
                str(PDF),
            ],
            check=True,
            cwd=ROOT,
        )
    return PDF


@pytest.fixture(scope="module")
def pdf_text(book_pdf):
    pdftotext = require_tool("pdftotext")
    return subprocess.run(
        [pdftotext, "-enc", "UTF-8", str(book_pdf), "-"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout


def chapter_notebooks() -> list:
    return [
        ROOT / f"{name}.ipynb"
        for name in toc_documents()
        if (ROOT / f"{name}.ipynb").exists()
    ]


def chapter_title(notebook: Path) -> str:
    """The chapter's title: the first `# ` heading of its markdown cells."""
    for cell in json.loads(notebook.read_text())["cells"]:
        if cell["cell_type"] == "markdown":
            for line in "".join(cell["source"]).splitlines():
                if line.startswith("# "):
                    return line[2:].strip()
    raise AssertionError(f"{notebook.name} has no `# ` title")


def squeeze(text: str) -> str:
    """Text without whitespace: pdftotext breaks lines (and so titles) where the page did."""
    return re.sub(r"\s+", "", text)


def code_text() -> str:
    """Everything the book prints as code: code cells, their text outputs, fenced blocks."""
    pieces = []
    for name in toc_documents():
        notebook, markdown = ROOT / f"{name}.ipynb", ROOT / f"{name}.md"
        if notebook.exists():
            for cell in json.loads(notebook.read_text())["cells"]:
                source = "".join(cell["source"])
                if cell["cell_type"] == "code":
                    pieces.append(source)
                    for output in cell.get("outputs", []):
                        pieces.append("".join(output.get("text", "")))
                        pieces.append(
                            "".join(
                                output.get("data", {}).get("text/plain", "")
                            )
                        )
                else:
                    pieces += re.findall(
                        r"```.*?```|`[^`\n]+`", source, flags=re.S
                    )
        elif markdown.exists():
            pieces += re.findall(
                r"```.*?```|`[^`\n]+`", markdown.read_text(), flags=re.S
            )
    return squeeze("\n".join(pieces))


def test_page_count_in_range(book_pdf):
    pdfinfo = require_tool("pdfinfo")
    info = subprocess.run(
        [pdfinfo, str(book_pdf)], check=True, capture_output=True, text=True
    ).stdout
    pages = int(re.search(r"^Pages:\s+(\d+)", info, flags=re.M).group(1))
    assert MIN_PAGES <= pages <= MAX_PAGES, (
        f"{pages} pages, expected {MIN_PAGES}-{MAX_PAGES}"
    )


def test_every_chapter_title_is_in_the_text(pdf_text):
    text = squeeze(pdf_text)
    titles = [chapter_title(notebook) for notebook in chapter_notebooks()]
    assert len(titles) >= 11
    missing = [title for title in titles if squeeze(title) not in text]
    assert missing == [], f"chapter titles not in the PDF's text: {missing}"


def raw_tex_lines(text: str, code: str) -> list:
    """Lines of text with raw TeX (`$...$`, `\\frac`, ...) that are not printed code."""
    found = []
    for line in text.splitlines():
        tex = (
            INLINE_DOLLAR.search(line)
            or TEX_COMMAND.search(line)
            or MATH_DELIMITER.search(line)
        )
        if tex and squeeze(line) not in code:
            found.append(line.strip())
    return found


def test_raw_tex_is_found():
    """The check below can fail: prose with TeX is caught, code that prints TeX is not."""
    code = squeeze('ax.set_xlabel("query/key size $d$")')
    assert raw_tex_lines("the score $s = \\frac{a}{b}$ of", code) == [
        "the score $s = \\frac{a}{b}$ of"
    ]
    assert raw_tex_lines("where \\operatorname{rowsum}(G) is", code) != []
    assert raw_tex_lines("so \\(x_1\\) is", code) != []
    assert raw_tex_lines('ax.set_xlabel("query/key size $d$")', code) == []
    assert raw_tex_lines("typeset: α = softmax(s) and √d", code) == []


def test_no_raw_tex_outside_code(pdf_text):
    leftovers = raw_tex_lines(pdf_text, code_text())
    assert leftovers == [], (
        f"{len(leftovers)} lines of raw TeX in the PDF's text: {leftovers[:6]}"
    )


def test_outline_has_one_entry_per_chapter(book_pdf):
    from pypdf import PdfReader

    reader = PdfReader(book_pdf)
    outline = reader.outline
    top = [item for item in outline if not isinstance(item, list)]
    titles = [item.title for item in top]
    chapters = [chapter_title(notebook) for notebook in chapter_notebooks()]
    numbered = [
        f"{number}. {title}" for number, title in enumerate(chapters, start=1)
    ]
    for title in numbered:
        assert titles.count(title) == 1, (
            f"bookmark {title!r} appears {titles.count(title)} times in {titles}"
        )
    positions = [titles.index(title) for title in numbered]
    assert positions == sorted(positions), (
        f"chapters out of order in the outline: {titles}"
    )
    # Each chapter's bookmark opens onto its sections, on the pages that follow.
    for position in positions:
        item = top[position]
        following = outline[outline.index(item) + 1]
        assert isinstance(following, list) and len(following) >= 3, (
            f"{item.title!r} has no sections"
        )
        first_section = following[0]
        assert reader.get_destination_page_number(
            first_section
        ) >= reader.get_destination_page_number(item)


def test_printing_made_no_request_to_another_host(book_pdf):
    report = json.loads(PRINT_REPORT.read_text())
    assert report["requests"] > 0 and report["outside_requests"] == 0
    assert report["widgets"] == report["views"], (
        "saved widgets not rendered in the PDF"
    )
    assert report["widget_frames"] == [1] * report["views"], (
        f"each explorer must print as one picture (its saved frame): {report['widget_frames']}"
    )
    assert report["typeset"] == report["math"] > 0, (
        "formulas not typeset in the PDF"
    )
    # Every page of _toc.yml after the root (which holds them all) printed as its own document.
    assert report["documents"] == len(toc_documents()) - 1


def wide_code_message(report, first=5) -> str:
    """The failure message: how many code blocks are too wide, per chapter, and the first few lines."""
    wide = report["wide_code"]
    per_document = {}
    for block in wide:
        per_document[block["document"]] = (
            per_document.get(block["document"], 0) + 1
        )
    lines = [
        f"{len(wide)} of {report['code_blocks']} code blocks are wider than the A4 column "
        f"(their lines are cut on paper; the PDF wraps them meanwhile):"
    ]
    lines += [
        f"  {document or '(front matter)'}: {count}"
        for document, count in per_document.items()
    ]
    lines += [
        f"  {block['document'][:20]}: {block['length']} characters: {block['line']!r}"
        for block in wide[:first]
    ]
    return "\n".join(lines)


def test_wide_code_message_lists_chapters_and_lines():
    block = {
        "document": "1. Attention basics",
        "line": "print(x)  # " + "a" * 48,
        "length": 91,
    }
    message = wide_code_message(
        {"code_blocks": 9, "wide_code": [block] * 7}
    ).splitlines()
    assert message[0].startswith(
        "7 of 9 code blocks are wider than the A4 column"
    )
    assert message[1] == "  1. Attention basics: 7"
    assert message[2] == "  1. Attention basics: 91 characters: " + repr(
        block["line"]
    )
    assert len(message) == 7


def test_no_code_is_cut_at_the_margin(book_pdf):
    """Code is printed line for line (never wrapped): every line must fit the A4 column.
    print_pdf.py measures each code block at the column's width under print styles."""
    report = json.loads(PRINT_REPORT.read_text())
    assert "wide_code" in report, (
        f"{PRINT_REPORT} predates the check: print the PDF again (`make pdf`)"
    )
    assert report["code_blocks"] > 0
    if report["wide_code"]:
        pytest.fail(wide_code_message(report), pytrace=False)


def test_intro_page_links_the_pdf(book_pdf):
    intro = HTML / f"{toc_documents()[0]}.html"
    if not intro.exists():
        pytest.skip(
            f"{intro} not built (`make book` builds it and copies the PDF next to it)"
        )
    links = re.findall(r'href="([^"#?]+\.pdf)"', intro.read_text())
    assert links, f"{intro.name} links no PDF"
    page_url = "http://book/" + intro.relative_to(HTML).as_posix()
    for link in links:
        target = HTML / urlparse(urljoin(page_url, link)).path.lstrip("/")
        assert target.is_file(), (
            f"{intro.name} links {link}, which is not in the built book ({target})"
        )
        assert target.read_bytes()[:5] == b"%PDF-"
        assert target.stat().st_size == book_pdf.stat().st_size, (
            f"{target} is not the latest PDF"
        )
