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
