"""What a reader calls: the kernels behind the book's usual argument checks.

``flash_attention`` is differentiable (an ``autograd.Function`` whose
backward runs the FlashAttention-2 backward kernels). Every function checks
its inputs before any work, then imports the kernel module it needs: triton
is imported on the first call, never by ``import attnbook``. On a CUDA
tensor the kernels are compiled; on a CPU tensor Triton's interpreter runs
them (``_launch``).
"""

import importlib

import torch

from .._checks import all_finite, require_float, require_int, require_tensor
from .._random import require_generator

MAX_HEAD_SIZE = 128
KERNEL_DTYPES = (torch.float32, torch.float16, torch.bfloat16)


def flash_attention(queries, keys, values, causal: bool = False):
    """softmax(Q K^T / sqrt(d)) V by the FlashAttention-2 kernels.

    queries (batch, heads, n_q, d), keys and values (batch, heads, n_k, d),
    one dtype (float32, float16; bfloat16 on a GPU only), d <= 128; causal:
    bottom-right aligned like ``causal_mask(n_q, n_k)`` (needs n_q <= n_k).
    Returns the output (batch, heads, n_q, d); gradients flow to all three
    inputs.
    """
    _check_attention(queries, keys, values, causal)
    return FlashAttention.apply(queries, keys, values, causal)


class FlashAttention(torch.autograd.Function):
    """The forward kernel saves only Q, K, V, O and the log-sum-exp; the
    backward kernels recompute the attention weights from them."""

    @staticmethod
    def forward(ctx, queries, keys, values, causal):
        q, k, v = (_rows(t) for t in (queries, keys, values))
        out, lse = _kernels("flash_forward", q).flash_forward(q, k, v, causal)
        ctx.save_for_backward(q, k, v, out, lse)
        ctx.causal, ctx.shapes = causal, (queries, keys, values)
        return out.view(queries.shape)

    @staticmethod
    def backward(ctx, grad_output):
        q, k, v, out, lse = ctx.saved_tensors
        backward = _kernels("flash_backward", q).flash_backward
        grads = backward(q, k, v, out, lse, _rows(grad_output), ctx.causal)
        return (*(g.view(t.shape) for g, t in zip(grads, ctx.shapes)), None)


def flash_decoding(query, keys, values, split_size: int = 64):
    """One decoding step by Flash-Decoding: query (batch, heads, 1, d),
    keys and values (batch, heads, n_k, d), split into parts of
    ``split_size`` keys that separate programs attend to; the parts are
    merged by their log-sum-exp. Returns the output (batch, heads, 1, d)."""
    _check_attention(query, keys, values, False, ("query", "keys", "values"))
    if query.shape[2] != 1:
        raise ValueError(
            f"query must hold one position, shape (batch, heads, 1, d), got "
            f"{tuple(query.shape)}"
        )
    require_int("split_size", split_size)
    q, k, v = (_rows(t) for t in (query, keys, values))
    module = _kernels("flash_decoding", q)
    out, _ = module.flash_decode(q[:, 0], k, v, split_size)
    return out.view(query.shape)


def paged_decoding(query, key_pages, value_pages, block_table, lengths):
    """One decoding step over a paged cache (vLLM's PagedAttention).

    query (batch, heads, 1, d); key_pages, value_pages (pages, heads,
    page_size, d): the shared pool; block_table (batch, width), integers:
    row b lists the pages of sequence b in order; lengths (batch,): how many
    positions of each sequence are filled. Returns (batch, heads, 1, d).
    """
    _check_paged(query, key_pages, value_pages, block_table, lengths)
    q = query[:, :, 0].contiguous()
    kp, vp = key_pages.contiguous(), value_pages.contiguous()
    table = block_table.to(torch.int32).contiguous()
    lengths = lengths.to(torch.int32).contiguous()
    module = _kernels("paged_decoding", q)
    return module.paged_decode(q, kp, vp, table, lengths).unsqueeze(2)


