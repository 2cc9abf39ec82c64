"""The GPU benchmark refuses clearly without a GPU; the shipped H200
measurement is pinned, and its helpers read it right."""

import json

import pytest
import torch

from attnbook.experiments import gpu_benchmark, gpu_timings
from attnbook.experiments.gpu_timings import (
    h200_measurement,
    slowdown,
    timing_rows,
)


def test_benchmark_refuses_without_a_gpu(tmp_path, monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    out = tmp_path / "bench.json"
    with pytest.raises(SystemExit, match="is_available\\(\\) is False"):
        gpu_benchmark.main(["--out", str(out)])
    assert not out.exists()


def test_h200_measurement_holds_the_reported_numbers():
    results = h200_measurement()
    assert results["device"] == "NVIDIA H200"
    assert results["torch"] == "2.11.0+cu130"
    flash = timing_rows(
        results, run="first", dtype="bfloat16", n=32768,
        implementation="sdpa flash", **{"pass": "forward"},
    )  # fmt: skip
    assert [row["ms"] for row in flash] == [7.386]
    ratios = slowdown(
        results, "attnbook.chunked_attention", "sdpa flash", run="first",
        dtype="bfloat16", **{"pass": "forward"},
    )  # fmt: skip
    assert round(ratios[32768]) == 31  # 229.482 / 7.386, as reported
    refused = timing_rows(results, n=16384, ms=None)
    assert refused and all("refused" in row for row in refused)


def test_slowdown_refuses_rows_of_two_settings():
    with pytest.raises(ValueError, match="several runs"):
        slowdown(h200_measurement(), "sdpa cudnn", "sdpa flash")


def test_a_changed_file_is_refused(monkeypatch):
    monkeypatch.setattr(gpu_timings, "H200_SHA256", "0" * 64)
    with pytest.raises(ValueError, match="SHA-256"):
        h200_measurement()


def test_no_benchmark_is_shipped_until_a_gpu_session_pins_one():
    if gpu_timings.GPU_BENCHMARK_SHA256 is None:
        assert gpu_timings.gpu_benchmark() is None
    else:
        results = gpu_timings.gpu_benchmark()
        assert results["complete"] and results["device"]
        json.dumps(results)
