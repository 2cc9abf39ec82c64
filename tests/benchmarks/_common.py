"""Shared by every benchmark: the repository root, result rows and the printed table.

A benchmark module defines ``NAME`` and ``run(quick=False) -> list[dict]``; each dict
is a row made by ``row``. ``quick=True`` runs the same code at tiny sizes (the smoke
test uses it so that no benchmark can rot unnoticed).
"""

import math
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def row(
    benchmark: str,
    measure: str,
    value,
    unit: str = "",
    target: str = "",
    met=None,
    note: str = "",
) -> dict:
    """One result: what was measured, its value and unit, the target (text) and whether it is met."""
    return {
        "benchmark": benchmark,
        "measure": measure,
        "value": value,
        "unit": unit,
        "target": target,
        "met": met,
        "note": note,
    }


def _format_value(value) -> str:
    if value is None:
        return "-"
    if isinstance(value, bool):
        return str(value)
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        if value == 0 or math.isnan(value):
            return f"{value:g}"
        if abs(value) < 1e-3:
            return f"{value:.1e}"
        return f"{value:.3g}" if abs(value) < 100 else f"{value:,.0f}"
    return str(value)


def format_table(rows: list) -> str:
    """A fixed-width text table: benchmark | measure | value | target | ok | note."""
    header = ("benchmark", "measure", "value", "target", "ok", "note")
    lines = [
        (
            r["benchmark"],
            r["measure"],
            f"{_format_value(r['value'])} {r['unit']}".strip(),
            r["target"] or "",
            {True: "yes", False: "NO", None: ""}[r["met"]],
            r["note"] or "",
        )
        for r in rows
    ]
    widths = [
        max(len(str(cells[i])) for cells in [header, *lines])
        for i in range(len(header))
    ]
    widths[-1] = min(widths[-1], 70)

    def render(cells):
        return "  ".join(
            str(cell).ljust(width) for cell, width in zip(cells, widths)
        ).rstrip()

    rule = "  ".join("-" * width for width in widths)
    return "\n".join(
        [render(header), rule, *(render(cells) for cells in lines)]
    )


def format_markdown(rows: list) -> str:
    """The same table in Markdown (for the README's Performance section)."""
    out = [
        "| benchmark | measure | value | target | ok |",
        "|---|---|---|---|---|",
    ]

    def cell(text) -> str:
        return str(text).replace("|", "\\|")

    for r in rows:
        ok = {True: "yes", False: "**no**", None: ""}[r["met"]]
        value = f"{_format_value(r['value'])} {r['unit']}".strip()
        out.append(
            f"| {cell(r['benchmark'])} | {cell(r['measure'])} | {cell(value)} | {cell(r['target'] or '')} | {ok} |"
        )
    return "\n".join(out)
