"""Collapse the chapters' hidden cells in JupyterLab too, as they are in the HTML book.

The HTML book hides a cell tagged `hide-cell` (input and output), `hide-input` or `hide-output`
behind a toggle; JupyterLab reads the standard cell metadata `jupyter.source_hidden` and
`jupyter.outputs_hidden` instead, and shows such a cell collapsed until the reader clicks it.
This script gives every tagged cell that metadata, in place, and changes nothing else (nbformat
writes the notebook as nbconvert does). Running it again changes nothing.

    python tests/tools/collapse_solutions.py book/*.ipynb           # add the metadata
    python tests/tools/collapse_solutions.py --check book/*.ipynb   # exit 1 if any is missing

`make notebooks` (nbconvert --execute --inplace) keeps cell metadata, so it survives a re-run.
tests/book/test_solutions_collapsed.py checks every chapter.
"""

import argparse
import sys

import nbformat

# tag -> the `jupyter` metadata keys it sets
HIDDEN = {
    "hide-cell": ("source_hidden", "outputs_hidden"),
    "hide-input": ("source_hidden",),
    "hide-output": ("outputs_hidden",),
}


def missing(cell) -> list:
    """The `jupyter.*` keys this cell's tags call for that are not set to True."""
    keys = {
        key
        for tag in cell.get("metadata", {}).get("tags", [])
        for key in HIDDEN.get(tag, ())
    }
    jupyter = cell.get("metadata", {}).get("jupyter", {})
    return sorted(key for key in keys if jupyter.get(key) is not True)


def collapse(nb) -> int:
    """Set the missing keys in every cell of `nb`; returns how many cells changed."""
    changed = 0
    for cell in nb.cells:
        keys = missing(cell)
        if keys:
            jupyter = cell.metadata.setdefault("jupyter", {})
            for key in keys:
                jupyter[key] = True
            changed += 1
    return changed


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("notebooks", nargs="+")
    parser.add_argument(
        "--check",
        action="store_true",
        help="change nothing; exit 1 if a cell lacks the metadata",
    )
    args = parser.parse_args(argv)
    status = 0
    for path in args.notebooks:
        nb = nbformat.read(path, as_version=nbformat.NO_CONVERT)
        changed = collapse(nb)
        if args.check:
            if changed:
                print(
                    f"{path}: {changed} tagged cell(s) not collapsed in JupyterLab"
                )
                status = 1
        elif changed:
            nbformat.write(nb, path)
            print(f"{path}: collapsed {changed} cell(s)")
        else:
            print(f"{path}: already collapsed")
    return status


if __name__ == "__main__":
    sys.exit(main())
