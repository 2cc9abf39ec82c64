"""Chapter 8 explorer: position i and offset delta -> P[i], P[i + delta] and
the shift matrix.

The width d_model (argument ``dim``) and the base set the heat-map of the whole
sinusoidal matrix P.
"""

from functools import partial

import matplotlib.pyplot as plt

from .._checks import require_finite_number, require_int_in
from ..core.positional import position_shift_matrix, sinusoidal_encoding
from ._explorer import live_explorer
from ._frames import Choices
from ._live import draws_view

#: The values the explorer's sliders take in the HTML book (frames drawn in
#: advance): i + delta stays inside 64 positions for every pair.
FRAME_POSITIONS = (0, 10, 30)
FRAME_OFFSETS = (1, 5, 20)
FRAME_DIMS = (8, 16, 64)
FRAME_BASES = (100.0, 10000.0)


def positional_view(
    position: int = 10,
    delta: int = 5,
    dim: int = 16,
    base: float = 10000.0,
    num_positions: int = 64,
) -> dict:
    """Everything the explorer shows for one setting of its controls.

    Returns a dict with the inputs, ``encoding`` P (num_positions, dim),
    ``p_position`` = P[position] and ``p_target`` = P[position + delta] (dim,),
    ``shift_matrix`` R (dim, dim), ``p_shifted`` = R @ P[position] (dim,) and
    ``max_error`` = max |R @ P[position] - P[position + delta]|. Both positions
    must lie in 0 .. num_positions - 1; dim must be even (R needs column
    pairs).
    """
    require_int_in("num_positions", num_positions, 1, 100_000)
    require_int_in("position", position, 0, num_positions - 1)
    require_int_in("delta", delta, -num_positions, num_positions)
    require_int_in("dim", dim, 2, 4096)
    if dim % 2:
        raise ValueError(
            "dim must be even (the shift matrix works on column pairs), got "
            f"{dim}"
        )
    require_finite_number("base", base, low=0.0, include_low=False)
    if num_positions * dim > 2**24:  # an explorer draws it: keep it small
        raise ValueError(
            f"num_positions x dim = {num_positions} x {dim} is more than "
            f"{2**24:,} numbers: use fewer positions or a smaller dim"
        )
    target = position + delta
    for name, value in (("position", position), ("position + delta", target)):
        if not 0 <= value < num_positions:
            raise ValueError(
                f"{name} = {value} is outside 0 .. {num_positions - 1}"
            )
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


@draws_view
def plot_positional(view: dict):
    """Heat-map of P with the two rows marked (left), the two rows and M @ P[i]
    (middle), M (right).

    Only the column axes of the left and middle panels follow d (their range
    and end ticks); M is drawn stretched over a fixed square, so every other
    axis stays fixed.
    """
    fig, (left, middle, right) = plt.subplots(
        1, 3, figsize=(9.6, 3.2), gridspec_kw={"width_ratios": [1.1, 1.4, 1.0]}
    )
    last_row = len(view["encoding"]) - 1
    left.imshow(
        view["encoding"].numpy(),
        cmap="RdBu_r",
        vmin=-1,
        vmax=1,
        aspect="auto",
        interpolation="nearest",
    )
    for colour in ("black", "tab:green"):
        left.axhline(0, color=colour, linewidth=1.2)
    left.set_ylim(last_row + 0.5, -0.5)
    # Few ticks: tick labels are most of the drawing time.
    left.set_yticks([0, last_row])
    _column_label(left)
    left.set_ylabel("position")

    middle.plot([], [], "o-", color="black", markersize=3, label="P[i]")
    middle.plot(
        [], [], "s-", color="tab:green", markersize=5, label="P[i + δ]"
    )
    middle.plot(
        [],
        [],
        "x",
        color="tab:red",
        markersize=7,
        markeredgewidth=1.5,
        zorder=3,
        label="R(δ) P[i]",
    )
    # The rows stay within -1 .. 1; the legend sits in a strip below them, so
    # no line crosses it and it is never redrawn (the title gives i and
    # i + δ).
    middle.set_ylim(-1.5, 1.15)
    middle.set_yticks([-1, 0, 1])
    _column_label(middle)
    middle.legend(
        fontsize=8.5,
        loc="lower center",
        ncols=3,
        borderpad=0.3,
        handletextpad=0.4,
        columnspacing=1.2,
    )

    right.imshow(
        view["shift_matrix"].numpy(),
        cmap="RdBu_r",
        vmin=-1,
        vmax=1,
        interpolation="nearest",
        extent=(0, 1, 1, 0),
    )
    right.set_xticks([])
    right.set_yticks([])
    # Titles get a fixed height (y=1.01): matplotlib then skips placing them
    # around the tick labels.
    for axes in (left, middle, right):
        axes.set_title(" ", fontsize=9, y=1.01)
    fig.subplots_adjust(
        left=0.06, right=0.99, bottom=0.15, top=0.9, wspace=0.3
    )
    update_positional_figure(fig, view)
    return fig


