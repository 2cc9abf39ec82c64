"""Input checks shared by every module: clear errors instead of deep torch
errors, raised before anything the caller owns changes (a tensor, a cache,
torch's global random state). The memory limit lives in ``_memory.py``, the
random-state helpers in ``_random.py``."""

import math

import torch

from ._memory import matrix_memory_limit, require_view_fits


def require_tensor(name: str, value) -> torch.Tensor:
    """Raise ``TypeError`` unless ``value`` is a tensor."""
    if not isinstance(value, torch.Tensor):
        raise TypeError(
            f"{name} must be a torch.Tensor, got {type(value).__name__}"
        )
    if value.is_meta:
        raise ValueError(
            f"{name} is on the meta device (shapes without data): the book's "
            "functions compute on real tensors"
        )
    require_view_fits(name, value)
    return value


def require_float(name: str, value) -> torch.Tensor:
    """Raise ``TypeError`` unless ``value`` is a floating-point tensor."""
    require_tensor(name, value)
    if not value.is_floating_point():
        raise TypeError(
            f"{name} must be a floating-point tensor, got dtype {value.dtype}"
        )
    return value


def require_bool_mask(
    mask, target_shape: torch.Size, name: str = "mask", device=None
) -> torch.Tensor:
    """Check that ``mask`` is boolean, broadcasts to ``target_shape`` and,
    if ``device`` is given, lives on it."""
    require_tensor(name, mask)
    if mask.dtype != torch.bool:
        raise TypeError(
            f"{name} must be a boolean tensor (True = keep), got dtype "
            f"{mask.dtype}"
        )
    if device is not None and mask.device != torch.device(device):
        raise ValueError(
            f"{name} is on {mask.device} but the scores are on {device}: "
            "put the mask on the same device"
        )
    try:
        broadcast_shapes(mask.shape, target_shape)
    except RuntimeError:
        raise ValueError(
            f"{name} of shape {tuple(mask.shape)} does not broadcast to "
            f"{tuple(target_shape)}"
        ) from None
    if broadcast_shapes(mask.shape, target_shape) != target_shape:
        raise ValueError(
            f"{name} of shape {tuple(mask.shape)} would enlarge the scores of "
            "shape "
            f"{tuple(target_shape)}"
        )
    return mask


def require_shape(name: str, tensor, shape: tuple) -> torch.Tensor:
    """A tensor of exactly ``shape`` (None: any size in that dimension), or
    a ``ValueError`` naming both shapes."""
    require_tensor(name, tensor)
    if tensor.dim() != len(shape) or any(
        size is not None and size != got
        for size, got in zip(shape, tensor.shape)
    ):
        sizes = ", ".join("n" if s is None else str(s) for s in shape)
        raise ValueError(
            f"{name} must have shape ({sizes}{',' * (len(shape) == 1)}), "
            f"got {tuple(tensor.shape)}"
        )
    return tensor


def require_same_size(
    what: str, name_a: str, size_a: int, name_b: str, size_b: int
) -> None:
    """Raise ``ValueError`` naming both sizes when two sizes that must match
    differ."""
    if size_a != size_b:
        raise ValueError(
            f"{what} must match: {name_a} has {size_a}, {name_b} has {size_b}"
        )


def require_positive(name: str, value: float) -> float:
    """Raise ``ValueError`` unless ``value`` is a finite number above zero."""
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        raise TypeError(f"{name} must be a number, got {type(value).__name__}")
    try:
        finite = abs(float(value)) != float("inf")
    except OverflowError:  # an int beyond every float, e.g. 10**400
        finite = False
    if not value > 0 or not finite:
        raise ValueError(
            f"{name} must be a positive finite number, got {str(value):.24}"
        )
    return value


