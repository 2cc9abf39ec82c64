"""Rotary position embedding (RoPE, Su et al. 2021, arXiv 2104.09864).

Instead of adding a position vector to the input, RoPE turns the query and the
key of the token at position i: each pair of features (2j, 2j+1) is rotated by
the angle i * omega_j, with omega_j = base^(-2j/d), the frequencies of the
sinusoidal encoding (``attnbook.core.positional.pair_frequencies``). Seen as a
complex number z_j = x[2j] + sqrt(-1) x[2j+1], the pair is multiplied by
exp(sqrt(-1) i omega_j).

Rotations keep lengths and compose by adding angles, so the score between a
query rotated to position i and a key rotated to position i' depends on the
offset i - i' only. Values are never rotated.
"""

import torch

from .._checks import (
    all_finite,
    broadcast_shapes,
    require_float,
    require_float_dtype,
    require_tensor,
)
from .positional import pair_frequencies


def apply_rotary(
    x: torch.Tensor, positions, base: float = 10000.0
) -> torch.Tensor:
    """Rotate every feature pair of x by its position's angle (RoPE).

    x: (..., n, d) queries or keys, d even and positive, floating point (a
        single vector (d,) with one position works too).
    positions: a tensor of shape (n,) or any shape that broadcasts to
        x.shape[:-1] (e.g. (B, n) for one set of positions per sequence), or a
        Python number for one position shared by all rows. Integer or
        floating-point: the rotation is defined for any real position (a
        position of 2.5 turns each pair by 2.5 omega_j).
    Returns a tensor of x's shape and dtype: out[..., 2j] = x[..., 2j] cos a -
    x[..., 2j+1] sin a, out[..., 2j+1] = x[..., 2j] sin a + x[..., 2j+1] cos a,
    with a = position * base^(-2j/d). The angles are computed in float64 and
    cast to x's dtype.
    """
    require_float("x", x)
    if x.is_complex():
        raise TypeError(
            f"x must be a real floating-point tensor, got dtype {x.dtype}"
        )
    if x.dim() < 1 or x.shape[-1] == 0 or x.shape[-1] % 2:
        raise ValueError(
            "apply_rotary needs an even feature size d (pairs of features), "
            f"got shape {tuple(x.shape)}"
        )
    positions = _as_positions(positions)
    try:
        broadcast_shapes(positions.shape, x.shape[:-1])
    except RuntimeError:
        raise ValueError(
            f"positions of shape {tuple(positions.shape)} do not broadcast to "
            "x's positions "
            f"x.shape[:-1] = {tuple(x.shape[:-1])}"
        ) from None
    if broadcast_shapes(positions.shape, x.shape[:-1]) != x.shape[:-1]:
        raise ValueError(
            f"positions of shape {tuple(positions.shape)} would enlarge x of "
            f"shape {tuple(x.shape)}"
        )
    _require_finite_positions(positions)
    omega = pair_frequencies(x.shape[-1], base).to(x.device)  # (d/2,)
    return rotate_pairs(x, positions.to(x.device), omega)


def rotate_pairs(
    x: torch.Tensor, positions: torch.Tensor, frequencies: torch.Tensor
) -> torch.Tensor:
    """RoPE with given frequencies: turn feature pair j of the row at
    position p by the angle p * frequencies[j].

    x: (..., n, d) queries or keys, d even, floating point; positions: (n,),
    or any shape that broadcasts to x.shape[:-1] (integer or real);
    frequencies: (d/2,), e.g. ``rope_frequencies(d, scaling=...,
    factor=...)``. Returns x's shape and dtype; angles are computed in
    float64. ``apply_rotary`` is this with the unscaled frequencies.
    """
    _check_rotate(x, positions, frequencies)
    angle = positions.to(torch.float64)[..., None] * frequencies.to(
        torch.float64
    )  # (..., n, d/2)
    cos, sin = angle.cos().to(x.dtype), angle.sin().to(x.dtype)
    even, odd = x[..., 0::2], x[..., 1::2]
    turned = torch.stack((even * cos - odd * sin, even * sin + odd * cos), -1)
    return turned.flatten(-2)


def _check_rotate(x, positions, frequencies) -> None:
    """x (..., d) floating point with d even, positions broadcastable to
    x.shape[:-1] without enlarging x, frequencies (d/2,)."""
    require_tensor("x", x)
    require_tensor("positions", positions)
    require_tensor("frequencies", frequencies)
    require_float_dtype("x's dtype", x.dtype)
    if x.dim() < 1 or x.shape[-1] % 2 or x.shape[-1] == 0:
        raise ValueError(
            f"x must be (..., n, d) with an even d, got shape {tuple(x.shape)}"
        )
    try:
        fits = broadcast_shapes(positions.shape, x.shape[:-1]) == x.shape[:-1]
    except RuntimeError:
        fits = False
    if not fits:
        raise ValueError(
            f"positions of shape {tuple(positions.shape)} do not broadcast to "
            f"x's positions x.shape[:-1] = {tuple(x.shape[:-1])}"
        )
    if frequencies.shape != (x.shape[-1] // 2,):
        raise ValueError(
            f"frequencies must have shape ({x.shape[-1] // 2},) for "
            f"d = {x.shape[-1]}, got {tuple(frequencies.shape)}"
        )


def _as_positions(positions) -> torch.Tensor:
    """A real tensor of positions (Python numbers become 0-d tensors); bool,
    complex, NaN and inf refused."""
    if isinstance(positions, (int, float)) and not isinstance(positions, bool):
        try:
            positions = torch.tensor(float(positions), dtype=torch.float64)
        except OverflowError:  # an int beyond every float, e.g. 10**400
            positions = torch.tensor(float("inf"), dtype=torch.float64)
    require_tensor("positions", positions)
    if positions.dtype == torch.bool or positions.is_complex():
        raise TypeError(
            "positions must hold integer or real numbers, got dtype "
            f"{positions.dtype}"
        )
    return positions


def _require_finite_positions(positions: torch.Tensor) -> None:
    """Checked after the shape, so a huge broadcast view is refused first."""
    if positions.is_floating_point() and not all_finite(positions):
        raise ValueError("positions must be finite numbers, got NaN or inf")
