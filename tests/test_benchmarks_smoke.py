"""Every benchmark under tests/benchmarks imports and runs at tiny sizes, so none can rot.

The full suite is slow and timing-dependent, so it is not part of `make test`;
`make bench` runs it (tests/benchmarks/run.py).
"""

import importlib.util
import json
import sys
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parent / "benchmarks"
sys.path.insert(0, str(BENCHMARKS))

import run as runner  # noqa: E402

from _common import format_markdown, format_table, row  # noqa: E402

BENCH_FILES = sorted(BENCHMARKS.glob("bench_*.py"))


def load(path: Path):
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_every_benchmark_file_is_known_to_the_runner():
    assert {path.stem.removeprefix("bench_") for path in BENCH_FILES} == set(runner.BENCHMARKS)


@pytest.mark.parametrize("path", BENCH_FILES, ids=lambda p: p.stem)
def test_benchmark_runs_quickly_and_returns_rows(path):
    module = load(path)
    rows = module.run(quick=True)
    assert rows, f"{path.name} returned no rows"
    for r in rows:
        assert r["benchmark"] == module.NAME
        assert set(r) == {"benchmark", "measure", "value", "unit", "target", "met", "note"}
        assert r["met"] in (True, False, None)
        assert "CRASHED" not in r["measure"]


def test_multihead_benchmark_compares_equal_modules():
    rows = load(BENCHMARKS / "bench_multihead.py").run(quick=True)
    error = next(r for r in rows if r["measure"].startswith("max |attnbook - torch|"))
    assert error["met"] is True


def test_widget_discovery_finds_every_view_and_plot():
    module = load(BENCHMARKS / "bench_widgets.py")
    names = module.widget_modules()
    assert "attnbook.widgets.basics" in names and "attnbook.widgets.chunked" in names
    assert not any(name.rsplit(".", 1)[-1].startswith("_") for name in names)
    import attnbook.widgets.chunked as chunked

    pairs = module.view_plot_pairs(chunked)
    assert [(view, plot) for view, _, plot, _ in pairs] == [("chunked_view", "plot_chunked")]


def test_tables_and_json_report(tmp_path):
    rows = [row("x", "a ratio", 1.25, "x", "<= 1.3", True), row("x", "a time", 12345.6, "ms", "", None, "note")]
    text = format_table(rows)
    assert "1.25 x" in text and "12,346 ms" in text and "yes" in text
    assert format_markdown(rows).splitlines()[2] == "| x | a ratio | 1.25 x | <= 1.3 | yes |"
    assert "max \\|a - b\\|" in format_markdown([row("x", "max |a - b|", 0.0)])  # pipes escaped
    out = tmp_path / "bench.json"
    assert runner.main(["--quick", "--only", "multihead", "--json", str(out)]) == 0
    saved = json.loads(out.read_text())
    assert saved["meta"]["quick"] is True and saved["rows"][0]["benchmark"] == "multihead"