def paged_cache(keys, values, page_size: int, generator=None):
    """keys and values (batch, heads, n, d) scattered into shuffled pages:
    (key_pages, value_pages (pages, heads, page_size, d), block_table
    (batch, ceil(n / page_size)), lengths (batch,)), as a serving system
    would hold them. ``generator`` shuffles the pages; None: a fixed
    shuffle (seed 0). Torch's global random state is left alone."""
    _check_attention(
        keys, keys, values, False, ("keys", "keys", "values"), kernel=False
    )
    require_int("page_size", page_size)
    require_generator("generator", generator, allow_none=True)
    if page_size > keys.shape[2]:
        raise ValueError(
            f"page_size = {page_size} is longer than the {keys.shape[2]} "
            "positions of keys"
        )
    batch, heads, n, d = keys.shape
    width = -(-n // page_size)
    pad = width * page_size - n

    def pages(t):
        t = torch.nn.functional.pad(t, (0, 0, 0, pad))
        t = t.view(batch, heads, width, page_size, d).transpose(1, 2)
        return t.reshape(batch * width, heads, page_size, d)

    if generator is None:
        generator = torch.Generator().manual_seed(0)
    order = torch.randperm(batch * width, generator=generator)
    key_pages, value_pages = torch.empty_like(pages(keys)), None
    key_pages[order] = pages(keys)
    value_pages = torch.empty_like(key_pages)
    value_pages[order] = pages(values)
    table = order.view(batch, width).to(keys.device)
    lengths = torch.full((batch,), n, dtype=torch.int32, device=keys.device)
    return key_pages, value_pages, table, lengths


def triton_softmax(scores):
    """softmax over the last dimension, one Triton program per row; scores
    (..., n) float32 or float16 (bfloat16 on a GPU only)."""
    _check_kernel_tensor("scores", scores)
    if scores.dim() == 0 or scores.shape[-1] == 0:
        raise ValueError(
            "scores need shape (..., n) with n >= 1, got "
            f"{tuple(scores.shape)}"
        )
    rows = scores.numel() // scores.shape[-1]  # a program each
    _require_interpretable({"scores": scores}, scores.numel() + rows * 2**11)
    rows = scores.reshape(-1, scores.shape[-1]).contiguous()
    return _kernels("softmax", rows).softmax(rows).view(scores.shape)


def _rows(t: torch.Tensor) -> torch.Tensor:
    """(batch, heads, n, d) -> contiguous (batch * heads, n, d)."""
    return t.reshape(-1, *t.shape[-2:]).contiguous()


def _kernels(name: str, tensor: torch.Tensor):
    """The kernel module, imported (with triton) on first use."""
    launch = importlib.import_module(f"{__package__}._launch")
    launch.check_device("the inputs", tensor)
    return importlib.import_module(f"{__package__}.{name}")


def _check_kernel_tensor(name: str, t) -> None:
    require_float(name, t)
    if t.dtype not in KERNEL_DTYPES:
        raise TypeError(
            f"{name} must be float32, float16 or bfloat16 (the kernels' "
            f"dtypes), got {t.dtype}"
        )
    if t.dtype == torch.bfloat16 and t.device.type != "cuda":
        raise TypeError(
            f"{name} is bfloat16 on the CPU: Triton's interpreter computes "
            "bfloat16 wrongly without an error (Triton issue #11584), so the "
            "book refuses it; use float32 or float16 on the CPU, bfloat16 "
            "on a GPU"
        )
    if t.device.type not in ("cpu", "cuda"):
        raise ValueError(
            f"{name} is on {t.device}: the kernels run on CUDA tensors "
            "(compiled) or CPU tensors (Triton's interpreter)"
        )


def _check_attention(
    queries,
    keys,
    values,
    causal,
    names=("queries", "keys", "values"),
    kernel=True,
) -> None:
    named = dict(zip(names, (queries, keys, values)))
    for name, t in named.items():
        _check_kernel_tensor(name, t)
        if t.dim() != 4 or 0 in t.shape:
            raise ValueError(
                f"{name} must have shape (batch, heads, n, d), none of them "
                f"0, got {tuple(t.shape)}"
            )
    dtypes = {t.dtype for t in named.values()}
    devices = {t.device for t in named.values()}
    shapes = ", ".join(f"{n} {tuple(t.shape)}" for n, t in named.items())
    if len(dtypes) > 1 or len(devices) > 1:
        listed = ", ".join(
            f"{n} {t.dtype} on {t.device}" for n, t in named.items()
        )
        raise ValueError(f"the inputs must share a dtype and device: {listed}")
    b, h, n_q, d = queries.shape
    q_name, k_name, v_name = names
    if keys.shape != values.shape or keys.shape[:2] != (b, h):
        raise ValueError(
            f"{k_name} and {v_name} must have one shape, with the "
            f"{q_name}' batch and heads: got {shapes}"
        )
    if keys.shape[3] != d:
        raise ValueError(f"{q_name} and {k_name} must share d: got {shapes}")
    if d > MAX_HEAD_SIZE:
        raise ValueError(
            f"head size d = {d} is above {MAX_HEAD_SIZE}: a block of queries, "
            "keys and values would not fit in a GPU's on-chip memory"
        )
    if not isinstance(causal, bool):
        raise TypeError(f"causal must be True or False, got {causal!r:.40}")
    if kernel:  # paged_cache only rearranges: no kernel runs
        _require_interpretable(named, b * h * n_q * keys.shape[2] * d)
    if causal and n_q > keys.shape[2]:
        raise ValueError(
            f"causal attention needs n_q <= n_k (the queries are the last "
            f"positions), got n_q = {n_q}, n_k = {keys.shape[2]}"
        )
    for name, t in named.items():
        if not all_finite(t):
            raise ValueError(f"{name} holds NaN or infinite numbers")


def _check_paged(query, key_pages, value_pages, block_table, lengths):
    named = {
        "query": query,
        "key_pages": key_pages,
        "value_pages": value_pages,
    }
    for name, t in named.items():
        _check_kernel_tensor(name, t)
        if t.dim() != 4 or 0 in t.shape:
            raise ValueError(
                f"{name} must have 4 dimensions, none of them 0, got "
                f"{tuple(t.shape)}"
            )
    if key_pages.shape != value_pages.shape:
        raise ValueError(
            f"key_pages {tuple(key_pages.shape)} and value_pages "
            f"{tuple(value_pages.shape)} must have one shape"
        )
    pages, heads, page_size, d = key_pages.shape
    if query.shape[1:] != (heads, 1, d):
        raise ValueError(
            f"query must have shape (batch, {heads}, 1, {d}) to match the "
            f"pages {tuple(key_pages.shape)}, got {tuple(query.shape)}"
        )
    if (
        len({t.dtype for t in named.values()}) > 1
        or len({t.device for t in named.values()}) > 1
    ):
        listed = ", ".join(
            f"{n} {t.dtype} on {t.device}" for n, t in named.items()
        )
        raise ValueError(f"the inputs must share a dtype and device: {listed}")
    batch = query.shape[0]
    for name, t in (("block_table", block_table), ("lengths", lengths)):
        require_tensor(name, t)
        if t.is_floating_point() or t.is_complex() or t.dtype == torch.bool:
            raise TypeError(f"{name} must hold integers, got {t.dtype}")
        if t.device != query.device:
            raise ValueError(
                f"{name} is on {t.device}, the query on {query.device}"
            )
    if (
        block_table.dim() != 2
        or block_table.shape[0] != batch
        or (block_table.shape[1] == 0)
    ):
        raise ValueError(
            f"block_table must have shape ({batch}, width), width >= 1, got "
            f"{tuple(block_table.shape)}"
        )
    if lengths.shape != (batch,):
        raise ValueError(
            f"lengths must have shape ({batch},), got {tuple(lengths.shape)}"
        )
    capacity = block_table.shape[1] * page_size
    if (lengths < 1).any() or (lengths > capacity).any():
        raise ValueError(
            f"lengths must be between 1 and {capacity} (the block "
            f"table's {block_table.shape[1]} pages of {page_size}), got "
            f"{lengths.tolist()}"
        )
    needed = torch.arange(block_table.shape[1], device=lengths.device)
    used = needed[None, :] * page_size < lengths[:, None]
    if ((block_table < 0) | (block_table >= pages))[used].any():
        raise ValueError(
            f"block_table names a page outside 0 .. {pages - 1}: "
            f"{block_table.tolist()}"
        )
    _require_interpretable(named, key_pages.numel())
    for name, t in named.items():
        if not all_finite(t):
            raise ValueError(f"{name} holds NaN or infinite numbers")


INTERPRETER_LIMIT = 2**27  # multiply-adds the interpreter does in ~a minute


def _require_interpretable(named: dict, work: int) -> None:
    """On the CPU (Triton's interpreter, which runs every program in
    Python), refuse a problem that would take many minutes."""
    tensor = next(iter(named.values()))
    if tensor.device.type == "cpu" and work > INTERPRETER_LIMIT:
        listed = ", ".join(f"{n} {tuple(t.shape)}" for n, t in named.items())
        raise ValueError(
            f"{listed}: about {work:.1e} multiply-adds, too many for "
            "Triton's interpreter on the CPU (at most "
            f"{INTERPRETER_LIMIT:.1e}; it runs every program in Python): use "
            "smaller sizes, or a GPU"
        )
