"""GPU timings the book ships (chapter 16), read from pinned JSON files.

No GPU runs while the book is built, so the chapter draws its timing table
from files measured on one: ``h200_measurement()`` is the measurement of
2026-11-28 on an NVIDIA H200 (SDPA's backends, the book's ``attention`` and
``chunked_attention``, and a compact Triton forward kernel that is not the
book's), converted to JSON without changing a number. The benchmark of the
book's own kernels, ``python -m attnbook.experiments.gpu_benchmark``, writes
a file of the same shape; a GPU session ships it as ``GPU_BENCHMARK_FILE``
and pins its digest in ``GPU_BENCHMARK_SHA256``.
"""

import json

from .._weights import read_pinned

H200_FILE = "gpu_h200_2026-11-28.json"
H200_SHA256 = (
    "7537f98e3e3da3dac369c334923b60900b89eb541fac7aab07b56b3f4727f620"
)
GPU_BENCHMARK_FILE = "gpu_benchmark.json"
GPU_BENCHMARK_SHA256 = None  # set when a GPU session ships the file


def h200_measurement() -> dict:
    """The H200 measurement of 2026-11-28, checked against its SHA-256."""
    return json.loads(read_pinned(H200_FILE, H200_SHA256))


def gpu_benchmark() -> dict | None:
    """The shipped benchmark of the book's kernels, or None while no GPU
    session has run it."""
    if GPU_BENCHMARK_SHA256 is None:
        return None
    return json.loads(read_pinned(GPU_BENCHMARK_FILE, GPU_BENCHMARK_SHA256))


def timing_rows(results: dict, **where) -> list:
    """The rows of ``results`` (every run's) whose fields equal ``where``,
    e.g. ``timing_rows(r, dtype="bfloat16", n=16384)``; each row also names
    its run and the run's setting (batch, heads, d)."""
    if not isinstance(results, dict) or not (
        "runs" in results or "rows" in results
    ):
        raise TypeError(
            "results must be a dict as h200_measurement() or gpu_benchmark() "
            f"return (with 'runs' or 'rows'), got {str(results):.60}"
        )
    runs = results.get("runs") or [results]
    found = []
    for run in runs:
        for row in run["rows"]:
            row = {"run": run.get("name"), **run["setting"], **row}
            if all(row.get(key) == value for key, value in where.items()):
                found.append(row)
    return found


def slowdown(results: dict, slow: str, fast: str, **where) -> dict:
    """n -> time of ``slow`` / time of ``fast``, over the rows that match
    ``where`` and hold both (a refused run has no time)."""
    times = {}
    rows = timing_rows(results, **where)
    if len({row["run"] for row in rows}) > 1:
        raise ValueError(
            "the rows come from several runs (other settings): add run=..."
        )
    for row in rows:
        if row.get("ms") is not None:
            times[(row["implementation"], row["n"])] = row["ms"]
    return {
        n: times[(slow, n)] / times[(fast, n)]
        for (name, n) in sorted(times)
        if name == slow and (fast, n) in times
    }
