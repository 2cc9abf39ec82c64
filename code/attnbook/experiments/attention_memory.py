"""The extra peak memory of one attention call, measured in a fresh Python
process."""

import atexit
import json
import os
import subprocess
import sys
import tempfile
import threading

from .._checks import require_int

_MEMORY_SCRIPT = r"""
import json, resource, sys
import torch
import torch.nn.functional as F
from attnbook import attention, chunked_attention

def status(field):
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024
    raise KeyError(field)

def release_free_memory():
    # glibc keeps freed memory for reuse; reusing it would not raise the peak.
    # Hand it back first.
    try:
        import ctypes
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):
        pass

def reset_peak():
    release_free_memory()
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False

def rusage_peak():
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak if sys.platform == "darwin" else peak * 1024

def measure(config):
    WARMUP_SIZE = min(256, min(config["sizes"]))
    dtype = getattr(torch, config["dtype"])
    chunk = config["chunk_size"]
    calls = {
        "attention": lambda q, k, v: attention(q, k, v)[0],
        "chunked_attention": lambda q, k, v: chunked_attention(
            q, k, v, chunk_size=chunk
        ),
        "chunked_attention_autograd": lambda q, k, v: chunked_attention(
            q, k, v, chunk_size=chunk, recompute_backward=False
        ),
        # (batch, heads, n, d): the layout PyTorch's fused CPU kernel accepts.
        "scaled_dot_product_attention": lambda q, k, v: (
            F.scaled_dot_product_attention(
                q[None, None], k[None, None], v[None, None]
            )
        )[0, 0],
    }

    def run(call, q, k, v, backward):
        if not backward:
            with torch.no_grad():
                return call(q, k, v)
        out = call(q, k, v)
        out.backward(grad_output[: out.shape[0]])
        return q.grad

    results = {method: {} for method in config["methods"]}
    for n in config["sizes"]:
        g = torch.Generator().manual_seed(n)
        q, k, v = (
            torch.randn(n, config["d"], generator=g, dtype=dtype)
            for _ in range(3)
        )
        grad_output = torch.randn(n, config["d"], generator=g, dtype=dtype)
        if config["backward"]:
            for t in (q, k, v):
                t.requires_grad_(True)
        for method in config["methods"]:
            call = calls[method]
            # A warm-up call at a small size loads lazily initialised code
            # and touches the BLAS library's packing buffers and the
            # allocator's first arenas: one-time costs that are not
            # attention's memory.
            small = [
                t[:WARMUP_SIZE].detach().requires_grad_(config["backward"])
                for t in (q, k, v)
            ]
            run(call, *small, config["backward"])
            del small
            for t in (q, k, v):
                t.grad = None
            fresh = reset_peak()
            before = status("VmRSS") if fresh else rusage_peak()
            out = run(call, q, k, v, config["backward"])
            after = status("VmHWM") if fresh else rusage_peak()
            results[method][n] = max(after - before, 0)
            del out
            for t in (q, k, v):
                t.grad = None
        del q, k, v
    return results

if len(sys.argv) > 1:  # one request, given on the command line
    print(json.dumps(measure(json.loads(sys.argv[1]))))
else:  # one request a line on stdin, one answer a line on stdout
    import traceback
    for line in sys.stdin:
        try:
            answer = {"results": measure(json.loads(line))}
        except Exception:
            answer = {"error": traceback.format_exc()}
        print(json.dumps(answer), flush=True)
"""

# A fixed mmap threshold (glibc): every buffer over 128 KiB gets pages of its
# own, returned to the system when it is freed. Without it glibc raises the
# threshold after the first large free and serves later buffers from its heap,
# whose holes and retained pages add tens of MiB of noise that belong to the
# allocator's history, not to the algorithm being measured.
_MEASURING_ENV = {**os.environ, "MALLOC_MMAP_THRESHOLD_": "131072"}

MEMORY_METHODS = (
    "attention",
    "chunked_attention",
    "chunked_attention_autograd",
    "scaled_dot_product_attention",
)


