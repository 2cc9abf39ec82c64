"""Rotary position embedding drawn as turning arrows (chapter 8)."""

import matplotlib.pyplot as plt
import torch

from .._checks import all_finite, require_float, require_int
from ..core.rotary import apply_rotary
from .figures import require_figsize


def draw_rotated_pairs(vector: torch.Tensor, panels, figsize=(7.5, 3.6)):
    """One panel per feature pair of ``vector`` (a query or key, shape (d,),
    d even): the pair rotated by ``apply_rotary`` to each position, drawn as
    an arrow from the origin labelled with the position, darker for earlier
    positions. ``panels`` is a sequence of (pair, positions) with pair the
    index l of features (2l, 2l+1) and positions a ``range``. Returns the
    figure."""
    require_float("vector", vector)
    if not all_finite(vector):
        raise ValueError("vector contains NaN or infinite values")
    if vector.dim() != 1 or vector.shape[0] % 2:
        raise ValueError(
            "vector must have shape (d,) with d even, got shape "
            f"{tuple(vector.shape)}"
        )
    require_figsize(figsize)
    if not isinstance(panels, (list, tuple)) or not all(
        isinstance(panel, (list, tuple)) and len(panel) == 2
        for panel in panels
    ):
        raise TypeError(
            f"panels must be a list of (pair, positions), got {panels!r:.40}"
        )
    panels = list(panels)
    if not panels:
        raise ValueError("panels must name at least one (pair, positions)")
    for pair, shown in panels:
        require_int("pair", pair, 0)
        if 2 * pair + 1 >= vector.shape[0]:
            raise ValueError(
                f"pair {pair} needs features {2 * pair} and {2 * pair + 1}, "
                f"but vector has {vector.shape[0]}"
            )
        if not isinstance(shown, range) or len(shown) == 0:
            raise ValueError(
                f"positions must be a non-empty range, got {shown}"
            )
    fig, axes = plt.subplots(1, len(panels), figsize=figsize, squeeze=False)
    for ax, (pair, shown) in zip(axes[0], panels):
        _draw_pair(ax, vector, pair, shown)
    fig.tight_layout()
    return fig


def _draw_pair(ax, vector, pair, shown):
    features = slice(2 * pair, 2 * pair + 2)
    radius = vector[features].norm().item()
    for step, position in enumerate(shown):
        a, b = apply_rotary(vector, position)[features].tolist()
        shade = 0.85 * step / max(len(shown) - 1, 1)
        colour = plt.cm.viridis(shade)  # dark to light green
        arrow = dict(arrowstyle="->", color=colour, lw=1.5)
        ax.annotate("", xy=(a, b), xytext=(0, 0), arrowprops=arrow)
        ax.text(1.12 * a, 1.12 * b, str(position), ha="center",
                va="center", fontsize=8, color=colour)  # fmt: skip
    ax.set_xlim(-1.3 * radius, 1.3 * radius)
    ax.set_ylim(-1.3 * radius, 1.3 * radius)
    ax.set_aspect("equal")
    ax.set_xlabel(f"feature {2 * pair}")
    ax.set_ylabel(f"feature {2 * pair + 1}")
    span = f"positions {shown.start} to {shown.stop - 1}"
    ax.set_title(f"pair {pair}: {span}, step {shown.step}", fontsize=9)
