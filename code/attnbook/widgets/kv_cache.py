"""Chapter 13 explorer: how big a key-value cache gets, and how many
sequences fit beside the weights.

The model is fixed, a 32-layer model with 32 query heads of 128 (the shape of
Llama 2 7B and Llama 3 8B, 16 GB of 16-bit weights); the controls choose how
it caches: the number of key-value heads, a sliding window and which layers
use it (every layer, as Mistral 7B, or local:global patterns as Gemma 2 and
gpt-oss (1:1) and Gemma 3 (5:1)), the bits per cached number, the context
length and the accelerator's memory.
"""

import functools

import matplotlib.pyplot as plt

from .._checks import require_int_in
from ..measure.kv_cache import hybrid_cache_bytes, kv_cache_bytes
from ._explorer import live_explorer
from ._frames import Choices
from ._live import draws_view

LAYERS, HEADS, HEAD_DIM = 32, 32, 128
WEIGHTS_BYTES = 16 * 10**9  # 8 billion parameters in 16-bit numbers
KV_HEADS = (32, 8, 4, 1)
WINDOWS = (0, 1024, 4096)  # 0: no window
PATTERNS = (None, 1, 5)  # local layers per global one; None: all local
CACHE_BITS = (16, 8, 4)
CONTEXTS = (4096, 32768, 131072)
MEMORIES_GB = (24, 80)
_CURVE = [2**p for p in range(10, 18)]  # 1,024 ... 131,072 tokens
_GIB = 2**30


