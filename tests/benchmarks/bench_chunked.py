"""chunked_attention against plain attention and PyTorch's fused kernel: memory, time, error.

Self-attention on one head, d = 64, float32, n = 1,024 ... 16,384 queries and keys.
Forward pass, targets at n = 8,192: extra peak memory <= 1/8 of the plain version's,
time <= 1.5x, max abs difference <= 1e-5. Also reported: time and memory against
``F.scaled_dot_product_attention`` (PyTorch's own fused CPU kernel).
Forward + backward at n = 8,192 (the recomputing backward pass): extra peak memory
<= 1/8 of plain attention's, time <= 2x plain attention's, gradients within 1e-5 of
plain attention's; time against ``F.scaled_dot_product_attention`` reported (aim <= 1.5x).
Memory is measured in a fresh process after a warm-up call at a small size.
"""

import torch
import torch.nn.functional as F
from _common import row

from attnbook import attention, chunked_attention
from attnbook.core.chunked import DEFAULT_CHUNK_SIZE
from attnbook.experiments.attention_memory import peak_memory
from attnbook.measure.timing import interleaved_medians

NAME = "chunked"
SIZES = (1024, 2048, 4096, 8192, 16384)
TARGET_N = 8192
QUICK_TARGET_N = 128  # quick mode exercises the target-size code too
MEMORY_TARGET, TIME_TARGET, ERROR_TARGET = 1 / 8, 1.5, 1e-5
TRAIN_TIME_TARGET, TRAIN_SDPA_AIM = 2.0, 1.5
MIB = 2**20


def inputs(n: int, d: int = 64, seed: int = 0):
    generator = torch.Generator().manual_seed(seed)
    return [torch.randn(n, d, generator=generator) for _ in range(3)]


def forward_calls(q, k, v, chunk_size: int) -> dict:
    """The three forward passes, as zero-argument functions returning the (n, d_v) output."""
    return {
        "plain": lambda: attention(q, k, v)[0],
        "chunked": lambda: chunked_attention(q, k, v, chunk_size=chunk_size),
        "sdpa": lambda: F.scaled_dot_product_attention(
            q[None, None], k[None, None], v[None, None]
        )[0, 0],
    }


def measure_time(
    n: int, d: int, chunk_size: int, repeats: int, names=("plain", "chunked")
) -> dict:
    """Median seconds of the forward passes, timed side by side."""
    q, k, v = inputs(n, d)
    calls = forward_calls(q, k, v, chunk_size)
    with torch.no_grad():
        return interleaved_medians(
            {name: calls[name] for name in names}, repeats=repeats, warmup=1
        )


def measure(
    n: int, d: int, chunk_size: int, repeats: int, with_sdpa: bool
) -> dict:
    """Forward pass: time side by side (medians), max abs difference, each one's extra peak memory."""
    q, k, v = inputs(n, d)
    with torch.no_grad():
        error = (
            (
                chunked_attention(q, k, v, chunk_size=chunk_size)
                - attention(q, k, v)[0]
            )
            .abs()
            .max()
            .item()
        )
    del q, k, v
    names = ("plain", "chunked", "sdpa") if with_sdpa else ("plain", "chunked")
    times = measure_time(n, d, chunk_size, repeats, names)
    methods = ["attention", "chunked_attention"] + (
        ["scaled_dot_product_attention"] if with_sdpa else []
    )
    by_method = peak_memory(methods, [n], d=d, chunk_size=chunk_size)
    memory = {method: by_size[n] for method, by_size in by_method.items()}
    return {"error": error, "time": times, "memory": memory}


def measure_training(n: int, d: int, chunk_size: int, repeats: int) -> dict:
    """Forward + backward: time side by side, gradient error against plain attention, extra peak memory."""
    qkv = [t.requires_grad_() for t in inputs(n, d)]
    grad_output = torch.randn(n, d, generator=torch.Generator().manual_seed(1))
    calls = forward_calls(*qkv, chunk_size)

    def gradients(name):
        return torch.autograd.grad(calls[name](), qkv, grad_output)

    error = max(
        (a - b).abs().max().item()
        for a, b in zip(gradients("chunked"), gradients("plain"))
    )
    times = interleaved_medians(
        {name: (lambda name=name: gradients(name)) for name in calls},
        repeats=repeats,
        warmup=1,
    )
    by_method = peak_memory(
        ["attention", "chunked_attention", "scaled_dot_product_attention"],
        [n],
        d=d,
        chunk_size=chunk_size,
        backward=True,
    )
    memory = {method: by_size[n] for method, by_size in by_method.items()}
    return {"error": error, "time": times, "memory": memory}


