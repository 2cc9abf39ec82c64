"""chunked_attention vs attention: extra peak memory (fresh process per call), time and error.

Self-attention on one head, d = 64, float32, n = 1,024 ... 16,384 queries and keys.
Targets at n = 8,192: extra peak memory <= 1/8 of the plain version's, time <= 1.5x,
max abs difference <= 1e-5.
"""

import torch

from attnbook import attention, chunked_attention
from attnbook.chunked import DEFAULT_CHUNK_SIZE, interleaved_medians, peak_memory

from _common import row

NAME = "chunked"
SIZES = (1024, 2048, 4096, 8192, 16384)
TARGET_N = 8192
QUICK_TARGET_N = 128  # quick mode exercises the target-size code too
MEMORY_TARGET, TIME_TARGET, ERROR_TARGET = 1 / 8, 1.5, 1e-5


def inputs(n: int, d: int = 64, seed: int = 0):
    generator = torch.Generator().manual_seed(seed)
    return [torch.randn(n, d, generator=generator) for _ in range(3)]


def measure_time(n: int, d: int, chunk_size: int, repeats: int) -> dict:
    """Median seconds of plain and chunked attention, timed side by side."""
    q, k, v = inputs(n, d)
    with torch.no_grad():
        return interleaved_medians(
            {"plain": lambda: attention(q, k, v), "chunked": lambda: chunked_attention(q, k, v, chunk_size=chunk_size)},
            repeats=repeats,
            warmup=1,
        )


def measure(n: int, d: int, chunk_size: int, repeats: int) -> dict:
    """Time both side by side (medians), their max abs difference, and each one's extra peak memory."""
    q, k, v = inputs(n, d)
    with torch.no_grad():
        error = (chunked_attention(q, k, v, chunk_size=chunk_size) - attention(q, k, v)[0]).abs().max().item()
    del q, k, v
    times = measure_time(n, d, chunk_size, repeats)
    by_method = peak_memory(["attention", "chunked_attention"], [n], d=d, chunk_size=chunk_size, one_process_per_call=True)
    memory = {method: by_size[n] for method, by_size in by_method.items()}
    return {"error": error, "time": times, "memory": memory}


def run(quick: bool = False, sizes=None, chunk_size: int = DEFAULT_CHUNK_SIZE) -> list:
    sizes = sizes or ((128,) if quick else SIZES)
    d = 8 if quick else 64
    chunk_size = 64 if quick else chunk_size
    rows = []
    mib = 2**20
    for n in sizes:
        result = measure(n, d, chunk_size, repeats=3 if quick or n >= 16384 else 5)
        plain_mem, chunked_mem = result["memory"]["attention"], result["memory"]["chunked_attention"]
        memory_ratio = chunked_mem / plain_mem if plain_mem else float("nan")
        time_ratio = result["time"]["chunked"] / result["time"]["plain"]
        is_target = n == (QUICK_TARGET_N if quick else TARGET_N)
        label = f"n={n:,} d={d} chunk={chunk_size}"
        rows += [
            row(NAME, f"{label}: extra peak memory, chunked/plain", memory_ratio, "",
                "<= 0.125" if is_target else "", memory_ratio <= MEMORY_TARGET if is_target else None,
                f"plain {plain_mem / mib:.1f} MiB, chunked {chunked_mem / mib:.1f} MiB"),
            row(NAME, f"{label}: time, chunked/plain", time_ratio, "x",
                f"<= {TIME_TARGET}" if is_target else "", time_ratio <= TIME_TARGET if is_target else None,
                f"plain {result['time']['plain'] * 1e3:.0f} ms, chunked {result['time']['chunked'] * 1e3:.0f} ms"),
            row(NAME, f"{label}: max |chunked - plain|", result["error"], "",
                "<= 1e-5" if is_target else "", result["error"] <= ERROR_TARGET if is_target else None),
        ]
        if is_target:  # the same timing on one thread: no thread synchronisation, so no waiting on a busy machine
            threads = torch.get_num_threads()
            torch.set_num_threads(1)
            try:
                one = measure_time(n, d, chunk_size, repeats=3)
            finally:
                torch.set_num_threads(threads)
            rows.append(row(NAME, f"{label}: time, chunked/plain, 1 thread", one["chunked"] / one["plain"], "x", "", None,
                            f"plain {one['plain'] * 1e3:.0f} ms, chunked {one['chunked'] * 1e3:.0f} ms"))
    if quick:  # tiny sizes say nothing about the targets
        for r in rows:
            r["met"] = None
    return rows
