"""Chapter 6 explorer: type numbers, watch the pretrained pointer network
sort them."""

import re

import matplotlib.pyplot as plt
import matplotlib.transforms as transforms
import numpy as np
import torch

from .._checks import require_int, require_text
from ..measure.threads import single_thread
from ..nn.pointer import PointerNetwork
from ..tasks.sorting import pretrained_sorter, scale_to_unit
from ._explorer import live_explorer
from ._frames import Choices, with_first
from ._live import EXPLORER_DPI, draws_view

MAX_NUMBERS = 30
#: The inputs the explorer offers in the HTML book, where nothing can be typed:
#: the source's example, repeated and negative numbers, and longer inputs up to
#: the longest the sorter was trained on.
EXAMPLES = (
    "20, 5, 10",
    "3, 1, 4, 1, 5",
    "-2.5, 7, 0, 3.25, -8, 1",
    "12, 7, 19, 3, 15, 8, 1, 10",
    "0.61, 0.08, 0.93, 0.47, 0.25, 0.77, 0.12, 0.54, 0.39, 0.86",
    "44, 17, 90, 3, 68, 25, 51, 9, 82, 36, 60, 12, 75, 29, 5",
)
FLOAT32_MAX = torch.finfo(torch.float32).max
_MODEL = None


def _model():
    """The pretrained sorter, loaded (and warmed up) on first use and then
    kept."""
    global _MODEL
    if _MODEL is None:
        model = pretrained_sorter()
        with single_thread():
            model.decode(
                torch.tensor([[0.3, 0.1, 0.2]])
            )  # the first call pays one-off set-up costs
        _MODEL = model
    return _MODEL


def parse_numbers(text: str) -> list[float]:
    """Numbers separated by commas, semicolons or spaces, e.g. "20, 5, 10" ->
    [20.0, 5.0, 10.0].

    Each must be finite and within float32's range (about ±3.4e38), the
    precision the model uses.
    """
    require_text("text", text)
    tokens = [token for token in re.split(r"[,;\s]+", text.strip()) if token]
    if not tokens:
        raise ValueError("type at least one number, e.g. 20, 5, 10")
    if len(tokens) > MAX_NUMBERS:
        raise ValueError(f"at most {MAX_NUMBERS} numbers, got {len(tokens)}")
    numbers = []
    for token in tokens:
        try:
            value = float(token)
        except ValueError:
            raise ValueError(f"{token!r} is not a number") from None
        if value != value or value in (float("inf"), float("-inf")):
            raise ValueError(f"{token!r} is not a finite number")
        if abs(value) > FLOAT32_MAX:
            raise ValueError(
                f"{token} is too large: the model computes in float32, whose "
                f"numbers stop at ±{FLOAT32_MAX:.4g}"
            )
        numbers.append(value)
    return numbers


def pointer_view(text: str = "20, 5, 10", model=None) -> dict:
    """Everything the explorer shows for one input.

    Returns a dict with ``numbers`` (n floats as typed), ``scaled`` (n,) the
    numbers mapped into the training range, ``positions`` (n,) the 0-based
    output positions, ``order`` the same 1-based (as in the source),
    ``weights`` (n, n) the pointer distribution of every step (row t - 1 = step
    t), ``sorted_numbers`` the numbers in output order and ``correct`` (is that
    order descending?).
    """
    model = _model() if model is None else model
    if not isinstance(model, PointerNetwork):
        raise ValueError(
            "model must be an attnbook.PointerNetwork, got "
            f"{type(model).__name__}"
        )
    numbers = parse_numbers(text)
    x = torch.tensor([numbers], dtype=torch.float32)
    scaled = scale_to_unit(x)
    with single_thread():
        positions, weights = model.decode(scaled, return_weights=True)
    positions = positions[0].tolist()
    sorted_numbers = [numbers[p] for p in positions]
    return {
        "numbers": numbers,
        "scaled": scaled[0],
        "positions": positions,
        "order": [p + 1 for p in positions],
        "weights": weights[0],
        "sorted_numbers": sorted_numbers,
        "correct": all(
            a >= b for a, b in zip(sorted_numbers, sorted_numbers[1:])
        ),
    }


def _label(value: float) -> str:
    return f"{value:g}"


def _tick_labels(view: dict) -> tuple[list[str], list[str]]:
    """Labels of the input positions (columns) and of the decoding steps
    (rows), as the heat-map shows them."""
    n = len(view["numbers"])
    columns = [
        f"{i + 1} ({_label(v)})" if n <= 12 else str(i + 1)
        for i, v in enumerate(view["numbers"])
    ]
    rows = [
        f"{m + 1} → {p}" if n <= 15 else str(m + 1)
        for m, p in enumerate(view["order"])
    ]
    return columns, rows