def peak_memory(
    methods,
    sizes,
    d: int = 64,
    chunk_size: int = 128,
    dtype: str = "float32",
    backward: bool = False,
    one_process_per_call: bool = False,
) -> dict:
    """Extra peak memory in bytes of one self-attention call, per method and
    sequence length n.

    methods: one of, or a list of, "attention" (plain; its weights are returned
    too), "chunked_attention" (online softmax; its backward recomputes the
    weights block by block), "chunked_attention_autograd" (the same forward,
    differentiated by autograd through every block) and
    "scaled_dot_product_attention" (PyTorch's, on inputs shaped (1, 1, n, d)).
    Queries, keys and values are (n, d) random tensors built before the call.
    With ``backward=True`` they require gradients and the call includes the
    backward pass (``out.backward(grad)`` with a random grad built beforehand);
    the gradients count. The result is the peak resident memory during the call
    minus the memory just before it, measured in a fresh Python process after a
    warm-up call at a small size. On Linux the peak is reset through
    /proc/self/clear_refs before each call, so one process serves every call,
    and it stays for the next ``peak_memory`` (its start, mostly importing
    torch, would cost more than most measurements); elsewhere, or with
    one_process_per_call=True, each call gets its own process. Returns
    {method: {n: bytes}}.
    """
    methods = (methods,) if isinstance(methods, str) else tuple(methods)
    for method in methods:
        if method not in MEMORY_METHODS:
            raise ValueError(
                f"method must be one of {MEMORY_METHODS}, got {method!r}"
            )
    sizes = sorted(int(n) for n in sizes)
    if not sizes or sizes[0] < 8:
        raise ValueError(
            f"sizes must be a non-empty list of lengths >= 8, got {sizes}"
        )
    require_int("chunk_size", chunk_size)
    separate = one_process_per_call or not os.path.exists(
        "/proc/self/clear_refs"
    )
    groups = (
        [((m,), [n]) for n in sizes for m in methods]
        if separate
        else [(methods, sizes)]
    )
    results = {method: {} for method in methods}
    for group_methods, group_sizes in groups:
        config = {
            "methods": group_methods,
            "sizes": group_sizes,
            "d": d,
            "chunk_size": chunk_size,
            "dtype": dtype,
            "backward": bool(backward),
        }
        measured = (
            _measure_in_fresh_process(config)
            if separate
            else _MEASURING_PROCESS.measure(config)
        )
        for method, by_size in measured.items():
            results[method].update(
                {int(n): value for n, value in by_size.items()}
            )
    return results


def start_measuring_process() -> None:
    """Start the process that ``peak_memory`` measures in, and return at
    once: it imports torch (seconds of one core) while the caller goes on.
    Optional: the first ``peak_memory`` starts it otherwise. Does nothing if
    it runs already, or where every call gets a process of its own (no
    /proc/self/clear_refs)."""
    if os.path.exists("/proc/self/clear_refs"):
        _MEASURING_PROCESS.start()


def _failed(config, stderr: str) -> RuntimeError:
    return RuntimeError(
        f"memory measurement failed for {config['methods']} at n="
        f"{config['sizes']}:\n{stderr[-2000:]}"
    )


def _measure_in_fresh_process(config) -> dict:
    """One request in a process of its own."""
    completed = subprocess.run(
        [sys.executable, "-c", _MEMORY_SCRIPT, json.dumps(config)],
        capture_output=True,
        text=True,
        check=False,
        env=_MEASURING_ENV,
    )
    if completed.returncode != 0:
        raise _failed(config, completed.stderr)
    return json.loads(completed.stdout.strip().splitlines()[-1])


class _MeasuringProcess:
    """One fresh Python process, started at the first request and kept for
    the next ones: importing torch costs seconds, more than most
    measurements. Every measurement in it resets the peak and hands freed
    memory back first, as between the calls of one request."""

    def __init__(self):
        self._process = None
        self._stderr = None
        self._lock = threading.Lock()

    def start(self):
        """Start the process unless it runs already; do not wait for it."""
        with self._lock:
            if self._process is None or self._process.poll() is not None:
                self._start()

    def measure(self, config) -> dict:
        with self._lock:
            if self._process is None or self._process.poll() is not None:
                self._start()
            try:
                self._process.stdin.write(json.dumps(config) + "\n")
                self._process.stdin.flush()
                line = self._process.stdout.readline()
            except OSError:
                line = ""
            if not line:  # the process died (killed, out of memory)
                self.close()
                raise _failed(config, self._stderr_text())
            answer = json.loads(line)
            if "error" in answer:
                raise _failed(config, answer["error"])
            return answer["results"]

    def _start(self):
        self.close()
        self._stderr = tempfile.TemporaryFile(mode="w+")
        self._process = subprocess.Popen(
            [sys.executable, "-c", _MEMORY_SCRIPT],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._stderr,
            text=True,
            env=_MEASURING_ENV,
        )

    def _stderr_text(self) -> str:
        if self._stderr is None:
            return ""
        self._stderr.seek(0)
        return self._stderr.read()

    def close(self):
        """End the process (it also ends by itself when its input closes)."""
        process, self._process = self._process, None
        if process is not None:
            try:
                process.stdin.close()
                process.wait(timeout=10)
            except (OSError, subprocess.TimeoutExpired):
                process.kill()
                process.wait()
            process.stdout.close()


_MEASURING_PROCESS = _MeasuringProcess()
atexit.register(_MEASURING_PROCESS.close)
