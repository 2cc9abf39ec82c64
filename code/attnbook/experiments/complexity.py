"""CNN vs RNN vs self-attention: exact path lengths and operation counts,
measured times.

Three layers that map a sequence x (B, n, dim) to a sequence of the same shape:
a stack of 1-D convolutions, an Elman RNN and single-head self-attention. The
exact quantities (longest path, multiply-adds) come from formulas that are
checked against the real layers; the forward times are measured, so they are
noisy and only their log-log slopes are meant to be read.
"""

import math
import statistics
import time

import torch
from torch import nn

from .._checks import (
    is_finite_number,
    require_callable,
    require_float,
    require_int,
    require_module_dtype,
)
from .._memory import require_matrix_fits, require_weights_fit
from .._random import restores_rng_on_error, seeded, seeded_generator
from ..measure.threads import single_thread, torch_threads
from ..measure.timing import (
    calls_per_sample,
    mean_call_time,
    median_call_time,
    require_count,
)
from ..nn.self_attention import SelfAttention

LAYER_NAMES = ("CNN", "RNN", "self-attention")


def _check_kernel(kernel_size) -> int:
    require_int("kernel_size", kernel_size, 3)
    if kernel_size % 2 == 0:
        raise ValueError(
            "kernel_size must be odd (centred, 'same' padding), got "
            f"{kernel_size}"
        )
    return kernel_size


def _check_batch(module, x, dim: int) -> None:
    """x: float (B, n, dim) with n >= 1, in the module's dtype."""
    require_float("x", x)
    if x.dim() != 3 or x.shape[1] == 0 or x.shape[2] != dim:
        raise ValueError(
            f"x must have shape (B, n, {dim}) with n >= 1, got "
            f"{tuple(x.shape)}"
        )
    require_module_dtype(module, x=x)


