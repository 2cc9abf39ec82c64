"""Attention at scale: chunked attention with an online softmax, and tools to measure it.

Plain attention builds the whole score matrix, (..., n_q, n_k) numbers, before
its softmax. ``chunked_attention`` feeds the keys and values in blocks of
``chunk_size`` to a ``StreamingAttention``, which keeps three running
quantities per query: the largest score seen so far, the sum of exponentials
relative to it, and the matching weighted sum of values. When a new block
raises the maximum, the old sums are rescaled by exp(old max - new max). The
result equals the softmax exactly (up to float rounding) while only one score
block of (..., n_q, chunk_size) numbers exists at a time.

Masks follow the book (True = keep). Masked scores are set to the dtype's most
negative finite number, never -inf, so no step computes inf - inf = NaN, in any
dtype; a query with every key masked gets a zero output, as in ``attention``.

The last part measures cost: ``score_matrix_bytes`` (exact bytes of one score
block), ``interleaved_medians`` (side-by-side timings) and ``peak_memory``
(extra peak memory of a call, measured in a fresh Python process).
"""

import json
import math
import os
import statistics
import subprocess
import sys
import time

import torch

from ._checks import require_bool_mask, require_float, require_int, require_positive, require_same_size, require_sequences
from .scoring import dot_score

DEFAULT_CHUNK_SIZE = 128


def _lowest(dtype: torch.dtype) -> float:
    """The most negative finite number of ``dtype``: exp(lowest - m) is 0, and never NaN."""
    return torch.finfo(dtype).min


class StreamingAttention:
    """Scaled dot-product attention for fixed queries, fed the keys one block at a time.

    queries: (..., n_q, d). Call ``update(keys, values, mask)`` with blocks
    keys (..., c, d), values (..., c, d_v) and an optional boolean mask
    broadcastable to (..., n_q, c), True = keep; then ``output()`` returns
    (..., n_q, d_v), equal to ``attention`` over all the blocks together.
    The state, per query: ``maximum`` (..., n_q, 1), the largest kept score so far
    (the dtype's lowest finite number while nothing is kept); ``total`` (..., n_q, 1),
    the sum of exp(score - maximum); ``weighted`` (..., n_q, d_v), the sum of
    exp(score - maximum) * value. Memory: O(n_q * (c + d_v)), whatever the number of keys.
    """

    def __init__(self, queries: torch.Tensor):
        require_float("queries", queries)
        if queries.dim() < 2:
            raise ValueError(f"queries need shape (..., n_q, d), got {tuple(queries.shape)}")
        # The scaling of scaled_dot_score, applied once: dot_score(q / sqrt(d), k) per block.
        self.scaled_queries = queries * (1.0 / math.sqrt(queries.shape[-1]))
        self.lowest = _lowest(queries.dtype)
        self.maximum = torch.full((*queries.shape[:-1], 1), self.lowest, dtype=queries.dtype, device=queries.device)
        self.total = torch.zeros_like(self.maximum)
        self.weighted = None
        self.blocks = 0

    def update(self, keys: torch.Tensor, values: torch.Tensor, mask: torch.Tensor | None = None) -> "StreamingAttention":
        """Fold one block of keys (..., c, d) and values (..., c, d_v) into the running state."""
        _check_block(self.scaled_queries, keys, values)
        scores = dot_score(self.scaled_queries, keys)  # (..., n_q, c): the only n_q x c buffer
        if mask is not None:
            require_bool_mask(mask, scores.shape)
            scores.masked_fill_(~mask, self.lowest)
        # The maximum only keeps exp() in range; the result does not depend on it, so no gradient flows through it.
        new_maximum = torch.maximum(self.maximum, scores.detach().amax(dim=-1, keepdim=True))
        # Rows with nothing kept yet still hold `lowest`: shift them by 0, so exp(lowest - 0) = 0 (not exp(0) = 1).
        shift = new_maximum.masked_fill(new_maximum == self.lowest, 0.0) if mask is not None else new_maximum
        rescale = torch.exp(self.maximum - shift)  # <= 1: how much the old sums shrink
        weights = scores.sub_(shift).exp_()  # exp(score - maximum), in place: no second buffer
        self.total = self.total * rescale + weights.sum(dim=-1, keepdim=True)
        block_output = weights @ values
        self.weighted = block_output if self.weighted is None else self.weighted * rescale + block_output
        self.maximum = new_maximum
        self.blocks += 1
        return self

    def output(self) -> torch.Tensor:
        """The attention output (..., n_q, d_v): weighted / total, and 0 where nothing was kept."""
        if self.weighted is None:
            raise ValueError("no key block yet: call update(keys, values) at least once")
        total = self.total
        return self.weighted / torch.where(total > 0, total, torch.ones_like(total))


