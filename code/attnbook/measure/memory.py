"""Counting memory: the bytes of a score matrix and what autograd keeps for
a backward pass."""

from .._checks import require_callable, require_int


def score_matrix_bytes(
    n_q: int, n_k: int, chunk_size: int | None = None, dtype=None
) -> int:
    """Bytes of one block of scores: n_q x n_k numbers, or n_q x
    min(chunk_size, n_k) when chunked.

    dtype: a torch dtype (float32 if None).
    """
    import torch

    require_int("n_q", n_q, minimum=0)
    require_int("n_k", n_k, minimum=0)
    if dtype is not None and not isinstance(dtype, torch.dtype):
        raise TypeError(
            f"dtype must be a torch.dtype (e.g. torch.float16), got {dtype!r}"
        )
    columns = (
        n_k
        if chunk_size is None
        else min(require_int("chunk_size", chunk_size), n_k)
    )
    return (
        n_q
        * columns
        * torch.empty((), dtype=dtype or torch.float32).element_size()
    )


def saved_for_backward(function, exclude=()) -> dict:
    """What autograd keeps for the backward pass of ``function()``, each
    storage counted once.

    Runs ``function()`` (which must build a graph: some input requires grad)
    while a hook records every tensor the graph saves. Tensors that share a
    storage (a view, a transpose, the same tensor saved by two operations)
    count once. Storages of the tensors in ``exclude`` (e.g. the inputs, which
    exist anyway) are left out. Returns {"bytes": total bytes of the distinct
    storages, "largest": bytes of the largest}.
    """
    import torch

    require_callable(function=function)
    if not isinstance(exclude, (list, tuple)) or not all(
        isinstance(t, torch.Tensor) for t in exclude
    ):
        raise TypeError(
            f"exclude must be a list of tensors, got {exclude!r:.40}"
        )
    excluded = {t.untyped_storage().data_ptr() for t in exclude}
    storages = {}

    def pack(tensor):
        storage = tensor.untyped_storage()
        if storage.data_ptr() not in excluded:
            storages[storage.data_ptr()] = storage.nbytes()
        return tensor

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda tensor: tensor):
        function()
    return {
        "bytes": sum(storages.values()),
        "largest": max(storages.values(), default=0),
    }
