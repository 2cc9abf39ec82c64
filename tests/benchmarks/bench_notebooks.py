"""Per-notebook execution time as nbval runs it (a fresh kernel each), and the total.

Each chapter runs in its own ``python -m pytest book/NN_name.ipynb`` (the project's
pytest options add --nbval), so the time includes the kernel start-up and the
output checks. Target: <= 150 s for the whole book on the 2-core machine.
"""

import subprocess
import sys
import time

from _common import ROOT, row

NAME = "notebooks"
TARGET_TOTAL_S = 150.0
TARGET_EACH_S = 20.0  # what each chapter aims for (the issue: "under ~20 s")


def notebooks() -> list:
    return sorted((ROOT / "book").glob("*.ipynb"))


def command(notebook) -> list:
    return [
        sys.executable,
        "-m",
        "pytest",
        "-q",
        str(notebook.relative_to(ROOT)),
    ]


def run(quick: bool = False) -> list:
    found = notebooks()
    if quick:  # no execution: the discovery and the command line only
        return [
            row(
                NAME,
                "notebooks found",
                len(found),
                "",
                "",
                None,
                " ".join(command(found[0])[2:]) if found else "",
            )
        ]
    rows, times = [], {}
    for notebook in found:
        start = time.perf_counter()
        completed = subprocess.run(
            command(notebook), cwd=ROOT, capture_output=True, text=True
        )
        times[notebook.name] = elapsed = time.perf_counter() - start
        passed = completed.returncode == 0
        summary = (
            completed.stdout.strip().splitlines()[-1]
            if completed.stdout.strip()
            else completed.stderr[-200:]
        )
        rows.append(
            row(
                NAME,
                notebook.name,
                elapsed,
                "s",
                f"<= {TARGET_EACH_S:g}",
                elapsed <= TARGET_EACH_S and passed,
                ("" if passed else "FAILED: ") + summary,
            )
        )
    total = sum(times.values())
    slowest = sorted(times, key=times.get, reverse=True)[:3]
    rows.append(
        row(
            NAME,
            f"whole book ({len(found)} notebooks)",
            total,
            "s",
            f"<= {TARGET_TOTAL_S:g}",
            total <= TARGET_TOTAL_S,
            "slowest: "
            + ", ".join(f"{name} {times[name]:.0f} s" for name in slowest),
        )
    )
    return rows
