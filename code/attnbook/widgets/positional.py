"""Chapter 7 explorer: position i and offset delta -> P[i], P[i + delta] and the shift matrix.

The dimension d and the base set the heat-map of the whole sinusoidal matrix P.
"""

import matplotlib.pyplot as plt

from ..positional import position_shift_matrix, sinusoidal_encoding
from ._live import figure_explorer


def positional_view(
    position: int = 10, delta: int = 5, dim: int = 16, base: float = 10000.0, num_positions: int = 64
) -> dict:
    """Everything the explorer shows for one setting of its controls.

    Returns a dict with the inputs, ``encoding`` P (num_positions, dim),
    ``p_position`` = P[position] and ``p_target`` = P[position + delta] (dim,),
    ``shift_matrix`` M (dim, dim), ``p_shifted`` = M @ P[position] (dim,) and
    ``max_error`` = max |M @ P[position] - P[position + delta]|. Both positions
    must lie in 0 .. num_positions - 1; dim must be even (M needs column pairs).
    """
    target = position + delta
    for name, value in (("position", position), ("position + delta", target)):
        if not 0 <= value < num_positions:
            raise ValueError(f"{name} = {value} is outside 0 .. {num_positions - 1}")
    encoding = sinusoidal_encoding(num_positions, dim, base)
    shift_matrix = position_shift_matrix(delta, dim, base)
    p_shifted = shift_matrix @ encoding[position]
    return {
        "position": position,
        "delta": delta,
        "dim": dim,
        "base": base,
        "encoding": encoding,
        "p_position": encoding[position],
        "p_target": encoding[target],
        "shift_matrix": shift_matrix,
        "p_shifted": p_shifted,
        "max_error": (p_shifted - encoding[target]).abs().max().item(),
    }


def plot_positional(view: dict):
    """Heat-map of P with the two rows marked (left), the two rows and M @ P[i] (middle), M (right)."""
    fig, (left, middle, right) = plt.subplots(
        1, 3, figsize=(10.5, 3.2), dpi=80, gridspec_kw={"width_ratios": [1.1, 1.4, 1.0]}
    )
    i, target = view["position"], view["position"] + view["delta"]
    left.imshow(view["encoding"].numpy(), cmap="RdBu_r", vmin=-1, vmax=1, aspect="auto", interpolation="nearest")
    for row, colour in ((i, "black"), (target, "tab:green")):
        left.axhline(row, color=colour, linewidth=1.2)
    # Few ticks: tick labels are most of the drawing time, and the explorer redraws on every move.
    left.set_xticks([0, view["dim"] - 1])
    left.set_yticks([0, len(view["encoding"]) - 1])
    left.set_xlabel("column")
    left.set_ylabel("position")
    left.set_title(f"P  (d = {view['dim']}, base = {view['base']:g})", fontsize=9, y=1.01)

    columns = range(view["dim"])
    middle.plot(columns, view["p_position"].numpy(), "o-", color="black", markersize=3, label=f"P[{i}]")
    middle.plot(columns, view["p_target"].numpy(), "s-", color="tab:green", markersize=5, label=f"P[{target}]")
    middle.plot(columns, view["p_shifted"].numpy(), "x", color="tab:red", markersize=7, markeredgewidth=1.5, zorder=3, label=f"M @ P[{i}]")
    middle.set_ylim(-1.15, 1.15)
    middle.set_xticks([0, view["dim"] - 1])
    middle.set_yticks([-1, 0, 1])
    middle.set_xlabel("column")
    middle.legend(fontsize=7, loc="lower right")
    middle.set_title(f"max |M P[i] - P[i+δ]| = {view['max_error']:.1e}", fontsize=9, y=1.01)

    right.imshow(view["shift_matrix"].numpy(), cmap="RdBu_r", vmin=-1, vmax=1, interpolation="nearest")
    right.set_title(f"shift matrix M(δ = {view['delta']})", fontsize=9, y=1.01)
    right.set_xticks([])
    right.set_yticks([])
    # Titles get a fixed height (y=1.01 above): matplotlib then skips placing them around the tick labels.
    fig.subplots_adjust(left=0.06, right=0.99, bottom=0.15, top=0.9, wspace=0.3)
    return fig


def positional_explorer(position: int = 10, delta: int = 5, dim: int = 16, base: float = 10000.0,
                        num_positions: int = 64):
    """Sliders for i, delta, d and the base; the delta slider keeps i + delta inside the heat-map."""
    import ipywidgets as widgets

    last = num_positions - 1
    controls = {
        "position": widgets.IntSlider(value=position, min=0, max=last, description="position i"),
        "delta": widgets.IntSlider(value=delta, min=-position, max=last - position, description="offset δ"),
        "dim": widgets.IntSlider(value=dim, min=2, max=64, step=2, description="d"),
        "base": widgets.FloatLogSlider(value=base, base=10, min=1, max=5, step=0.25, description="base"),
    }

    def keep_target_inside(change):
        # Widen first, then narrow, so min never exceeds max; the value is clamped if needed.
        slider, new = controls["delta"], change["new"]
        slider.min, slider.max = min(slider.min, -new), max(slider.max, last - new)
        slider.min, slider.max = -new, last - new

    # Registered before figure_explorer's redraw, so the offset is valid when the figure is drawn.
    controls["position"].observe(keep_target_inside, names="value")
    return figure_explorer(
        controls,
        lambda **values: plot_positional(positional_view(num_positions=num_positions, **values)),
    )
