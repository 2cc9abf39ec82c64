"""The key-value cache of generation: what every layer's self-attention has
seen so far.

A Transformer that generates one token at a time would otherwise project the
keys and values of the whole prefix again at every step. ``KVCache`` keeps
them, per layer two tensors (B, h, n, d): a step projects only the new
positions and ``append``s their keys and values. Both of the book's
Transformers that generate use it: the language model (chapter 12) and the
encoder-decoder's decoder (chapter 10), whose beam search also ``reorder``s
the cache when beams change parents.
"""

import torch

from .._checks import (
    require_int,
    require_int_in,
    require_same_dtype,
    require_sequences,
    require_tensor,
)
from .._memory import require_matrix_fits

_FEWER = "use fewer layers or"


class KVCache:
    """The keys and values each layer has seen: per layer two tensors
    (B, num_kv_heads, n, head_dim), grown by ``append``. ``len(cache)`` is n,
    the number of positions cached."""

    def __init__(self, num_layers: int):
        require_int("num_layers", num_layers)
        require_matrix_fits(
            "KVCache's lists of layers", (2, num_layers), torch.int64, _FEWER
        )
        self.keys = [None] * num_layers
        self.values = [None] * num_layers

    def __len__(self) -> int:
        return 0 if self.keys[-1] is None else self.keys[-1].shape[-2]

    def append(self, layer: int, keys, values) -> tuple:
        """Add keys, values (B, h, n_new, d) to ``layer``'s cache; returns
        all of its keys and values (B, h, n + n_new, d)."""
        self._check(layer, keys, values)
        if self.keys[layer] is not None:
            keys = torch.cat([self.keys[layer], keys], dim=-2)
            values = torch.cat([self.values[layer], values], dim=-2)
        self.keys[layer], self.values[layer] = keys, values
        return keys, values

    def reorder(self, rows: torch.Tensor) -> None:
        """Gather every layer's keys and values (B, h, n, d) along the batch
        by ``rows`` (B_new,) int64: row r of the new cache is row ``rows[r]``
        of the old one. Beam search passes the parent of each new beam, so
        that every beam keeps its own prefix's past. In place; an empty layer
        stays empty."""
        self._check_rows(rows)
        for layer, (keys, values) in enumerate(zip(self.keys, self.values)):
            if keys is not None:
                self.keys[layer] = keys.index_select(0, rows)
                self.values[layer] = values.index_select(0, rows)

    def _check(self, layer, keys, values) -> None:
        """layer in range; keys and values (B, h, n_new, d) of one dtype,
        device and shape that continue the layer's cached ones."""
        require_int_in("layer", layer, 0, len(self.keys) - 1)
        require_sequences(keys=keys, values=values)
        require_same_dtype(keys=keys, values=values)
        if keys.dim() != 4 or keys.shape[:-1] != values.shape[:-1]:
            raise ValueError(
                "keys and values must have shapes (B, h, n_new, d) with one "
                f"B, h, n_new, got {tuple(keys.shape)} and "
                f"{tuple(values.shape)}"
            )
        for name, new, old in (
            ("keys", keys, self.keys[layer]),
            ("values", values, self.values[layer]),
        ):
            if old is not None and (
                new.shape[:2] + new.shape[3:] != old.shape[:2] + old.shape[3:]
                or new.dtype != old.dtype
                or new.device != old.device
            ):
                raise ValueError(
                    f"{name} {tuple(new.shape)} ({new.dtype}, {new.device}) "
                    f"cannot join layer {layer}'s cached {tuple(old.shape)} "
                    f"({old.dtype}, {old.device})"
                )

    def _check_rows(self, rows) -> None:
        """rows: a 1-D int64 tensor on the cache's device, each in [0, B)
        for the B rows every cached layer holds."""
        require_tensor("rows", rows)
        if rows.dtype != torch.int64:
            raise TypeError(
                f"rows must be an int64 tensor of row indices, got "
                f"{rows.dtype}"
            )
        if rows.dim() != 1:
            raise ValueError(
                f"rows must be 1-D (B_new,), got shape {tuple(rows.shape)}"
            )
        cached = [t for t in self.keys + self.values if t is not None]
        sizes = {(t.shape[0], t.device) for t in cached}
        if len(sizes) > 1:
            raise ValueError(
                "the cached layers hold different batch sizes or devices "
                f"{sorted((b, str(d)) for b, d in sizes)}: no row order fits "
                "them all"
            )
        if not sizes:
            if rows.numel() and int(rows.min()) < 0:
                raise ValueError(f"rows must be >= 0, got {int(rows.min())}")
            return
        ((batch, device),) = sizes
        if rows.device != device:
            raise ValueError(
                f"rows are on {rows.device}, the cache on {device}: move "
                f"them with rows.to({str(device)!r})"
            )
        if rows.numel() and not (
            0 <= int(rows.min()) and int(rows.max()) < batch
        ):
            raise ValueError(
                f"rows must be in [0, {batch}) (the cache holds {batch} "
                f"rows), got {int(rows.min())} .. {int(rows.max())}"
            )

    def nbytes(self) -> int:
        """The bytes the cached tensors hold."""
        return sum(
            t.numel() * t.element_size()
            for t in self.keys + self.values
            if t is not None
        )


def require_kv_cache(cache) -> KVCache:
    """``TypeError`` unless ``cache`` is a ``KVCache``; returns it."""
    if not isinstance(cache, KVCache):
        raise TypeError(
            f"cache must be a KVCache (model.new_cache()), got "
            f"{type(cache).__name__}"
        )
    return cache
