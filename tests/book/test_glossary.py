"""The glossary can be used to look a term up: its rows are in alphabetical
order, and each links to a chapter of the book that uses the term (by its
Chinese name or its English name)."""

import json
import re

from conftest import ROOT

PAGE = ROOT / "book" / "glossary.md"
ROW = re.compile(
    r"^\| (.+?) \| (.+?) \| (.+) \| \{doc\}`(\d+) <(\d\d_\w+)>` \|$"
)


def rows() -> list:
    lines = PAGE.read_text().splitlines()
    table = [line for line in lines if line.startswith("| ")][1:]  # header
    return [line for line in table if not line.startswith("|---")]


def sort_key(term: str) -> str:
    return re.sub(r"[^a-z0-9 ]", "", term.lower())


def chapter_text(stem: str) -> str:
    cells = json.loads((ROOT / "book" / f"{stem}.ipynb").read_text())["cells"]
    return "\n".join("".join(cell["source"]) for cell in cells)


def test_every_row_links_to_a_chapter_that_uses_the_term():
    unlinked, unused = [], []
    for line in rows():
        found = ROW.match(line)
        if not found:
            unlinked.append(line[:60])
            continue
        english, chinese, _, number, stem = found.groups()
        assert int(number) == int(stem[:2]), line
        text = chapter_text(stem)
        names = [chinese.split("/")[0].strip(), re.sub(r" \(.*", "", english)]
        if not any(name.lower() in text.lower() for name in names):
            unused.append(english)
    assert unlinked == []
    assert unused == []


def test_rows_are_in_alphabetical_order():
    terms = [line.split(" | ")[0][2:] for line in rows()]
    assert terms == sorted(terms, key=sort_key)
    assert len(terms) == len(set(terms)), "a term is listed twice"
