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
    assert {path.stem.removeprefix("bench_") for path in BENCH_FILES} == {
        n.replace("-", "_") for n in runner.BENCHMARKS
    }


@pytest.mark.parametrize("path", BENCH_FILES, ids=lambda p: p.stem)
def test_benchmark_runs_quickly_and_returns_rows(path):
    module = load(path)
    rows = module.run(quick=True)
    assert rows, f"{path.name} returned no rows"
    for r in rows:
        assert r["benchmark"] == module.NAME
        assert set(r) == {
            "benchmark",
            "measure",
            "value",
            "unit",
            "target",
            "met",
            "note",
        }
        assert r["met"] in (True, False, None)
        assert "CRASHED" not in r["measure"]


def test_multihead_benchmark_compares_equal_modules():
    rows = load(BENCHMARKS / "bench_multihead.py").run(quick=True)
    error = next(
        r for r in rows if r["measure"].startswith("max |attnbook - torch|")
    )
    assert error["met"] is True


def test_widget_discovery_finds_every_explorer_and_its_moves():
    import ipywidgets as widgets

    module = load(BENCHMARKS / "bench_widgets.py")
    names = module.widget_modules()
    assert (
        "attnbook.widgets.basics" in names
        and "attnbook.widgets.chunked" in names
    )
    assert not any(name.rsplit(".", 1)[-1].startswith("_") for name in names)
    import attnbook.widgets.chunked as chunked

    assert list(module.explorer_builders(chunked)) == ["chunked_explorer"]
    moves = module.control_moves
    assert moves(widgets.IntSlider(value=3, min=0, max=3, step=1)) == [2]
    assert moves(widgets.SelectionSlider(options=[1, 2, 4], value=2)) == [4, 1]
    assert moves(
        widgets.Dropdown(options=[("one", 1), ("two", 2)], value=1)
    ) == [2]
    assert moves(widgets.Checkbox(value=True)) == [False]
    assert moves(widgets.Text(value="1, 2")) == ["2 ,1"]
    up, down = moves(
        widgets.FloatLogSlider(value=1.0, base=10, min=-1, max=1, step=0.5)
    )
    assert abs(up - 10**0.5) < 1e-9 and abs(down - 10**-0.5) < 1e-9


def test_tables_and_json_report(tmp_path):
    rows = [
        row("x", "a ratio", 1.25, "x", "<= 1.3", True),
        row("x", "a time", 12345.6, "ms", "", None, "note"),
    ]
    text = format_table(rows)
    assert "1.25 x" in text and "12,346 ms" in text and "yes" in text
    assert (
        format_markdown(rows).splitlines()[2]
        == "| x | a ratio | 1.25 x | <= 1.3 | yes |"
    )
    assert "max \\|a - b\\|" in format_markdown(
        [row("x", "max |a - b|", 0.0)]
    )  # pipes escaped
    out = tmp_path / "bench.json"
    assert (
        runner.main(["--quick", "--only", "multihead", "--json", str(out)])
        == 0
    )
    saved = json.loads(out.read_text())
    assert (
        saved["meta"]["quick"] is True
        and saved["rows"][0]["benchmark"] == "multihead"
    )


def test_sliding_window_benchmark_agrees_and_reports_every_ratio():
    rows = load(BENCHMARKS / "bench_sliding_window.py").run(quick=True)
    by_measure = {r["measure"].split(": ")[-1]: r for r in rows}
    assert by_measure["max |chunked - plain|"]["value"] <= 1e-5
    assert {
        "time, causal mask / window mask",
        "time, plain attention / chunked window",
    } <= set(by_measure)
    assert all(r["value"] > 0 for r in rows if r["unit"] == "x")