def _check_block(queries: torch.Tensor, keys: torch.Tensor, values: torch.Tensor) -> None:
    """Float tensors of one dtype, (..., n, d) shaped, matching sizes and broadcastable batches."""
    require_sequences(queries=queries, keys=keys, values=values)
    for name, tensor in (("keys", keys), ("values", values)):
        if tensor.dtype != queries.dtype:
            raise TypeError(f"queries and {name} must share a dtype, got {queries.dtype} and {tensor.dtype}")
    require_same_size("feature sizes of queries and keys", "queries", queries.shape[-1], "keys", keys.shape[-1])
    require_same_size("number of keys and values", "keys", keys.shape[-2], "values", values.shape[-2])


def _mask_block(mask: torch.Tensor | None, start: int, stop: int) -> torch.Tensor | None:
    """Columns start:stop of a mask broadcastable to (..., n_q, n_k) (a size-1 last axis is kept)."""
    if mask is None or mask.dim() == 0 or mask.shape[-1] == 1:
        return mask
    return mask[..., start:stop]


def chunked_attention(queries, keys, values, mask=None, chunk_size: int = DEFAULT_CHUNK_SIZE) -> torch.Tensor:
    """Scaled dot-product attention computed over blocks of ``chunk_size`` keys (online softmax).

    queries: (..., n_q, d), keys: (..., n_k, d), values: (..., n_k, d_v), one float dtype.
    mask: boolean, True = keep, broadcastable to the scores (..., n_q, n_k).
    Returns the output (..., n_q, d_v), equal to ``attention(queries, keys, values,
    mask=mask)[0]`` (scores scaled by 1/sqrt(d)) up to float rounding; a query whose
    keys are all masked gets zeros. Only one (..., n_q, chunk_size) score block is
    alive at a time, so the extra memory is O(n_q * chunk_size), not O(n_q * n_k).
    The weights are never formed as a whole, so unlike ``attention`` none are returned.
    """
    require_float("queries", queries)
    if queries.dim() < 2:
        raise ValueError(f"queries need shape (..., n_q, d), got {tuple(queries.shape)}")
    _check_block(queries, keys, values)
    if isinstance(chunk_size, bool) or not isinstance(chunk_size, int):
        raise TypeError(f"chunk_size must be an int, got {type(chunk_size).__name__}")
    require_positive("chunk_size", chunk_size)
    batch = torch.broadcast_shapes(queries.shape[:-2], keys.shape[:-2], values.shape[:-2])
    n_q, n_k = queries.shape[-2], keys.shape[-2]
    if mask is not None:  # as in attention: the mask may not enlarge the scores (..., n_q, n_k)
        require_bool_mask(mask, torch.Size((*torch.broadcast_shapes(queries.shape[:-2], keys.shape[:-2]), n_q, n_k)))
    if n_k == 0:
        return queries.new_zeros((*batch, n_q, values.shape[-1]))
    state = StreamingAttention(queries)
    for start in range(0, n_k, chunk_size):
        stop = min(start + chunk_size, n_k)
        state.update(keys[..., start:stop, :], values[..., start:stop, :], _mask_block(mask, start, stop))
    output = state.output()
    return output.expand(*batch, n_q, values.shape[-1]) if output.shape[:-2] != batch else output


# ----------------------------------------------------------------------------------------------
# Measuring the cost
# ----------------------------------------------------------------------------------------------


def score_matrix_bytes(n_q: int, n_k: int, chunk_size: int | None = None, dtype: torch.dtype = torch.float32) -> int:
    """Bytes of one block of scores: n_q x n_k numbers, or n_q x min(chunk_size, n_k) when chunked."""
    require_int("n_q", n_q, minimum=0)
    require_int("n_k", n_k, minimum=0)
    columns = n_k if chunk_size is None else min(require_positive("chunk_size", chunk_size), n_k)
    return n_q * columns * torch.empty((), dtype=dtype).element_size()


