"""The memory limit: the largest tensor one call may allocate.

Every large allocation of the package (score matrices, masks, position
tables, weights, batches, activations) is checked here first, so that a
size that would not fit gives a clear ``ValueError`` naming it, never a
failed allocation or a swapping machine. A reader with more memory raises
the limit with ``attnbook.set_matrix_memory_limit``.
"""

import torch

_MATRIX_LIMIT = {"bytes": 4 * 2**30}


def set_matrix_memory_limit(limit_bytes: int) -> int:
    """Set the largest score matrix (bytes) a call may allocate; returns the
    previous limit.

    Plain attention builds an n_q x n_k matrix (additive scores an n_q x n_k x
    d_a tensor); past this limit it raises a ``MemoryError``-like
    ``ValueError`` naming the size, instead of letting the allocator fail (or
    the machine swap). Default 4 GiB.
    """
    # require_int's two checks and messages, written out: _checks imports
    # this module, so this module cannot import _checks
    if (
        isinstance(limit_bytes, bool)
        or not isinstance(limit_bytes, int)
        or limit_bytes < 1
    ):
        raise ValueError(
            f"limit_bytes must be a positive int, got {limit_bytes!r:.40}"
        )
    if limit_bytes > 2**62:  # no tensor has that many bytes
        raise ValueError(
            f"limit_bytes = {str(limit_bytes):.24} is too large (at most "
            "2**62)"
        )
    previous, _MATRIX_LIMIT["bytes"] = _MATRIX_LIMIT["bytes"], limit_bytes
    return previous


def matrix_memory_limit() -> int:
    """The current limit of ``set_matrix_memory_limit`` in bytes."""
    return _MATRIX_LIMIT["bytes"]


_CHUNKED_HINT = "use attnbook.chunked_attention, which never builds it, or"
_VIEW_HINT = "its copies and outputs would not fit: pass fewer rows or"


def require_matrix_fits(
    what: str, shape, dtype: torch.dtype, hint: str = _CHUNKED_HINT
) -> None:
    """Raise ``ValueError`` before allocating a tensor of ``shape`` and
    ``dtype`` larger than the limit (``set_matrix_memory_limit``).

    Every large allocation goes through here: score matrices, masks, position
    tables, a layer's weights, a batch of data.
    """
    numel = 1
    for size in shape:
        numel *= int(size)
    size = numel * dtype.itemsize
    limit = _MATRIX_LIMIT["bytes"]
    if size > limit:
        raise ValueError(
            f"{what} of shape {tuple(int(s) for s in shape)} would take "
            f"{size / 2**30:,.1f} GiB (limit {limit / 2**30:,.1f} GiB): "
            f"{hint} raise the limit with "
            "attnbook.set_matrix_memory_limit(bytes)"
        )


def require_activations_fit(
    name: str, value: torch.Tensor, numbers: int, dtype, what: str
) -> None:
    """Raise ``ValueError`` before ``what`` computes ``numbers`` activations
    (intermediate numbers of ``dtype``, counted over the whole call) for
    ``name`` = ``value`` when they would exceed the memory limit.

    A batch of many rows through a small model (e.g. an ``expand``-ed view of
    10**6 rows) allocates little at a time, yet streams gigabytes through
    memory for many seconds: its work is bounded by the same limit.
    """
    size = int(numbers) * dtype.itemsize
    limit = _MATRIX_LIMIT["bytes"]
    if size > limit:
        raise ValueError(
            f"{name} of shape {tuple(value.shape)}: {what} computes about "
            f"{size / 2**30:,.1f} GiB of activations (limit "
            f"{limit / 2**30:,.1f} GiB): pass fewer rows or raise the "
            "limit with attnbook.set_matrix_memory_limit(bytes)"
        )


def require_weights_fit(what: str, *shapes) -> None:
    """A layer's parameters (float32 tensors of ``shapes``) within the
    memory limit, checked before any is allocated."""
    numel = 0
    for shape in shapes:
        count = 1
        for size in shape:
            count *= int(size)
        numel += count
    require_matrix_fits(
        f"the weights of {what}",
        (numel,),
        torch.float32,
        hint="make it smaller or",
    )


def require_view_fits(name: str, value: torch.Tensor) -> None:
    """A broadcast view (e.g. ``expand``: stride 0) holds far fewer bytes than
    its shape says; any copy of it, or any output of its shape, would not fit
    in the memory limit: refused before a function touches it."""
    nbytes = value.numel() * value.element_size()
    if nbytes <= _MATRIX_LIMIT["bytes"] or value.layout != torch.strided:
        return
    if nbytes > value.untyped_storage().nbytes():
        require_matrix_fits(
            f"{name}, a broadcast view", value.shape, value.dtype, _VIEW_HINT
        )