def kv_cache_view(
    num_kv_heads: int = 8,
    window: int = 0,
    context: int = 32768,
    memory_gb: int = 80,
    local_per_global: int | None = None,
    cache_bits: int = 16,
) -> dict:
    """Cache bytes per sequence for the explorer's model (``LAYERS`` layers,
    ``HEADS`` query heads of ``HEAD_DIM``) with ``num_kv_heads`` key-value
    heads, a sliding ``window`` (0: none) in every layer (``local_per_global``
    None) or in ``local_per_global`` layers out of every
    ``local_per_global + 1`` (the others global), numbers of ``cache_bits``
    bits (16, 8 or 4), at ``context`` tokens; ``batch``: how many such
    sequences fit in ``memory_gb`` GB beside the weights; the same bytes over
    ``lengths`` for the plot, with and without these savings (``curve``,
    ``curve_mha``: 32 kv heads, 16 bits, no window)."""
    require_int_in("num_kv_heads", num_kv_heads, 1, HEADS)
    if HEADS % num_kv_heads:
        raise ValueError(
            f"num_kv_heads must divide {HEADS}, got {num_kv_heads}"
        )
    require_int_in("window", window, 0, 2**20)
    require_int_in("context", context, 1, 2**24)
    require_int_in("memory_gb", memory_gb, 1, 10**4)
    if local_per_global is not None:
        require_int_in("local_per_global", local_per_global, 1, LAYERS - 1)
    if cache_bits not in CACHE_BITS:
        raise ValueError(
            f"cache_bits must be one of {CACHE_BITS}, got {cache_bits!r}"
        )

    def cache(kv_heads, n):
        numbers = _cached_numbers(kv_heads, n, window, local_per_global)
        return numbers * cache_bits // 8

    per_sequence = cache(num_kv_heads, context)
    free = memory_gb * 10**9 - WEIGHTS_BYTES
    return {
        "setting": (num_kv_heads, window, context, memory_gb),
        "pattern": (local_per_global, cache_bits),
        "bytes": per_sequence,
        "per_token": cache(num_kv_heads, 1),
        "batch": max(0, free // per_sequence),
        "free_bytes": free,
        "lengths": _CURVE,
        "curve": [cache(num_kv_heads, n) for n in _CURVE],
        "curve_mha": [
            kv_cache_bytes(LAYERS, HEADS, HEAD_DIM, n) for n in _CURVE
        ],
    }


def _cached_numbers(kv_heads, n, window, local_per_global) -> int:
    """Numbers (not bytes) the explorer's model caches for n tokens."""
    if not window:
        return kv_cache_bytes(LAYERS, kv_heads, HEAD_DIM, n, dtype_bytes=1)
    if local_per_global is None:
        return kv_cache_bytes(
            LAYERS, kv_heads, HEAD_DIM, n, dtype_bytes=1, window=window
        )
    return hybrid_cache_bytes(
        LAYERS, kv_heads, HEAD_DIM, n, window, local_per_global, dtype_bytes=1
    )


@draws_view
def plot_kv_cache(view: dict):
    """Cache GiB per sequence against the context (log-log): plain
    multi-head (grey), the chosen setting (blue), the memory left beside the
    weights (dotted), the chosen context (dot)."""
    fig, ax = plt.subplots(figsize=(8, 3.4))
    gib = [b / _GIB for b in view["curve_mha"]]
    ax.loglog(
        view["lengths"], gib, color="0.6",
        label="32 kv heads, 16 bits, no window",
    )  # fmt: skip
    ax.loglog([], [], color="C0", lw=2, label="this setting")
    ax.plot([], [], "o", color="C0")
    ax.axhline(0, color="C3", ls=":", label="memory beside the weights")
    ax.set_xlim(800, 170000)
    ax.set_ylim(0.005, 200)
    ax.set_xlabel("context length (tokens)")
    ax.set_ylabel("cache per sequence (GiB)")
    # below the axes: no line ever crosses it, so it is never redrawn
    fig.legend(fontsize=8, loc="lower center", ncol=3, frameon=False)
    ax.set_title(" ", fontsize=9)
    fig.subplots_adjust(left=0.1, right=0.97, top=0.88, bottom=0.25)
    update_kv_cache_figure(fig, view)
    return fig


@draws_view
def update_kv_cache_figure(fig, view: dict) -> list:
    """Show ``view`` in a figure made by ``plot_kv_cache``; returns the
    artists that changed."""
    (ax,) = fig.axes
    _, curve, point, free = ax.lines
    curve.set_data(view["lengths"], [b / _GIB for b in view["curve"]])
    point.set_data([view["setting"][2]], [view["bytes"] / _GIB])
    free.set_ydata([view["free_bytes"] / _GIB] * 2)
    kv_heads, window, context, memory = view["setting"]
    pattern, bits = view.get("pattern", (None, 16))
    shape = f"{kv_heads} kv heads" + (f", window {window:,}" if window else "")
    if window and pattern:
        shape += f" ({pattern}:1 local:global)"
    elif pattern:
        shape += f" ({pattern}:1 local:global needs a window)"
    shape += f", {bits}-bit" if bits != 16 else ""
    ax.title.set_text(
        f"{shape}: {view['per_token'] / 2**10:.0f} KiB per token, "
        f"{view['bytes'] / _GIB:.2f} GiB at {context:,} tokens; "
        f"{view['batch']:,} sequences fit in {memory} GB"
    )
    return [curve, point, free, ax.title]


def kv_cache_explorer(
    num_kv_heads: int = 8,
    window: int = 0,
    context: int = 32768,
    memory_gb: int = 80,
    local_per_global: int | None = None,
    cache_bits: int = 16,
):
    """Buttons for the key-value heads, the window, the local:global
    pattern, the bits per cached number, the context and the memory;
    redraws the cache's size and the batch that fits."""
    options = {
        "num_kv_heads": [(str(g), g) for g in KV_HEADS],
        "window": [("none", 0)] + [(f"{w:,}", w) for w in WINDOWS[1:]],
        "local_per_global": [("all", None)]
        + [(f"{k}:1", k) for k in PATTERNS[1:]],
        "cache_bits": [(f"{b}", b) for b in CACHE_BITS],
        "context": [(f"{n // 1024}k", n) for n in CONTEXTS],
        "memory_gb": [(f"{m} GB", m) for m in MEMORIES_GB],
    }
    labels = {
        "num_kv_heads": "kv heads",
        "window": "window",
        "local_per_global": "local:global",
        "cache_bits": "bits",
        "context": "context",
        "memory_gb": "memory",
    }
    first = {
        "num_kv_heads": num_kv_heads,
        "window": window,
        "local_per_global": local_per_global,
        "cache_bits": cache_bits,
        "context": context,
        "memory_gb": memory_gb,
    }
    return live_explorer(
        _controls(options, labels, first),
        # the book's pages draw every frame at this memory (a control with
        # one value could not move); a live control overrides it
        functools.partial(kv_cache_view, memory_gb=memory_gb),
        plot_kv_cache,
        update_kv_cache_figure,
        frames=_frame_grid(options, labels, first),
    )


def _controls(options: dict, labels: dict, first: dict) -> dict:
    """Toggle buttons for every control, a slider for the context."""
    import ipywidgets as widgets

    controls = {}
    for name, choices in options.items():
        slider = name == "context"
        kind = widgets.SelectionSlider if slider else widgets.ToggleButtons
        extra = {"continuous_update": False} if slider else {}
        controls[name] = kind(
            options=choices, value=first[name], description=labels[name],
            **extra,
        )  # fmt: skip
    return controls


def _frame_grid(options: dict, labels: dict, first: dict) -> dict:
    """The values drawn in advance for the book's pages (no Python there):
    a smaller grid than the live controls (72 pictures, not 648), at the
    first memory size."""
    kept = {
        "num_kv_heads": (32, 8, 1),
        "window": (0, 4096),
        "local_per_global": (None, 5),
        "cache_bits": (16, 8),
    }
    grid = {}
    for name, choices in options.items():
        if name == "memory_gb":  # fixed in the frames: see kv_cache_explorer
            continue
        values = kept.get(name)
        pairs = [c for c in choices if values is None or c[1] in values]
        if first[name] not in [value for _, value in pairs]:
            pairs = [c for c in choices if c[1] == first[name]] + pairs
        kind = "slider" if name == "context" else "buttons"
        grid[name] = Choices(labels[name], pairs, kind=kind, value=first[name])
    return grid
