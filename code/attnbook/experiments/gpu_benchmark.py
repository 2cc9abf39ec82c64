"""Time the book's kernels against PyTorch's on a GPU (chapter 16).

    PYTHONPATH=code python -m attnbook.experiments.gpu_benchmark --out F.json

For each n (1,024 to 32,768 by default), dtype (bfloat16, float16), causal
or not, and pass (forward, forward+backward) it times the book's
``flash_attention`` kernels, SDPA's FLASH_ATTENTION, EFFICIENT_ATTENTION and
CUDNN_ATTENTION backends and the book's ``chunked_attention`` (non-causal
only: its causal mask would be an n x n matrix). Each entry: the median of
several timed calls after a warm-up (which also runs Triton's autotuner),
measured with CUDA events; TFLOP/s counting 4 n^2 d per head for the forward
(half of it when causal) and 3.5 times that for forward+backward; the peak
GPU memory above what was allocated before the call; and, for the forward,
the largest difference from SDPA's flash backend. The book's kernels are
timed through ``FlashAttention.apply``: the kernels without the input checks
of ``flash_attention`` (one pass over the inputs for NaN). The JSON records
the device name and the torch, triton and CUDA versions it ran with. It
needs only torch, triton and this package; without a GPU it refuses.
"""

import argparse
import datetime
import hashlib
import json
import statistics
import sys
from pathlib import Path

import torch
import torch.nn.functional as F

from ..core.chunked import chunked_attention
from ..kernels.api import FlashAttention

SIZES = (1024, 2048, 4096, 8192, 16384, 32768)
DTYPES = ("bfloat16", "float16")
IMPLEMENTATIONS = (
    "attnbook flash_attention",
    "sdpa flash",
    "sdpa efficient",
    "sdpa cudnn",
    "attnbook.chunked_attention",
)
BACKENDS = {
    "sdpa flash": "FLASH_ATTENTION",
    "sdpa efficient": "EFFICIENT_ATTENTION",
    "sdpa cudnn": "CUDNN_ATTENTION",
}


def require_gpu() -> None:
    """Refuse clearly on a machine without CUDA."""
    if not torch.cuda.is_available():
        raise SystemExit(
            "gpu_benchmark times GPU kernels: torch.cuda.is_available() is "
            "False here, so there is nothing to time. Run it on a machine "
            "with an NVIDIA GPU (the chapter's CPU checks run the same "
            "kernels under Triton's interpreter)."
        )


def attention_call(name: str, causal: bool):
    """The function (q, k, v) -> output that ``name`` stands for."""
    if name == "attnbook flash_attention":
        return lambda q, k, v: FlashAttention.apply(q, k, v, causal)
    if name == "attnbook.chunked_attention":
        return lambda q, k, v: chunked_attention(q, k, v)
    from torch.nn.attention import SDPBackend, sdpa_kernel

    backend = getattr(SDPBackend, BACKENDS[name])

    def sdpa(q, k, v):
        with sdpa_kernel(backend):
            return F.scaled_dot_product_attention(q, k, v, is_causal=causal)

    return sdpa


def median_ms(step, repeats: int) -> float:
    """Median milliseconds of ``step()`` over ``repeats`` calls (CUDA
    events around each)."""
    times = []
    for _ in range(repeats):
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        start.record()
        step()
        end.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(end))
    return statistics.median(times)


def measure(name, n, dtype, causal, backward, batch, heads, d, repeats):
    """One row of the table (a dict)."""
    g = torch.Generator(device="cuda").manual_seed(0)
    shape = (batch, heads, n, d)
    q, k, v = (
        torch.randn(shape, generator=g, device="cuda", dtype=dtype)
        for _ in range(3)
    )
    row = dict(
        implementation=name,
        dtype=str(dtype).removeprefix("torch."),
        n=n,
        causal=causal,
        batch=batch,
        heads=heads,
        d=d,
        **{"pass": "forward+backward" if backward else "forward"},
    )
    if causal and name == "attnbook.chunked_attention":
        return {**row, "skipped": "needs an n x n causal mask"}
    call = attention_call(name, causal)
    if backward:
        for t in (q, k, v):
            t.requires_grad_()
        grad = torch.randn(shape, generator=g, device="cuda", dtype=dtype)

    def step():
        out = call(q, k, v)
        if backward:
            torch.autograd.grad(out, (q, k, v), grad)
        return out

    try:
        out = step()  # warm-up: compiles and autotunes
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
        before = torch.cuda.memory_allocated()
        step()
        torch.cuda.synchronize()
        peak = (torch.cuda.max_memory_allocated() - before) / 2**20
        ms = median_ms(step, repeats)
    # a backend that refuses a setting, a kernel that fails to compile:
    # recorded in the row, and the benchmark goes on
    except Exception as error:  # noqa: BLE001
        torch.cuda.empty_cache()
        return {**row, "error": f"{type(error).__name__}: {error}"[:300]}
    flops = 4 * batch * heads * n * n * d * (0.5 if causal else 1)
    flops *= 3.5 if backward else 1
    row.update(
        ms=round(ms, 4),
        tflops=round(flops / ms / 1e9, 1),
        peak_mib=round(peak, 1),
    )
    if not backward:
        with torch.no_grad():
            expected = attention_call("sdpa flash", causal)(q, k, v)
        row["max_abs_diff_vs_sdpa_flash"] = float((out - expected).abs().max())
    return row