def broadcast_shapes(*shapes) -> torch.Size:
    """The shape ``shapes`` broadcast to, as ``torch.broadcast_shapes``
    gives it, in plain Python: torch's goes through its symbolic-shape
    machinery, ~60 microseconds a call, a fifth of a decoding step of the
    book's small models. Raises ``RuntimeError`` as torch's does."""
    ndim = max((len(shape) for shape in shapes), default=0)
    out = [1] * ndim
    for shape in shapes:
        for i, size in enumerate(shape, start=ndim - len(shape)):
            if size == 1 or size == out[i]:
                continue
            if out[i] != 1:
                raise RuntimeError(
                    f"shapes {[tuple(s) for s in shapes]} do not broadcast"
                )
            out[i] = size
    return torch.Size(out)


def require_sequences(**tensors: torch.Tensor) -> None:
    """Float tensors shaped (..., n, d) whose batch dimensions (...) broadcast
    together.

    Called with keyword arguments, e.g.
    ``require_sequences(keys=keys, values=values)``, so that every message
    names the argument at fault and its shape.
    """
    if _ordinary_sequences(tensors.values()):
        return  # the common case, decided in a few microseconds
    for name, tensor in tensors.items():
        require_float(name, tensor)
        if tensor.dim() < 2:
            raise ValueError(
                f"{name} need shape (..., n, d), got {tuple(tensor.shape)}"
            )
    require_same_device(**tensors)
    try:
        broadcast_shapes(*(tensor.shape[:-2] for tensor in tensors.values()))
    except RuntimeError:
        listed = ", ".join(
            f"{name} {tuple(tensor.shape[:-2])}"
            for name, tensor in tensors.items()
        )
        raise ValueError(
            f"batch dimensions do not broadcast: {listed}"
        ) from None


def _ordinary_sequences(tensors) -> bool:
    """True when every check of ``require_sequences`` surely passes: float
    tensors (..., n, d) with one batch shape, on one real device, each
    within the memory limit. Otherwise the checks run one by one."""
    limit, batch, device = matrix_memory_limit(), None, None
    for t in tensors:
        if (
            not isinstance(t, torch.Tensor)
            or not t.is_floating_point()
            or t.dim() < 2
            or t.is_meta
            or t.numel() * t.dtype.itemsize > limit
        ):
            return False
        if batch is None:
            batch, device = t.shape[:-2], t.device
        elif t.shape[:-2] != batch or t.device != device:
            return False
    return True


def require_same_device(**tensors: torch.Tensor) -> None:
    """All ``tensors`` on one device, or a ``ValueError`` naming them."""
    devices = {tensor.device for tensor in tensors.values()}
    if len(devices) > 1:
        listed = ", ".join(
            f"{name} on {tensor.device}" for name, tensor in tensors.items()
        )
        raise ValueError(f"the tensors must share one device: {listed}")


def require_int(name: str, value, minimum: int = 1) -> int:
    """Raise ``ValueError`` unless ``value`` is an int (not a bool) of at
    least ``minimum``."""
    if (
        isinstance(value, bool)
        or not isinstance(value, int)
        or value < minimum
    ):
        wanted = {1: "a positive int", 0: "a non-negative int"}.get(
            minimum, f"an int >= {minimum}"
        )
        raise ValueError(f"{name} must be {wanted}, got {value!r:.40}")
    if value > _LARGEST_INT:  # no tensor has that many entries
        raise ValueError(
            f"{name} = {str(value):.24} is too large (at most 2**62)"
        )
    return value


_LARGEST_INT = 2**62


# ----------------------------------------------------------------------------
# Shared by every module: dtypes, sizes, numbers, training settings,
# explorer arguments.
# ----------------------------------------------------------------------------

HALF_DTYPES = (torch.float16, torch.bfloat16)


def compute_dtype(dtype: torch.dtype) -> torch.dtype:
    """The dtype scores and softmax are computed in: float32 for
    float16/bfloat16 (as torch does), else ``dtype``."""
    return torch.float32 if dtype in HALF_DTYPES else dtype


def require_float_dtype(name: str, value) -> torch.dtype:
    """Raise ``TypeError`` unless ``value`` is a floating-point
    ``torch.dtype``."""
    if not isinstance(value, torch.dtype) or not value.is_floating_point:
        raise TypeError(
            f"{name} must be a floating-point torch.dtype, got {value!r}"
        )
    return value


