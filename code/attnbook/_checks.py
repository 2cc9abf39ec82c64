"""Input checks shared by every module: clear errors instead of deep torch errors."""

import torch


def require_tensor(name: str, value) -> torch.Tensor:
    """Raise ``TypeError`` unless ``value`` is a tensor."""
    if not isinstance(value, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, got {type(value).__name__}")
    return value


def require_float(name: str, value) -> torch.Tensor:
    """Raise ``TypeError`` unless ``value`` is a floating-point tensor."""
    require_tensor(name, value)
    if not value.is_floating_point():
        raise TypeError(f"{name} must be a floating-point tensor, got dtype {value.dtype}")
    return value


def require_bool_mask(mask, target_shape: torch.Size, name: str = "mask") -> torch.Tensor:
    """Check that ``mask`` is boolean and broadcasts to ``target_shape``."""
    require_tensor(name, mask)
    if mask.dtype != torch.bool:
        raise TypeError(f"{name} must be a boolean tensor (True = keep), got dtype {mask.dtype}")
    try:
        torch.broadcast_shapes(mask.shape, target_shape)
    except RuntimeError:
        raise ValueError(
            f"{name} of shape {tuple(mask.shape)} does not broadcast to {tuple(target_shape)}"
        ) from None
    if torch.broadcast_shapes(mask.shape, target_shape) != target_shape:
        raise ValueError(
            f"{name} of shape {tuple(mask.shape)} would enlarge the scores of shape "
            f"{tuple(target_shape)}"
        )
    return mask


def require_same_size(what: str, name_a: str, size_a: int, name_b: str, size_b: int) -> None:
    """Raise ``ValueError`` naming both sizes when two sizes that must match differ."""
    if size_a != size_b:
        raise ValueError(f"{what} must match: {name_a} has {size_a}, {name_b} has {size_b}")


def require_positive(name: str, value: float) -> float:
    """Raise ``ValueError`` unless ``value`` is a finite number above zero."""
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        raise TypeError(f"{name} must be a number, got {type(value).__name__}")
    if not value > 0 or value == float("inf"):
        raise ValueError(f"{name} must be a positive finite number, got {value}")
    return value


def require_sequences(**tensors: torch.Tensor) -> None:
    """Float tensors shaped (..., n, d) whose batch dimensions (...) broadcast together.

    Called with keyword arguments, e.g. ``require_sequences(keys=keys, values=values)``,
    so that every message names the argument at fault and its shape.
    """
    for name, tensor in tensors.items():
        require_float(name, tensor)
        if tensor.dim() < 2:
            raise ValueError(f"{name} need shape (..., n, d), got {tuple(tensor.shape)}")
    try:
        torch.broadcast_shapes(*(tensor.shape[:-2] for tensor in tensors.values()))
    except RuntimeError:
        listed = ", ".join(f"{name} {tuple(tensor.shape[:-2])}" for name, tensor in tensors.items())
        raise ValueError(f"batch dimensions do not broadcast: {listed}") from None


def require_int(name: str, value, minimum: int = 1) -> int:
    """Raise ``ValueError`` unless ``value`` is an int (not a bool) of at least ``minimum``."""
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        wanted = {1: "a positive int", 0: "a non-negative int"}.get(minimum, f"an int >= {minimum}")
        raise ValueError(f"{name} must be {wanted}, got {value!r}")
    return value
