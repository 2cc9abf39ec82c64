"""Solutions start collapsed in JupyterLab, as in the HTML book.

The HTML book hides cells tagged hide-cell/hide-input/hide-output behind a toggle; JupyterLab
collapses a cell whose metadata says `jupyter.source_hidden` / `jupyter.outputs_hidden`.
tests/tools/collapse_solutions.py adds that metadata; this checks every chapter carries it (in
book/, or in the folder ATTNBOOK_NOTEBOOKS names), and that the script does what it says.
"""

import importlib.util
import os
import re
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS = Path(os.environ.get("ATTNBOOK_NOTEBOOKS", ROOT / "book"))
CHAPTERS = sorted(NOTEBOOKS.glob("[0-9][0-9]_*.ipynb"))
FIX = "python tests/tools/collapse_solutions.py book/*.ipynb"

spec = importlib.util.spec_from_file_location(
    "collapse_solutions", ROOT / "tests" / "tools" / "collapse_solutions.py"
)
collapse_solutions = importlib.util.module_from_spec(spec)
spec.loader.exec_module(collapse_solutions)


def test_every_chapter_is_checked():
    """The chapters checked here are the book's: those _toc.yml lists."""
    toc = (ROOT / "_toc.yml").read_text()
    listed = re.findall(r"file: book/(\d\d_\w+)", toc)
    assert [path.stem for path in CHAPTERS] == listed


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda path: path.stem)
def test_hidden_cells_are_collapsed_in_lab(path):
    nb = nbformat.read(path, as_version=4)
    tagged = [
        cell
        for cell in nb.cells
        if set(cell.metadata.get("tags", [])) & set(collapse_solutions.HIDDEN)
    ]
    assert tagged, f"{path.name} has no hide-cell solutions"
    open_cells = [
        (index, collapse_solutions.missing(cell))
        for index, cell in enumerate(nb.cells)
        if collapse_solutions.missing(cell)
    ]
    assert open_cells == [], (
        f"{path.name}: cells (index, missing jupyter.* keys) open in JupyterLab; run `{FIX}`"
    )


def test_collapse_sets_only_the_keys_the_tags_ask_for_and_is_idempotent():
    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_code_cell("1", metadata={"tags": ["hide-cell"]}),
        nbformat.v4.new_code_cell(
            "2", metadata={"tags": ["hide-input", "nbval-ignore-output"]}
        ),
        nbformat.v4.new_code_cell(
            "3",
            metadata={
                "tags": ["hide-output"],
                "jupyter": {"source_hidden": False},
            },
        ),
        nbformat.v4.new_code_cell(
            "4", metadata={"tags": ["nbval-ignore-output"]}
        ),
        nbformat.v4.new_markdown_cell("text"),
    ]
    assert collapse_solutions.collapse(nb) == 3
    assert [cell.metadata.get("jupyter") for cell in nb.cells] == [
        {"source_hidden": True, "outputs_hidden": True},
        {"source_hidden": True},
        {"source_hidden": False, "outputs_hidden": True},
        None,
        None,
    ]
    before = nbformat.writes(nb)
    assert collapse_solutions.collapse(nb) == 0
    assert nbformat.writes(nb) == before


def test_script_check_mode_and_in_place_run(tmp_path):
    path = tmp_path / "chapter.ipynb"
    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_code_cell("x = 1", metadata={"tags": ["hide-cell"]})
    ]
    nbformat.write(nb, path)
    assert collapse_solutions.main(["--check", str(path)]) == 1
    assert collapse_solutions.main([str(path)]) == 0
    first = path.read_bytes()
    assert collapse_solutions.main([str(path)]) == 0
    assert path.read_bytes() == first
    assert collapse_solutions.main(["--check", str(path)]) == 0