def _column_label(axes) -> None:
    """The x label "column", placed where ``set_xlabel`` puts it but as a
    fixed text: the x axis (which d changes) is redrawn on every move, and
    its own label would be redrawn with it."""
    axes.annotate(
        "column",
        xy=(0.5, 0),
        xycoords="axes fraction",
        xytext=(0, -21),
        textcoords="offset points",
        ha="center",
        va="top",
    )


def _show_columns(axes, dim: int) -> None:
    """Columns 0 .. dim - 1 on ``axes``' x axis, with ticks at both ends."""
    axes.set_xlim(-0.5, dim - 0.5)
    axes.set_xticks([0, dim - 1])


@draws_view
def update_positional_figure(fig, view: dict) -> list:
    """Show ``view`` in a figure made by ``plot_positional``; returns the
    artists that changed.

    d sets the range of the column axes: their x axes (ticks) are redrawn, not
    the whole Axes; the position axis, the value axis and M's square stay
    fixed.
    """
    left, middle, right = fig.axes
    dim, i = view["dim"], view["position"]
    target = i + view["delta"]

    (heat_map,) = left.images
    heat_map.set_data(view["encoding"].numpy())
    heat_map.set_extent((-0.5, dim - 0.5, len(view["encoding"]) - 0.5, -0.5))
    _show_columns(left, dim)
    row_i, row_target = left.lines
    row_i.set_ydata([i, i])
    row_target.set_ydata([target, target])
    left.title.set_text(f"P  (d_model = {dim}, base = {view['base']:g})")

    columns = range(dim)
    p_position, p_target, p_shifted = middle.lines
    p_position.set_data(columns, view["p_position"].numpy())
    p_target.set_data(columns, view["p_target"].numpy())
    p_shifted.set_data(columns, view["p_shifted"].numpy())
    _show_columns(middle, dim)
    middle.title.set_text(
        f"i = {i}, i + δ = {target}: max |R P[i] - P[i+δ]| = "
        f"{view['max_error']:.1e}"
    )

    (shift_image,) = right.images
    shift_image.set_data(view["shift_matrix"].numpy())
    right.title.set_text(f"shift matrix R(δ = {view['delta']})")
    return [
        heat_map,
        left.xaxis,
        row_i,
        row_target,
        left.title,
        p_position,
        p_target,
        p_shifted,
        middle.xaxis,
        middle.title,
        shift_image,
        right.title,
    ]


def positional_explorer(
    position: int = 10,
    delta: int = 5,
    dim: int = 16,
    base: float = 10000.0,
    num_positions: int = 64,
):
    """Sliders for i, delta, d_model (``dim``) and the base; the delta
    slider keeps i + delta inside the heat-map."""
    import ipywidgets as widgets

    last = num_positions - 1
    controls = {
        "position": widgets.IntSlider(
            value=position, min=0, max=last, description="position i"
        ),
        "delta": widgets.IntSlider(
            value=delta,
            min=-position,
            max=last - position,
            description="offset δ",
        ),
        "dim": widgets.IntSlider(
            value=dim, min=2, max=64, step=2, description="d_model"
        ),
        "base": widgets.FloatLogSlider(
            value=base, base=10, min=1, max=5, step=0.25, description="base"
        ),
    }

    def keep_target_inside(change):
        # Widen first, then narrow, so min never exceeds max; the value is
        # clamped if needed.
        slider, new = controls["delta"], change["new"]
        slider.min, slider.max = (
            min(slider.min, -new),
            max(slider.max, last - new),
        )
        slider.min, slider.max = -new, last - new

    # Registered before live_explorer's redraw, so the offset is valid when the
    # figure is drawn.
    controls["position"].observe(keep_target_inside, names="value")
    view = partial(positional_view, num_positions=num_positions)
    frames = {
        "position": Choices(
            "position i", list(FRAME_POSITIONS), value=position
        ),
        "delta": Choices("offset δ", list(FRAME_OFFSETS), value=delta),
        "dim": Choices("d_model", list(FRAME_DIMS), value=dim),
        "base": Choices(
            "base", [(f"{b:g}", b) for b in FRAME_BASES], value=base
        ),
    }
    return live_explorer(
        controls,
        view,
        plot_positional,
        update_positional_figure,
        frames=frames,
    )
