"""Write the book's citations into the JupyterLab extension.

jupyterlab-myst cannot read references.bib, so it shows {cite:p}`vaswani2017`
as the bare key with a "Citation Not Found" sign. The book's extension
(lab/labextensions/attnbook-lab) replaces it with the text the HTML book shows,
"(Vaswani et al., 2017)" or "Vaswani et al. (2017)", from a table of every
entry of references.bib that this script writes between two marker lines of
the extension. tests/book/test_citations.py checks that the table is up to date.

    python tests/tools/lab_citations.py          # rewrite the table
    python tests/tools/lab_citations.py --check  # exit 1 if out of date
"""

import argparse
import codecs
import json
import re
import sys
from pathlib import Path

import latexcodec  # noqa: F401 (registers the latex codecs)
from pybtex.database import parse_file

ROOT = Path(__file__).resolve().parents[2]
BIB = ROOT / "references.bib"
EXTENSION = (
    ROOT
    / "lab"
    / "labextensions"
    / "attnbook-lab"
    / "static"
    / "remoteEntry.js"
)
BEGIN = "  // BEGIN CITATIONS (written by tests/tools/lab_citations.py)\n"
END = "  // END CITATIONS\n"


def plain(text: str) -> str:
    """LaTeX accents and braces of a BibTeX field as plain text."""
    return codecs.decode(text, "ulatex").replace("{", "").replace("}", "")


def authors(entry) -> str:
    """'Shazeer', 'Jain and Wallace' or 'Vaswani et al.', as the book cites."""
    people = entry.persons.get("author", [])
    names = [
        plain(" ".join(person.prelast_names + person.last_names))
        for person in people
    ]
    if len(names) == 1:
        return names[0]
    if len(names) == 2:
        return f"{names[0]} and {names[1]}"
    return f"{names[0]} et al."


def citations(bib: Path = BIB) -> dict:
    """key -> {author, year, title, url} for every entry of the bibliography."""
    data = parse_file(str(bib))
    table = {}
    for key, entry in sorted(data.entries.items()):
        fields = entry.fields
        url = fields.get("url") or (
            f"https://doi.org/{fields['doi']}" if "doi" in fields else ""
        )
        table[key] = {
            "author": authors(entry),
            "year": fields["year"],
            "title": plain(fields["title"]),
            "url": url,
        }
    return table


def table_source(table: dict) -> str:
    lines = ["  var CITATIONS = {\n"]
    for key, entry in table.items():
        lines.append(
            f"    {json.dumps(key)}: {json.dumps(entry, ensure_ascii=False)},\n"
        )
    lines.append("  };\n")
    return "".join(lines)


def updated(source: str, table: dict) -> str:
    pattern = re.compile(re.escape(BEGIN) + ".*?" + re.escape(END), re.S)
    if not pattern.search(source):
        raise SystemExit(f"{EXTENSION}: no citation markers")
    return pattern.sub(lambda _: BEGIN + table_source(table) + END, source)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--check", action="store_true")
    args = parser.parse_args()
    source = EXTENSION.read_text()
    new = updated(source, citations())
    if args.check:
        if new != source:
            print(
                "the extension's citations are out of date: "
                "python tests/tools/lab_citations.py"
            )
            return 1
        return 0
    EXTENSION.write_text(new)
    return 0


if __name__ == "__main__":
    sys.exit(main())
