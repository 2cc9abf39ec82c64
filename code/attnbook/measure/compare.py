"""Checking a result against a reference, to a stated tolerance.

Two computations of the same quantity in floating point agree only up to
rounding, and that rounding changes with the CPU: its SIMD width, its BLAS
kernels, the thread count. A difference such as ``1.1e-16`` is noise, not a
result, and may read ``5.6e-17`` on the next machine. So the chapters print
what a comparison establishes, "equal within 1e-12", which holds on every CPU,
and never the noise itself.
"""

import torch

from .._checks import require_positive, require_same_device, require_tensor


def agreement(actual, expected, tol: float) -> str:
    """``"equal within {tol}"`` if every ``|actual - expected| <= tol``, else
    the largest gap.

    actual: a tensor or a number; expected: a tensor of the same shape, or a
    number that every entry is compared with (e.g. 0). tol: the largest
    difference allowed, a positive float. NaN or infinity anywhere counts as a
    difference.
    """
    require_positive("tol", tol)
    actual, expected = (
        _as_tensor("actual", actual),
        _as_tensor("expected", expected),
    )
    if expected.dim() and actual.dim():  # 0-d tensors go to any device
        require_same_device(actual=actual, expected=expected)
    if expected.dim() and actual.shape != expected.shape:
        raise ValueError(
            f"actual {tuple(actual.shape)} and expected "
            f"{tuple(expected.shape)} must have the same shape"
        )
    gap = _gap(actual, expected)
    if bool(gap.isnan().any()):
        return "differ: NaN"
    largest = gap.max().item() if gap.numel() else 0.0
    if largest <= tol:
        return f"equal within {tol:.0e}"
    return f"differ by up to {largest:.1e} (more than {tol:.0e})"


def _gap(actual: torch.Tensor, expected: torch.Tensor) -> torch.Tensor:
    """|actual - expected| as float64. Integers are subtracted as integers,
    so that 2**53 + 1 and 2**53 differ by 1 (float64 cannot tell them apart).
    """
    if actual.is_floating_point() or expected.is_floating_point():
        return (actual.double() - expected.double()).abs()
    a, e = actual.long(), expected.long()
    exact = a - e
    # int64 wraps around when the operands have opposite signs and the
    # difference leaves its range; there float64 is exact enough.
    wrapped = ((a < 0) != (e < 0)) & ((exact < 0) != (a < 0))
    rough = (a.double() - e.double()).abs()
    return torch.where(wrapped, rough, exact.abs().double())


def _as_tensor(name: str, value) -> torch.Tensor:
    if isinstance(value, torch.Tensor):
        require_tensor(name, value)
        if value.is_complex() or value.dtype == torch.bool:
            raise TypeError(
                f"{name} must hold real numbers, got dtype {value.dtype}"
            )
        return value.detach()
    if isinstance(value, int) and not isinstance(value, bool):
        if -(2**63) <= value < 2**63:
            return torch.tensor(value, dtype=torch.int64)
        return torch.tensor(float(value), dtype=torch.float64)
    if isinstance(value, float):
        return torch.tensor(value, dtype=torch.float64)
    raise TypeError(
        f"{name} must be a tensor or a number, got {type(value).__name__}"
    )