def require_same_dtype(**tensors: torch.Tensor) -> torch.dtype:
    """Raise ``TypeError`` naming every dtype unless all tensors share one;
    returns it.

    Called with keyword arguments, e.g.
    ``require_same_dtype(queries=q, keys=k)``.
    """
    dtypes = {name: tensor.dtype for name, tensor in tensors.items()}
    first_name, first = next(iter(dtypes.items()), (None, None))
    for name, dtype in dtypes.items():
        if dtype != first:
            raise TypeError(
                f"{first_name} and {name} must share a dtype, got {first} and "
                f"{dtype}; "
                f"convert one of them, e.g. {name}.to({first})"
            )
    return first


def require_module_dtype(module, **tensors: torch.Tensor) -> None:
    """Raise ``TypeError`` unless every tensor has the dtype of ``module``'s
    parameters.

    The message names both dtypes and the two ways out (convert the input or
    the module).
    """
    parameter = next(module.parameters(), None)
    if parameter is None:
        return
    for name, tensor in tensors.items():
        if tensor.dtype != parameter.dtype:
            raise TypeError(
                f"{name} has dtype {tensor.dtype} but the parameters have "
                f"{parameter.dtype} "
                f"(in {type(module).__name__}); convert one of them ({name}"
                f".to({parameter.dtype}) or "
                f"module.to({tensor.dtype}))"
            )


def require_probability(name: str, value) -> float:
    """A dropout-like probability: a number in [0, 1) (``ValueError``
    otherwise, also for NaN and bools)."""
    if (
        isinstance(value, bool)
        or not isinstance(value, (int, float))
        or not 0.0 <= value < 1.0
    ):
        raise ValueError(f"{name} must be a number in [0, 1), got {value!r}")
    return float(value)


def require_finite_number(
    name: str,
    value,
    low: float = -float("inf"),
    high: float = float("inf"),
    include_low: bool = True,
) -> float:
    """A real number (not a bool, not NaN or inf) in [low, high] (or (low,
    high] if not include_low).

    Raises ``ValueError`` naming the value: what an explorer's view needs for
    every float control.
    """
    if not is_finite_number(value):
        raise ValueError(f"{name} must be a finite number, got {value!r:.40}")
    inside = (low <= value if include_low else low < value) and value <= high
    if not inside:
        bracket = "[" if include_low else "("
        raise ValueError(
            f"{name} must be in {bracket}{low}, {high}], got {value!r}"
        )
    return value


