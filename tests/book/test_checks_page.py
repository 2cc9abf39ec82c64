"""The back matter's count of chapter cells exempt from output checks
matches the chapters."""

import json
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
WORDS = {
    11: "eleven",
    12: "twelve",
    13: "thirteen",
    14: "fourteen",
    15: "fifteen",
    16: "sixteen",
    17: "seventeen",
    18: "eighteen",
}


def test_the_count_of_exempt_cells_is_the_chapters():
    chapters = sorted((ROOT / "book").glob("[0-9][0-9]_*.ipynb"))
    code = exempt = 0
    for path in chapters:
        cells = json.loads(path.read_text())["cells"]
        code_cells = [c for c in cells if c["cell_type"] == "code"]
        code += len(code_cells)
        exempt += sum(
            "nbval-ignore-output" in c.get("metadata", {}).get("tags", [])
            for c in code_cells
        )
    page = (ROOT / "book" / "checks.md").read_text()
    found = re.search(
        r"Of the (\d+) code cells of\s+the (\w+) chapters, (\d+) are exempt",
        page,
    )
    assert found, "checks.md no longer states the count"
    assert (int(found[1]), found[2], int(found[3])) == (
        code,
        WORDS[len(chapters)],
        exempt,
    )