def forward_rows(n: int, d: int, chunk_size: int, quick: bool) -> list:
    is_target = n == (QUICK_TARGET_N if quick else TARGET_N)
    result = measure(
        n,
        d,
        chunk_size,
        repeats=3 if quick or n >= 16384 else 5,
        with_sdpa=is_target,
    )
    plain_mem, chunked_mem = (
        result["memory"]["attention"],
        result["memory"]["chunked_attention"],
    )
    memory_ratio = chunked_mem / plain_mem if plain_mem else float("nan")
    time_ratio = result["time"]["chunked"] / result["time"]["plain"]
    label = f"n={n:,} d={d} chunk={chunk_size}"
    rows = [
        row(
            NAME,
            f"{label}: extra peak memory, chunked/plain",
            memory_ratio,
            "",
            "<= 0.125" if is_target else "",
            memory_ratio <= MEMORY_TARGET if is_target else None,
            f"plain {plain_mem / MIB:.1f} MiB, chunked {chunked_mem / MIB:.1f} MiB",
        ),
        row(
            NAME,
            f"{label}: time, chunked/plain",
            time_ratio,
            "x",
            f"<= {TIME_TARGET}" if is_target else "",
            time_ratio <= TIME_TARGET if is_target else None,
            f"plain {result['time']['plain'] * 1e3:.0f} ms, chunked {result['time']['chunked'] * 1e3:.0f} ms",
        ),
        row(
            NAME,
            f"{label}: max |chunked - plain|",
            result["error"],
            "",
            "<= 1e-5" if is_target else "",
            result["error"] <= ERROR_TARGET if is_target else None,
        ),
    ]
    if is_target:
        sdpa_time, sdpa_mem = (
            result["time"]["sdpa"],
            result["memory"]["scaled_dot_product_attention"],
        )
        rows += [
            row(
                NAME,
                f"{label}: time, chunked/SDPA",
                result["time"]["chunked"] / sdpa_time,
                "x",
                "report",
                None,
                f"chunked {result['time']['chunked'] * 1e3:.0f} ms, F.scaled_dot_product_attention {sdpa_time * 1e3:.0f} ms",
            ),
            row(
                NAME,
                f"{label}: extra peak memory, chunked/SDPA",
                chunked_mem / sdpa_mem if sdpa_mem else float("nan"),
                "",
                "report",
                None,
                f"chunked {chunked_mem / MIB:.1f} MiB, SDPA {sdpa_mem / MIB:.1f} MiB",
            ),
        ]
    return rows


def training_rows(n: int, d: int, chunk_size: int, quick: bool) -> list:
    result = measure_training(n, d, chunk_size, repeats=3)
    times, memory = result["time"], result["memory"]
    plain_mem, chunked_mem, sdpa_mem = (
        memory["attention"],
        memory["chunked_attention"],
        memory["scaled_dot_product_attention"],
    )
    memory_ratio = chunked_mem / plain_mem if plain_mem else float("nan")
    time_ratio, sdpa_ratio = (
        times["chunked"] / times["plain"],
        times["chunked"] / times["sdpa"],
    )
    label = f"n={n:,} d={d} chunk={chunk_size}, forward+backward"
    return [
        row(
            NAME,
            f"{label}: extra peak memory, chunked/plain",
            memory_ratio,
            "",
            "<= 0.125",
            memory_ratio <= MEMORY_TARGET,
            f"plain {plain_mem / MIB:.1f} MiB, chunked {chunked_mem / MIB:.1f} MiB, "
            f"SDPA {sdpa_mem / MIB:.1f} MiB",
        ),
        row(
            NAME,
            f"{label}: time, chunked/plain",
            time_ratio,
            "x",
            f"<= {TRAIN_TIME_TARGET}",
            time_ratio <= TRAIN_TIME_TARGET,
            f"plain {times['plain'] * 1e3:.0f} ms, chunked {times['chunked'] * 1e3:.0f} ms",
        ),
        row(
            NAME,
            f"{label}: time, chunked/SDPA",
            sdpa_ratio,
            "x",
            f"report (aim <= {TRAIN_SDPA_AIM})",
            None,
            f"chunked {times['chunked'] * 1e3:.0f} ms, F.scaled_dot_product_attention {times['sdpa'] * 1e3:.0f} ms",
        ),
        row(
            NAME,
            f"{label}: max |grad chunked - grad plain|",
            result["error"],
            "",
            "<= 1e-5",
            result["error"] <= ERROR_TARGET,
        ),
    ]


def run(
    quick: bool = False, sizes=None, chunk_size: int = DEFAULT_CHUNK_SIZE
) -> list:
    sizes = sizes or ((128,) if quick else SIZES)
    d = 8 if quick else 64
    chunk_size = 64 if quick else chunk_size
    rows = []
    for n in sizes:
        rows += forward_rows(n, d, chunk_size, quick)
    rows += training_rows(
        QUICK_TARGET_N if quick else TARGET_N, d, chunk_size, quick
    )
    if quick:  # tiny sizes say nothing about the targets
        for r in rows:
            r["met"] = None
    return rows
