"""The bibliography: every citation resolves, papers are cited (not linked),
and JupyterLab writes citations as the HTML book does.

The HTML book resolves {cite} roles with sphinxcontrib-bibtex (a build with
-W fails on an unknown key); these checks say which chapter is at fault
without a build, and keep the JupyterLab extension's table in step with
references.bib (tests/tools/lab_citations.py).
"""

import json
import re
import subprocess
import sys

import pytest
from pybtex.database import parse_file

from conftest import ROOT

BIB = ROOT / "references.bib"
PAGES = sorted((ROOT / "book").glob("*.ipynb")) + sorted(
    (ROOT / "book").glob("*.md")
)
CITE = re.compile(r"\{cite(?::[pt])?\}`([^`]+)`")
# Where papers live: a chapter cites them with {cite} instead of linking.
PAPER_LINK = re.compile(
    r"\]\((https?://(?:arxiv\.org|doi\.org|openreview\.net|aclanthology\.org"
    r"|proceedings\.neurips\.cc|papers\.nips\.cc|www\.jmlr\.org"
    r"|proceedings\.mlr\.press|transformer-circuits\.pub)[^)]*)\)"
)


def markdown(page) -> str:
    if page.suffix == ".md":
        return page.read_text()
    cells = json.loads(page.read_text())["cells"]
    return "\n".join(
        "".join(cell["source"])
        for cell in cells
        if cell["cell_type"] == "markdown"
    )


def keys() -> set:
    return set(parse_file(str(BIB)).entries)


@pytest.mark.parametrize("page", PAGES, ids=lambda page: page.name)
def test_every_citation_is_in_the_bibliography(page):
    cited = {
        key.strip()
        for role in CITE.findall(markdown(page))
        for key in role.split(",")
    }
    assert cited - keys() == set()


@pytest.mark.parametrize("page", PAGES, ids=lambda page: page.name)
def test_papers_are_cited_not_linked(page):
    assert PAPER_LINK.findall(markdown(page)) == []


def test_the_lab_extension_knows_every_entry():
    result = subprocess.run(
        [
            sys.executable,
            str(ROOT / "tests/tools/lab_citations.py"),
            "--check",
        ],
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_sources_page_lists_every_chapter_that_uses_a_source_or_erratum():
    """Each source's "Used in" and each erratum's "Discussed in" line names
    exactly the chapters that link to it."""
    page = (ROOT / "book" / "sources_errata.md").read_text()
    chapters = sorted((ROOT / "book").glob("[0-9][0-9]_*.ipynb"))
    sections = re.split(r"(?m)^\(((?:source|erratum)-\d+)\)=\n", page)[1:]
    assert len(sections) == 2 * 12, "five sources and seven errata"
    for label, text in zip(sections[::2], sections[1::2]):
        line = re.search(r"\*\*(?:Used|Discussed) in:\*\* (.*)", text)
        assert line, f"{label}: no 'Used in' line"
        listed = set(re.findall(r"\{doc\}`([^`]+)`", line[1]))
        linking = {
            path.stem
            for path in chapters
            if re.search(re.escape(label) + r"\b", path.read_text())
        }
        assert listed == linking, label


def test_every_entry_of_the_bibliography_is_cited():
    """The References page lists cited entries only: an uncited entry is
    dead weight (or a citation that went missing)."""
    cited = {
        key.strip()
        for page in PAGES
        for role in CITE.findall(markdown(page))
        for key in role.split(",")
    }
    assert keys() - cited == set()
