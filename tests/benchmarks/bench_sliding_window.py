"""chunked_attention with a sliding-window mask: blocks the window drops are skipped.

Self-attention on one head, d = 64, float32, forward pass, no grad, one thread (the
times are processor time of that thread, ``time.thread_time``, so other programs on
a shared machine weigh little). At n = 8,192 and a window of w = 256 (chunk 128):
  - chunked with the window mask against plain ``attention`` with the same mask
    (plain attention scores all n^2 pairs, then masks them);
  - chunked with the window mask against chunked with a full causal mask (which
    skips the tiles above the diagonal, about half).
Targets: the window at least 3x faster than plain attention at n = 8,192, and its
time growing about linearly over n = 2,048 ... 8,192 (log-log slope <= 1.3; the
causal mask's is near 2); max |chunked - plain| <= 1e-5. Also reported: forward +
backward (the recomputing backward skips the same blocks), window against causal.
"""

import math
import time

import torch
from _common import row

from attnbook import attention, causal_mask, chunked_attention
from attnbook.core.masking import sliding_window_mask
from attnbook.measure.threads import single_thread
from attnbook.measure.timing import interleaved_medians

NAME = "sliding-window"
N, WINDOW, CHUNK, D = 8192, 256, 128, 64
SIZES = (2048, 4096, 8192)
SPEEDUP_TARGET, SLOPE_TARGET, ERROR_TARGET = 3.0, 1.3, 1e-5


def inputs(n: int, d: int, seed: int = 0):
    generator = torch.Generator().manual_seed(seed)
    return [torch.randn(n, d, generator=generator) for _ in range(3)]


def calls(n: int, window: int, chunk: int, d: int) -> dict:
    q, k, v = inputs(n, d)
    local, causal = sliding_window_mask(n, n, window), causal_mask(n)
    return {
        "window": lambda: chunked_attention(q, k, v, local, chunk_size=chunk),
        "causal": lambda: chunked_attention(q, k, v, causal, chunk_size=chunk),
        "plain": lambda: attention(q, k, v, mask=local)[0],
    }


def training_calls(n: int, window: int, chunk: int, d: int) -> dict:
    """Forward + backward of chunked attention with either mask."""
    q, k, v = (t.requires_grad_() for t in inputs(n, d))
    grad = torch.randn(n, d, generator=torch.Generator().manual_seed(1))
    masks = {
        "window": sliding_window_mask(n, n, window),
        "causal": causal_mask(n),
    }

    def train(mask):
        output = chunked_attention(q, k, v, mask, chunk_size=chunk)
        return torch.autograd.grad(output, (q, k, v), grad)

    return {name: (lambda m=m: train(m)) for name, m in masks.items()}


def measure(n, window, chunk, d, repeats, names) -> dict:
    functions = calls(n, window, chunk, d)
    with torch.no_grad(), single_thread():
        return interleaved_medians(
            {name: functions[name] for name in names},
            repeats=repeats,
            warmup=1,
            clock=time.thread_time,
        )


def slope(sizes, times) -> float:
    xs, ys = [math.log(s) for s in sizes], [math.log(t) for t in times]
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sum(
        (x - mx) ** 2 for x in xs
    )


def run(quick: bool = False) -> list:
    n, window, chunk, d = (512, 16, 32, 8) if quick else (N, WINDOW, CHUNK, D)
    sizes = (128, 256, 512) if quick else SIZES
    repeats = 3 if quick else 5
    functions = calls(n, window, chunk, d)
    with torch.no_grad():
        error = (functions["window"]() - functions["plain"]()).abs().max()
    times = measure(
        n, window, chunk, d, repeats, ("window", "causal", "plain")
    )
    by_size = {
        size: measure(size, window, chunk, d, repeats, ("window", "causal"))
        for size in sizes
    }
    with single_thread():
        training = interleaved_medians(
            training_calls(n, window, chunk, d),
            repeats=3,
            warmup=1,
            clock=time.thread_time,
        )
    label = f"n={n:,} w={window} d={d} chunk={chunk}, one thread"
    speedup = times["plain"] / times["window"]
    ms = {name: f"{t * 1e3:.0f} ms" for name, t in times.items()}
    rows = [
        row(
            NAME,
            f"{label}: time, plain attention / chunked window",
            speedup,
            "x",
            f">= {SPEEDUP_TARGET}",
            speedup >= SPEEDUP_TARGET,
            f"window {ms['window']}, plain attention with the window mask "
            f"{ms['plain']}",
        ),
        row(
            NAME,
            f"{label}: time, causal mask / window mask",
            times["causal"] / times["window"],
            "x",
            "report",
            None,
            f"window {ms['window']}, causal {ms['causal']}",
        ),
        row(
            NAME,
            f"{label}: max |chunked - plain|",
            error.item(),
            "",
            f"<= {ERROR_TARGET}",
            error.item() <= ERROR_TARGET,
        ),
    ]
    rows.append(
        row(
            NAME,
            f"{label}: forward+backward, causal mask / window mask",
            training["causal"] / training["window"],
            "x",
            "report",
            None,
            f"window {training['window'] * 1e3:.0f} ms, causal "
            f"{training['causal'] * 1e3:.0f} ms",
        )
    )
    for name in ("window", "causal"):
        series = [by_size[size][name] for size in sizes]
        growth = slope(sizes, series)
        rows.append(
            row(
                NAME,
                f"log-log slope of time over n = {sizes}, {name} mask",
                growth,
                "",
                f"<= {SLOPE_TARGET}" if name == "window" else "report",
                growth <= SLOPE_TARGET if name == "window" else None,
                ", ".join(f"{t * 1e3:.0f}" for t in series) + " ms",
            )
        )
    if quick:  # tiny sizes say nothing about the targets
        for r in rows:
            r["met"] = None
    return rows