def run(sizes, dtypes, batch, heads, d, repeats, implementations, log):
    """Every row, in the order measured; yields the rows so far after each
    size (so that a run cut short still leaves a file)."""
    rows = []
    for n in sizes:
        for dtype in dtypes:
            for causal in (False, True):
                for backward in (False, True):
                    for name in implementations:
                        row = measure(
                            name,
                            n,
                            getattr(torch, dtype),
                            causal,
                            backward,
                            batch,
                            heads,
                            d,
                            repeats,
                        )
                        log(row)
                        rows.append(row)
        yield rows


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--sizes", type=int, nargs="+", default=SIZES)
    parser.add_argument("--dtypes", nargs="+", default=DTYPES)
    parser.add_argument("--batch", type=int, default=1)
    parser.add_argument("--heads", type=int, default=16)
    parser.add_argument("--d", type=int, default=64)
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument(
        "--implementations", nargs="+", default=IMPLEMENTATIONS
    )
    args = parser.parse_args(argv)
    require_gpu()

    def log(row):
        shown = row.get("ms", row.get("error", row.get("skipped")))
        print(
            f"{row['implementation']:28} {row['dtype']:9} n={row['n']:6} "
            f"causal={row['causal']!s:5} {row['pass']:17} {shown}",
            flush=True,
        )

    sizes = args.sizes
    for rows in run(
        sizes,
        args.dtypes,
        args.batch,
        args.heads,
        args.d,
        args.repeats,
        args.implementations,
        log,
    ):
        done = sorted({row["n"] for row in rows})
        results = _results(args, argv, rows, complete=done == sorted(sizes))
        text = json.dumps(results, indent=1) + "\n"
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(text)
        print(f"wrote {args.out} (n = {done})", flush=True)
    digest = hashlib.sha256(text.encode()).hexdigest()
    print(
        f"SHA-256 (pin it as GPU_BENCHMARK_SHA256 in "
        f"attnbook/experiments/gpu_timings.py): {digest}"
    )
    return results


def _results(args, argv, rows, complete: bool) -> dict:
    """The JSON document: versions, device, setting and rows."""
    import triton

    return {
        "title": "The book's kernels against PyTorch's on a GPU",
        "source": "python -m attnbook.experiments.gpu_benchmark "
        + " ".join(argv if argv is not None else sys.argv[1:]),
        "date": datetime.date.today().isoformat(),
        "device": torch.cuda.get_device_name(),
        "torch": torch.__version__,
        "triton": triton.__version__,
        "cuda": torch.version.cuda,
        "complete": complete,
        "implementations": {
            "attnbook flash_attention": "the book's Triton kernels "
            "(FlashAttention.apply: no input checks)",
            **{
                k: f"F.scaled_dot_product_attention, {b} backend"
                for k, b in BACKENDS.items()
            },
            "attnbook.chunked_attention": "the book's pure-PyTorch loop, "
            "128-key blocks, recomputing backward",
        },
        "runs": [
            {
                "name": "benchmark",
                "setting": {
                    "timing": f"median of {args.repeats} calls after one "
                    "warm-up, CUDA events",
                    "peak_memory": "max_memory_allocated above the "
                    "allocation before the call, MiB",
                    "flops": "4 n^2 d per head forward (half when causal), "
                    "3.5x for forward+backward",
                },
                "rows": rows,
            }
        ],
    }


if __name__ == "__main__":
    main()