def _order_title(view: dict) -> str:
    """The figure's title: the output order (1-based) and whether it is
    sorted."""
    verdict = "sorted" if view["correct"] else "NOT sorted"
    order = ", ".join(map(str, view["order"][:12])) + (
        ", …" if len(view["order"]) > 12 else ""
    )
    return f"output {order}  ({verdict})"


def _step_title(view: dict, step: int) -> str:
    """What step ``step`` (0-based) points at and which positions it may not
    point at (the first ten)."""
    hidden = view["order"][:step]
    masked = ", ".join(map(str, hidden[:10])) + (
        f", … ({len(hidden)} in all)" if len(hidden) > 10 else ""
    )
    masked = masked or "none"
    return (
        f"step {step + 1}: points at {view['order'][step]}; masked: {masked}"
    )


def _new_figure():
    """An empty pointer figure: heat-map axes with an empty image, a colour
    bar, the row label.

    It is made at the explorer's resolution: the layout (``_lay_out``) is
    worked out in pixels, so a figure made here and one the explorer shows lay
    out the same input alike.
    """
    fig = plt.figure(dpi=EXPLORER_DPI)
    ax = fig.add_axes((0, 0, 1, 1))
    colour_axes = fig.add_axes((0, 0, 1, 1))
    image = ax.imshow(
        np.zeros((1, 1)), cmap="Reds", vmin=0.0, vmax=1.0, aspect="auto"
    )
    fig.colorbar(image, cax=colour_axes, ticks=[0, 0.25, 0.5, 0.75, 1])
    ax.set_xticks(
        []
        # positions and steps are labelled with plain text: ticks cost twice as
        # much to draw
    )
    ax.set_yticks([])
    ax.set_ylabel("step t → pointer")
    return fig


def _shows_input(fig, view: dict) -> bool:
    """Does ``fig`` already show ``view``'s input (same heat-map, labels and
    title)?"""
    ax = fig.axes[0]
    columns, rows = _tick_labels(view)
    return (
        fig.get_suptitle() == _order_title(view)
        and [label.get_text() for label in ax.texts] == columns + rows
        and np.array_equal(ax.images[0].get_array(), view["weights"].numpy())
    )


_POINT = 1 / 72  # inches
# points between the heat-map and its column and row labels (where ticks would
# be)
_LABEL_GAP = 7
_EDGE = 0.06  # inches of white round the figure


def _show_input(fig, view: dict) -> None:
    """Show in ``fig`` what depends on the input only: size, heat-map (n, n),
    labels, title; then lay it out.

    The column labels (n texts under the map) come first in ``ax.texts``, then
    the row labels (n texts left of it). The step markers, a frame (Rectangle)
    and the crosses (a Line2D), are made anew and empty, and a blank title
    keeps the step's line free while the layout is worked out.
    """
    n = len(view["numbers"])
    side = min(1.8 + 0.3 * n, 6.0)
    fig.set_size_inches(side + 1.6, side * 0.7 + 0.8)
    ax, colour_axes = fig.axes
    (image,) = ax.images
    image.set_data(view["weights"].numpy())
    image.set_extent((-0.5, n - 0.5, n - 0.5, -0.5))
    ax.set_xlim(-0.5, n - 0.5)
    ax.set_ylim(n - 0.5, -0.5)
    for artist in (*ax.texts, *ax.patches, *ax.lines):
        artist.remove()
    gap = _LABEL_GAP * _POINT
    under = transforms.blended_transform_factory(ax.transData, ax.transAxes)
    under += transforms.ScaledTranslation(0, -gap, fig.dpi_scale_trans)
    left_of = transforms.blended_transform_factory(ax.transAxes, ax.transData)
    left_of += transforms.ScaledTranslation(-gap, 0, fig.dpi_scale_trans)
    columns, rows = _tick_labels(view)
    for i, label in enumerate(columns):
        ax.text(
            i,
            0,
            label,
            rotation=90 if n > 6 else 0,
            ha="center",
            va="top",
            transform=under,
        )
    for m, label in enumerate(rows):
        ax.text(
            0, m, label, ha="right", va="center_baseline", transform=left_of
        )
    ax.set_xlabel(
        "input position j (value)" if n <= 12 else "input position j"
    )
    title = fig.suptitle(_order_title(view), fontsize=10)
    ax.add_patch(
        plt.Rectangle(
            (-0.5, -0.5),
            n,
            1,
            fill=False,
            edgecolor="black",
            linewidth=2,
            visible=False,
        )
    )
    ax.plot(
        [],
        [],
        linestyle="none",
        marker="x",
        markersize=8,
        markeredgewidth=1.5,
        color="black",
    )
    ax.set_title(" ", fontsize=9)
    _lay_out(fig, ax, colour_axes, title)