def interleaved_medians(functions: dict, repeats: int = 5, warmup: int = 1) -> dict:
    """Median wall time in seconds of each zero-argument function, measured side by side.

    Each repetition runs every function once, in an order that rotates between
    repetitions, so a change in machine load affects all of them alike; compare
    ratios of the medians rather than absolute times.
    """
    if not functions:
        raise ValueError("functions is empty: nothing to time")
    require_int("repeats", repeats)
    names = list(functions)
    for _ in range(warmup):
        for name in names:
            functions[name]()
    samples = {name: [] for name in names}
    for repeat in range(repeats):
        shift = repeat % len(names)
        for name in names[shift:] + names[:shift]:
            start = time.perf_counter()
            functions[name]()
            samples[name].append(time.perf_counter() - start)
    return {name: statistics.median(times) for name, times in samples.items()}


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
    # glibc keeps freed memory for reuse; reusing it would not raise the peak. Hand it back first.
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

config = json.loads(sys.argv[1])
dtype = getattr(torch, config["dtype"])
calls = {
    "attention": lambda q, k, v: attention(q, k, v)[0],
    "chunked_attention": lambda q, k, v: chunked_attention(q, k, v, chunk_size=config["chunk_size"]),
    # (batch, heads, n, d): the layout PyTorch's fused CPU kernel accepts.
    "scaled_dot_product_attention": lambda q, k, v: F.scaled_dot_product_attention(q[None, None], k[None, None], v[None, None]),
}
results = {method: {} for method in config["methods"]}
for n in config["sizes"]:
    g = torch.Generator().manual_seed(n)
    q, k, v = (torch.randn(n, config["d"], generator=g, dtype=dtype) for _ in range(3))
    for method in config["methods"]:
        call = calls[method]
        with torch.no_grad():
            call(q[:8], k[:8], v[:8])  # a warm-up call on a few queries loads lazily initialised code first
            fresh = reset_peak()
            before = status("VmRSS") if fresh else rusage_peak()
            out = call(q, k, v)
            after = status("VmHWM") if fresh else rusage_peak()
        results[method][n] = max(after - before, 0)
        del out
    del q, k, v
print(json.dumps(results))
"""

MEMORY_METHODS = ("attention", "chunked_attention", "scaled_dot_product_attention")


def peak_memory(methods, sizes, d: int = 64, chunk_size: int = DEFAULT_CHUNK_SIZE, dtype: str = "float32",
                one_process_per_call: bool = False) -> dict:
    """Extra peak memory in bytes of one self-attention call, per method and sequence length n.

    methods: one of, or a list of, "attention" (plain; its weights are returned too),
    "chunked_attention" and "scaled_dot_product_attention" (PyTorch's, on inputs shaped
    (1, 1, n, d)). Queries, keys and values are (n, d) random tensors built before the
    call; the result is the peak resident memory during the call minus the memory just
    before it, measured in a fresh Python process. On Linux the peak is reset through
    /proc/self/clear_refs before each call, so one process serves every call; elsewhere,
    or with one_process_per_call=True, each call gets its own process.
    Returns {method: {n: bytes}}.
    """
    methods = (methods,) if isinstance(methods, str) else tuple(methods)
    for method in methods:
        if method not in MEMORY_METHODS:
            raise ValueError(f"method must be one of {MEMORY_METHODS}, got {method!r}")
    sizes = sorted(int(n) for n in sizes)
    if not sizes or sizes[0] < 8:
        raise ValueError(f"sizes must be a non-empty list of lengths >= 8, got {sizes}")
    separate = one_process_per_call or not os.path.exists("/proc/self/clear_refs")
    groups = [((m,), [n]) for n in sizes for m in methods] if separate else [(methods, sizes)]
    results = {method: {} for method in methods}
    for group_methods, group_sizes in groups:
        config = {"methods": group_methods, "sizes": group_sizes, "d": d, "chunk_size": chunk_size, "dtype": dtype}
        completed = subprocess.run(
            [sys.executable, "-c", _MEMORY_SCRIPT, json.dumps(config)], capture_output=True, text=True, check=False
        )
        if completed.returncode != 0:
            raise RuntimeError(
                f"memory measurement failed for {group_methods} at n={group_sizes}:\n{completed.stderr[-2000:]}"
            )
        for method, by_size in json.loads(completed.stdout.strip().splitlines()[-1]).items():
            results[method].update({int(n): value for n, value in by_size.items()})
    return results