def is_finite_number(value) -> bool:
    """True for an int or float (not a bool) that is a finite float: not NaN,
    not inf, not an int beyond every float (10**400)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return False
    try:
        return math.isfinite(value)
    except OverflowError:
        return False


# The settings of a training function, by their usual names: (kind, lowest).
_SETTINGS = {
    "steps": ("int", 0),
    "step": ("int", 0),
    "batch_size": ("int", 1),
    "eval_every": ("int", 1),
    "warmup": ("int", 0),
    "seed": ("int", 0),
    "lr": ("rate", 0.0),
    "weight_decay": ("rate", None),
}
_LARGEST_RATE = float(torch.finfo(torch.float32).max)
MOST_STEPS = 10**7  # training steps: more is a mistake, refused at once


def all_finite(tensor: torch.Tensor) -> bool:
    """True if no entry of ``tensor`` is NaN or +-inf.

    One summing pass, many times cheaper than ``isfinite(tensor).all()``
    (which writes a bool tensor the size of ``tensor``): a NaN or inf entry
    makes the sum NaN or inf, so a finite sum proves every entry finite; a
    sum that is not finite (garbage, or finite entries that overflow it) is
    settled entry by entry.
    """
    if not (tensor.is_floating_point() or tensor.is_complex()):
        return True
    t = tensor.detach()
    return bool(torch.isfinite(t.sum())) or bool(torch.isfinite(t).all())


def require_training(**settings) -> None:
    """Check a training function's settings, named as in ``_SETTINGS``:
    batch_size, eval_every (ints >= 1), steps, step, warmup, seed (ints >= 0),
    lr (> 0) and weight_decay (>= 0), finite numbers a float32 parameter can
    hold. Raises ``ValueError`` naming the setting and its value."""
    for name, value in settings.items():
        kind, lowest = _SETTINGS[name]
        if kind == "int":
            require_int(name, value, minimum=lowest)
            if name == "steps" and value > MOST_STEPS:
                raise ValueError(
                    f"steps = {str(value):.24} is more than "
                    f"{MOST_STEPS:,}: the book's trainings take thousands, "
                    "and this many would run for years"
                )
        else:
            require_finite_number(
                name,
                value,
                low=0.0,
                high=_LARGEST_RATE,
                include_low=lowest is None,
            )


def require_same_features(queries, keys) -> None:
    """queries (..., d) and keys (..., d) of one feature size d (what a dot
    product needs): ``ValueError`` naming both sizes otherwise."""
    require_same_size(
        "feature sizes of queries and keys",
        "queries",
        queries.shape[-1],
        "keys",
        keys.shape[-1],
    )


def require_qkv(queries, keys, values) -> None:
    """queries (..., n_q, d_k), keys (..., n, d_k), values (..., n, d_v):
    float tensors of one dtype with matching feature sizes and as many keys
    as values (``ValueError``/``TypeError`` naming the one at fault)."""
    require_sequences(queries=queries, keys=keys, values=values)
    require_same_dtype(queries=queries, keys=keys, values=values)
    require_same_features(queries, keys)
    require_same_size(
        "number of keys and values",
        "keys",
        keys.shape[-2],
        "values",
        values.shape[-2],
    )


def require_int_in(name: str, value, low: int, high: int) -> int:
    """An int (not a bool, not a float) in [low, high]: ``ValueError``
    naming the range otherwise."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(
            f"{name} must be an int in [{low}, {high}], got {value!r}"
        )
    if not low <= value <= high:
        raise ValueError(f"{name} must be in [{low}, {high}], got {value}")
    return value


def require_flag(name: str, value) -> bool:
    """A checkbox value: exactly True or False."""
    if not isinstance(value, bool):
        raise ValueError(f"{name} must be True or False, got {value!r}")
    return value


def require_text(name: str, value) -> str:
    """A text box value: a str."""
    if not isinstance(value, str):
        raise ValueError(
            f"{name} must be text (a str), got {type(value).__name__}"
        )
    return value


def require_ids(
    name: str, ids, vocab_size: int, dims: int | None = None
) -> torch.Tensor:
    """Token ids for an embedding: an integer tensor (not bool, not float) with
    values in [0, vocab_size).

    dims: the number of dimensions required (e.g. 2 for (B, n)), or None for
    any. Raises ``TypeError``/``ValueError`` naming the argument, its dtype or
    shape, and the first bad id.
    """
    require_tensor(name, ids)
    if ids.dtype not in (torch.int64, torch.int32):
        raise TypeError(
            f"{name} must hold int64 (or int32) ids, got dtype {ids.dtype}"
            + ("; convert with .long()" if _is_integer(ids) else "")
        )
    if dims is not None and ids.dim() != dims:
        raise ValueError(
            f"{name} must have {dims} dimensions, got shape {tuple(ids.shape)}"
        )
    if ids.numel() and (ids.min() < 0 or ids.max() >= vocab_size):
        bad = ids[(ids < 0) | (ids >= vocab_size)].flatten()[0].item()
        raise ValueError(f"{name} holds id {bad}, outside [0, {vocab_size})")
    return ids


def _is_integer(tensor: torch.Tensor) -> bool:
    return not (
        tensor.is_floating_point()
        or tensor.is_complex()
        or tensor.dtype == torch.bool
    )