def _lay_out(fig, ax, colour_axes, title) -> None:
    """Size the heat-map ``ax`` and its colour bar so that every label fits,
    measuring each text once.

    The margins are the measured labels and titles plus matplotlib's default
    pads (points); the axis labels are pushed out past the column and row
    labels. This does what constrained layout did in a fraction of the time,
    and the positions are then
    fixed: a new step, or drawing the figure again, moves nothing.
    """
    width, height = fig.get_size_inches()
    n = len(ax.texts) // 2
    columns, rows = ax.texts[:n], ax.texts[n:]

    def across(texts):  # widest text, inches
        return max(t.get_window_extent().width for t in texts) / fig.dpi

    def tall(texts):  # tallest text, inches
        return max(t.get_window_extent().height for t in texts) / fig.dpi

    ax.xaxis.labelpad = _LABEL_GAP + tall(columns) / _POINT + 4
    ax.yaxis.labelpad = _LABEL_GAP + across(rows) / _POINT + 4
    left = _EDGE + across([ax.yaxis.label]) + ax.yaxis.labelpad * _POINT
    bottom = _EDGE + tall([ax.xaxis.label]) + ax.xaxis.labelpad * _POINT
    top = _EDGE + tall([title]) + 4 * _POINT + tall([ax.title]) + 6 * _POINT
    gap, bar = 0.2, 0.12  # between heat-map and colour bar; colour bar width
    right = (
        gap + bar + 7 * _POINT + across(colour_axes.get_yticklabels()) + _EDGE
    )  # 7: tick length and pad
    title.set_y(1 - _EDGE / height)
    box = (
        left / width,
        bottom / height,
        1 - (left + right) / width,
        1 - (bottom + top) / height,
    )
    ax.set_position(box)
    bar_height = 0.7 * box[3]
    bar_bottom = box[1] + (box[3] - bar_height) / 2
    colour_axes.set_position(
        (box[0] + box[2] + gap / width, bar_bottom, bar / width, bar_height)
    )


@draws_view
def plot_pointer(view: dict, step: int | None = None):
    """Heat-map of the pointer distributions: decoding steps (rows) x input
    positions (columns).

    step (0-based), if given, frames that decoding step and marks with x the
    positions already chosen before it, which the mask hides from the pointer.
    """
    fig = _new_figure()
    update_pointer_figure(fig, view, step)
    return fig


@draws_view
def update_pointer_figure(fig, view: dict, step: int | None = None) -> list:
    """Show ``view`` at ``step`` in a figure made by ``plot_pointer``; returns
    the artists that changed.

    A new step moves the frame and the crosses and changes the title: those
    three artists are returned. A new input (other numbers) first redraws what
    depends on it (``_show_input``), with new step markers: the returned
    artists are then new ones, which tells the live figure to draw everything
    else again too. step is 0-based and clamped to the last step; None marks no
    step.
    """
    if not _shows_input(fig, view):
        _show_input(fig, view)
    ax = fig.axes[0]
    (frame,) = ax.patches
    (crosses,) = ax.lines
    if step is None:
        frame.set_visible(False)
        crosses.set_data([], [])
        ax.set_title("", fontsize=9)
    else:
        step = min(
            require_int("step", step, minimum=0), len(view["numbers"]) - 1
        )
        frame.set_visible(True)
        frame.set_y(step - 0.5)
        hidden = view["positions"][:step]
        crosses.set_data(hidden, [step] * len(hidden))
        ax.set_title(_step_title(view, step), fontsize=9)
    return [frame, crosses, ax.title]


def pointer_explorer(text: str = "20, 5, 10"):
    """A text box of numbers and a step slider; shows the pretrained sorter's
    pointer at every step and, for the chosen step, which positions the mask
    hides.

    Moving the step redraws only the frame, the crosses and the step's title;
    new numbers redraw the whole figure (its size follows the number of
    inputs).
    """
    import ipywidgets as widgets

    _model()  # load once, before the first draw
    controls = {
        "text": widgets.Text(
            value=text,
            description="numbers",
            continuous_update=False,
            layout=widgets.Layout(width="420px"),
        ),
        "step": widgets.IntSlider(
            value=1,
            min=1,
            max=MAX_NUMBERS,
            description="step t",
            continuous_update=False,
        ),
    }

    def view(text, step):  # the slider counts steps from 1, as the figure does
        return {**pointer_view(text), "step": step - 1}

    def plot(view):
        return plot_pointer(view, view["step"])

    def update(figure, view):
        return update_pointer_figure(figure, view, view["step"])

    examples = with_first(text, EXAMPLES)
    frames = {
        "text": Choices(
            "numbers", examples, kind="menu", value=text, width="420px"
        ),
        "step": Choices(
            "step t",
            {t: list(range(1, len(parse_numbers(t)) + 1)) for t in examples},
            depends_on="text",
        ),
    }
    return live_explorer(controls, view, plot, update, frames=frames)