class ConvStack(nn.Module):
    """``num_layers`` Conv1d layers (odd kernel, 'same' padding) with tanh
    between them.

    x: (B, n, dim) -> (B, n, dim). Each layer lets a position see (kernel_size
    - 1) / 2 more neighbours on each side.
    """

    @restores_rng_on_error
    def __init__(self, dim: int, num_layers: int = 1, kernel_size: int = 3):
        super().__init__()
        require_int("dim", dim, 1)
        require_int("num_layers", num_layers, 1)
        require_int("kernel_size", kernel_size, 1)
        require_weights_fit(
            f"{num_layers} conv layers",
            (num_layers, dim * dim * kernel_size + dim),
        )
        self.kernel_size = _check_kernel(kernel_size)
        self.layers = nn.ModuleList(
            nn.Conv1d(dim, dim, kernel_size, padding=kernel_size // 2)
            for _ in range(num_layers)
        )

    def states(self, x: torch.Tensor):
        """Yield the output (B, n, dim) after each layer in turn: depth 1,
        2, ..."""
        _check_batch(self, x, self.layers[0].in_channels)
        h = x.transpose(-1, -2)  # Conv1d wants (B, channels, n)
        for i, layer in enumerate(self.layers):
            h = layer(h) if i == 0 else layer(torch.tanh(h))
            yield h.transpose(-1, -2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for h in self.states(x):
            pass
        return h


class RecurrentLayer(nn.Module):
    """An Elman RNN z_t = tanh(W x_t + U z_{t-1} + b); x: (B, n, dim) -> all
    states (B, n, dim)."""

    @restores_rng_on_error
    def __init__(self, dim: int):
        super().__init__()
        require_int("dim", dim, 1)
        require_weights_fit("RecurrentLayer", (2 * dim + 2, dim))
        self.rnn = nn.RNN(dim, dim, batch_first=True)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        _check_batch(self, x, self.rnn.input_size)
        return self.rnn(x)[0]


class SelfAttentionLayer(nn.Module):
    """``SelfAttention(dim)`` returning only its output: x (B, n, dim) ->
    (B, n, dim)."""

    @restores_rng_on_error
    def __init__(self, dim: int):
        super().__init__()
        self.attention = SelfAttention(dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.attention(x)[0]


def comparison_layers(
    dim: int, kernel_size: int = 3, conv_layers: int = 1, seed: int = 0
) -> dict:
    """The three layers at equal width ``dim``, seeded: {"CNN": ..., "RNN":
    ..., "self-attention": ...}."""
    # seeded here (other threads wait); the reader's random stream is restored
    with seeded(seed):
        return {
            "CNN": ConvStack(dim, conv_layers, kernel_size),
            "RNN": RecurrentLayer(dim),
            "self-attention": SelfAttentionLayer(dim),
        }


# ---------------------------------------------------------------- exact counts


def _check_path_args(n, kernel_size=3) -> None:
    require_int("n", n, 2)
    _check_kernel(kernel_size)


def _check_count_args(n, dim, kernel_size=3) -> None:
    require_int("n", n, 1)
    require_int("dim", dim, 1)
    _check_kernel(kernel_size)


def longest_path(n: int, kernel_size: int = 3) -> dict:
    """Layer applications on the shortest route from input 1 to output n.

    CNN (centred kernel of odd size k): each layer lets a position see
    (k-1)/2 more positions to each side, so output n sees input 1 after
    ceil((n-1) / ((k-1)/2)) layers. RNN: the cell is applied n times along
    x_1 -> z_1 -> ... -> z_n. Self-attention: 1 (every position sees every
    other in one layer).
    """
    _check_path_args(n, kernel_size)
    reach = (kernel_size - 1) // 2
    return {"CNN": math.ceil((n - 1) / reach), "RNN": n, "self-attention": 1}


def sequential_operations(n: int) -> dict:
    """Steps that must run one after another in one layer: O(1) / O(n) /
    O(1)."""
    require_int("n", n, 1)
    return {"CNN": 1, "RNN": n, "self-attention": 1}


def multiply_adds(n: int, dim: int, kernel_size: int = 3) -> dict:
    """Exact multiply-adds of one forward pass of each layer, biases ignored.

    CNN layer: k n d^2. RNN: 2 n d^2 (input and recurrent matrices).
    Self-attention: 3 n d^2 for Q, K, V plus n^2 d for Q K^T and n^2 d for
    weights @ V (2 n^2 d in all, 4 n^2 d floating-point operations); the
    table's O(n^2 d) is the second term, which dominates once n > 1.5 d.
    """
    _check_count_args(n, dim, kernel_size)
    k, d = kernel_size, dim
    sa = 3 * n * d**2 + 2 * n**2 * d  # projections, then Q K^T and A V
    return {"CNN": k * n * d**2, "RNN": 2 * n * d**2, "self-attention": sa}


def _check_layer_probe(layer, n, dim, seed) -> None:
    """layer callable (a module: float64 parameters); n, dim >= 1, seed >= 0;
    the input (1, n, dim) within the memory limit."""
    if not callable(layer):
        raise TypeError(f"layer must be callable, got {type(layer).__name__}")
    require_int("n", n)
    require_int("dim", dim)
    require_int("seed", seed, minimum=0)
    require_matrix_fits("the input", (n, dim), torch.float64)
    if isinstance(layer, nn.Module):
        require_module_dtype(layer, x=torch.empty(0, dtype=torch.float64))


def sees_first_position(layer, n: int, dim: int, seed: int = 0) -> bool:
    """Does output position n-1 of ``layer`` depend on input position 0?
    (exact, via autograd)

    layer: any callable (B, n, dim) -> (B, n, dim). The gradient of the last
    output with respect to the first input is exactly zero when no path
    connects them.
    """
    _check_layer_probe(layer, n, dim, seed)
    x = torch.randn(
        1,
        n,
        dim,
        generator=seeded_generator(seed),
        dtype=torch.float64,
    )
    x.requires_grad_(True)
    layer(x)[0, -1].sum().backward()
    return bool(x.grad[0, 0].abs().sum() > 0)


def conv_layers_to_connect(
    n: int, kernel_size: int = 3, dim: int = 2, seed: int = 0
) -> int:
    """Smallest number of conv layers whose stack connects input 1 to output n,
    found by autograd.

    Runs one seeded stack of n layers layer by layer and, after each, asks
    autograd whether the last output already depends on the first input.
    """
    require_int("n", n, 2)
    with seeded(seed):
        stack = ConvStack(dim, n, kernel_size).double()
    x = torch.randn(
        1,
        n,
        dim,
        generator=seeded_generator(seed),
        dtype=torch.float64,
    )
    x.requires_grad_(True)
    with (
        single_thread()
    ):  # tiny tensors: one thread avoids needless OpenMP start-up
        for depth, h in enumerate(stack.states(x), start=1):
            (grad,) = torch.autograd.grad(h[0, -1].sum(), x, retain_graph=True)
            if grad[0, 0].abs().sum() > 0:
                return depth
    raise RuntimeError(
        f"no stack of up to {n} layers connects {n} positions"
    )  # unreachable


# --- measured times


def median_forward_time(
    layer, x: torch.Tensor, repeats: int = 5, min_seconds: float = 2e-3
) -> float:
    """Median over ``repeats`` of the time of one ``layer(x)`` call, in seconds
    (no autograd).

    Fast calls are looped so that each sample lasts at least ``min_seconds``.
    """
    require_callable(layer=layer)
    require_float("x", x)
    require_count("repeats", repeats)
    with torch.inference_mode():
        _check_layer_takes(layer, x)
        return median_call_time(lambda: layer(x), repeats, min_seconds)


def _check_layer_takes(layer, x) -> None:
    """One untimed call of layer(x); its failure, e.g. a feature size the
    layer does not take, becomes a ValueError naming both."""
    try:
        layer(x)
    except (RuntimeError, ValueError, TypeError, IndexError) as error:
        raise ValueError(
            f"layer ({type(layer).__name__}) cannot take x of shape "
            f"{tuple(x.shape)}: {error}"
        ) from error


def time_layers(
    lengths,
    dim: int = 64,
    conv_layers: int = 4,
    repeats: int = 5,
    seed: int = 0,
    threads: int | None = 1,
    min_seconds: float = 2e-3,
    statistic: str = "median",
    clock: str = "wall",
    warmup_calls: int = 3,
) -> dict:
    """Median (or fastest) forward time (s) of each comparison layer for every
    length in ``lengths``.

    The CNN is a fixed stack of ``conv_layers`` Conv1d layers (kernel 3). Each
    input is one seeded sequence of shape (1, n, dim). ``threads`` intra-op
    threads (1 by default, so the layers are compared on the work they do, not
    on how well they use the cores). The repeats are interleaved (round r times
    every layer at every length before round r + 1 starts), so a burst of load
    from other programs spoils one sample of many points instead of every
    sample of one point; the median then discards it. ``statistic="min"`` keeps
    the fastest sample instead: load from other programs only ever adds time,
    so on a busy machine the minimum is the least disturbed measurement.
    ``clock="cpu"`` (only with ``threads=1``) measures the processor time of
    the calling thread (``time.thread_time``), which does not count the time
    the thread waits while other programs run; ``clock="wall"`` measures
    elapsed time (``time.perf_counter``). Before any timing, every layer runs
    ``warmup_calls`` times at every length, untimed, so that one-time costs
    (allocations, first-call set-up) do not land in the first samples; and
    each sample starts after one more untimed call, so a short call does not
    pay for the caches a long call before it emptied.
    Returns {name: [seconds per length]}.
    """
    require_count("repeats", repeats)
    require_count("warmup_calls", warmup_calls, minimum=0)
    if statistic not in ("median", "min"):
        raise ValueError(
            f"statistic must be 'median' or 'min', got {statistic!r}"
        )
    if clock not in ("wall", "cpu") or (clock == "cpu" and threads != 1):
        raise ValueError(
            "clock must be 'wall', or 'cpu' with threads=1; got clock="
            f"{clock!r}, threads={threads!r}"
        )
    pick = statistics.median if statistic == "median" else min
    timer = time.perf_counter if clock == "wall" else time.thread_time
    if not isinstance(lengths, (list, tuple, range)):
        raise TypeError(f"lengths must be a list of ints, got {lengths!r:.40}")
    for n in lengths:
        require_int("sequence length", n, 1)
    layers = comparison_layers(dim, conv_layers=conv_layers, seed=seed)
    generator = seeded_generator(seed)
    inputs = [torch.randn(1, n, dim, generator=generator) for n in lengths]
    jobs = [(name, i) for name in layers for i in range(len(lengths))]
    samples = {job: [] for job in jobs}
    with torch_threads(threads), torch.inference_mode():
        for _ in range(warmup_calls):  # first calls pay one-time costs
            for name, i in jobs:
                layers[name](inputs[i])
        numbers = {
            (name, i): calls_per_sample(
                lambda f=layers[name], x=inputs[i]: f(x), min_seconds
            )
            for name, i in jobs
        }
        for _ in range(repeats):
            for name, i in jobs:
                layers[name](inputs[i])  # untimed: caches refilled
                samples[name, i].append(
                    mean_call_time(
                        lambda f=layers[name], x=inputs[i]: f(x),
                        numbers[name, i],
                        timer,
                    )
                )
    return {
        name: [pick(samples[name, i]) for i in range(len(lengths))]
        for name in layers
    }


def _numbers(name: str, values) -> torch.Tensor:
    """A list (or tensor) of real numbers as float64."""
    items = values.tolist() if hasattr(values, "tolist") else values
    if not isinstance(items, (list, tuple, range)) or not all(
        is_finite_number(v) for v in items
    ):
        raise TypeError(
            f"{name} must be a list of numbers, got {values!r:.40}"
        )
    return torch.as_tensor(values, dtype=torch.float64)


def loglog_slope(lengths, times) -> float:
    """Least-squares slope p of log(time) = p log(n) + c: time grows like
    n^p."""
    n, t = _numbers("lengths", lengths), _numbers("times", times)
    if n.shape == t.shape and (not (n > 0).all() or n.unique().numel() < 2):
        raise ValueError(
            "lengths must be positive and not all equal (the slope is "
            f"undefined otherwise), got {n.tolist()}"
        )
    n = n.log()
    if n.shape != t.shape or n.numel() < 2:
        raise ValueError(
            f"need as many times as lengths (at least 2), got {tuple(t.shape)}"
            f" and {tuple(n.shape)}"
        )
    if not (t > 0).all():
        raise ValueError("times must be positive")
    t = t.log()
    n_centred = n - n.mean()
    return float((n_centred * (t - t.mean())).sum() / (n_centred**2).sum())