def require_lengths(
    name: str, lengths, batch: int, n: int, minimum: int = 1
) -> torch.Tensor:
    """Sequence lengths: a (batch,) integer tensor (or list of ints) with
    values in [minimum, n].

    Returns the lengths as a tensor; ``TypeError``/``ValueError`` naming the
    values otherwise (float or bool lengths, NaN, a wrong number of lengths, a
    length outside the range).
    """
    if not isinstance(lengths, torch.Tensor):
        if isinstance(lengths, bool) or (
            isinstance(lengths, (list, tuple))
            and any(isinstance(x, bool) for x in lengths)
        ):
            raise TypeError(
                f"{name} must hold integers, not bools, got {lengths!r}"
            )
        try:
            lengths = torch.as_tensor(lengths)
        except (TypeError, ValueError, RuntimeError):
            raise TypeError(
                f"{name} must be a tensor or a list of ints, got {lengths!r}"
            ) from None
    require_tensor(name, lengths)
    if (
        lengths.is_floating_point()
        or lengths.is_complex()
        or lengths.dtype == torch.bool
    ):
        raise TypeError(
            f"{name} must hold integers, got dtype {lengths.dtype}"
        )
    if tuple(lengths.shape) != (batch,):
        raise ValueError(
            f"{name} must have shape ({batch},), one length per sequence, got "
            f"{tuple(lengths.shape)}"
        )
    if lengths.numel() and ((lengths < minimum).any() or (lengths > n).any()):
        raise ValueError(
            f"{name} must be in [{minimum}, {n}], got {lengths.tolist()}"
        )
    return lengths


def require_callable(**functions) -> None:
    """Each argument callable: ``TypeError`` naming it otherwise."""
    for name, function in functions.items():
        if not callable(function):
            raise TypeError(
                f"{name} must be callable, got {type(function).__name__}"
            )


def require_dict_or_none(name: str, value) -> dict:
    """A dict of overrides, or None for none: the dict (``{}`` for None),
    ``TypeError`` naming ``name`` otherwise."""
    if value is not None and not isinstance(value, dict):
        raise TypeError(
            f"{name} must be a dict or None, got {type(value).__name__}"
        )
    return value or {}


def require_saved(name: str, saved, *keys, allow_none=False):
    """A dict holding ``keys`` (what a training script wrote), or None if
    ``allow_none``: ``TypeError`` naming the missing keys otherwise."""
    if saved is None and allow_none:
        return saved
    missing = (
        [] if not isinstance(saved, dict) else sorted(set(keys) - set(saved))
    )
    if not isinstance(saved, dict) or missing:
        raise TypeError(
            f"{name} must be a dict with the keys {sorted(keys)} (what the "
            f"training script writes), got {str(saved):.40}"
        )
    return saved


def require_text_pairs(name: str, pairs) -> tuple:
    """(sources, targets): ``pairs`` as two lists of str, as many and not
    empty (inputs and their right outputs); ``TypeError``/``ValueError``
    naming ``name`` otherwise."""
    if not isinstance(pairs, (tuple, list)) or len(pairs) != 2:
        raise TypeError(
            f"{name} must be a pair (sources, targets) of lists of str, got "
            f"{pairs!r:.40}"
        )
    sources, targets = pairs
    for strings in pairs:
        if not isinstance(strings, (list, tuple)) or not all(
            isinstance(s, str) for s in strings
        ):
            raise TypeError(
                f"{name} must be two lists of str (sources, targets), got "
                f"{strings!r:.40}"
            )
    if not sources or len(sources) != len(targets):
        raise ValueError(
            f"{name}: sources and targets must be as many and not empty, "
            f"got {len(sources)} and {len(targets)}"
        )
    return list(sources), list(targets)


def require_translator(translator):
    """Anything with a ``translate(list of str) -> list of str`` method (a
    date translator): ``TypeError`` otherwise."""
    if not callable(getattr(translator, "translate", None)):
        raise TypeError(
            "translator must have a translate(sources) method (a date "
            f"translator), got {type(translator).__name__}"
        )
    return translator
