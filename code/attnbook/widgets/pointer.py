"""Chapter 5 explorer: type numbers, watch the pretrained pointer network sort them."""

import re

import matplotlib.pyplot as plt
import torch

from ..plotting import show_heatmaps
from ..pointer import pretrained_sorter, scale_to_unit
from ..threads import single_thread
from ._live import figure_explorer

MAX_NUMBERS = 30
_MODEL = None


def _model():
    """The pretrained sorter, loaded (and warmed up) on first use and then kept."""
    global _MODEL
    if _MODEL is None:
        model = pretrained_sorter()
        with single_thread():
            model.decode(torch.rand(1, 3))  # the first call pays one-off set-up costs
        _MODEL = model
    return _MODEL


def parse_numbers(text: str) -> list[float]:
    """Numbers separated by commas, semicolons or spaces, e.g. "20, 5, 10" -> [20.0, 5.0, 10.0]."""
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
        numbers.append(value)
    return numbers


def pointer_view(text: str = "20, 5, 10", model=None) -> dict:
    """Everything the explorer shows for one input.

    Returns a dict with ``numbers`` (n floats as typed), ``scaled`` (n,) the numbers
    mapped into the training range, ``positions`` (n,) the 0-based output positions,
    ``order`` the same 1-based (as in the source), ``weights`` (n, n) the pointer
    distribution of every step (row m = step m+1), ``sorted_numbers`` the numbers
    in output order and ``correct`` (is that order descending?).
    """
    model = _model() if model is None else model
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
        "correct": all(a >= b for a, b in zip(sorted_numbers, sorted_numbers[1:])),
    }


def _label(value: float) -> str:
    return f"{value:g}"


def plot_pointer(view: dict, step: int | None = None):
    """Heat-map of the pointer distributions: decoding steps (rows) x input positions (columns).

    step (0-based), if given, frames that decoding step and marks with x the positions
    already chosen before it, which the mask hides from the pointer.
    """
    n = len(view["numbers"])
    side = min(1.8 + 0.3 * n, 6.0)
    fig = show_heatmaps(
        view["weights"],
        xlabel="input position n (value)" if n <= 12 else "input position n",
        ylabel="step m → pointer",
        figsize=(side + 1.6, side * 0.7 + 0.8),
        xticklabels=[f"{i + 1} ({_label(v)})" if n <= 12 else str(i + 1) for i, v in enumerate(view["numbers"])],
        yticklabels=[f"{m + 1} → {p}" if n <= 15 else str(m + 1) for m, p in enumerate(view["order"])],
        vmax=1.0,
    )
    fig.set_layout_engine("constrained")  # room for the axis labels and rotated ticks (~15 ms)
    verdict = "sorted" if view["correct"] else "NOT sorted"
    order = ", ".join(map(str, view["order"])) if n <= 12 else ", ".join(map(str, view["order"][:12])) + ", …"
    fig.suptitle(f"output {order}  ({verdict})", fontsize=10)
    if step is not None:
        _mark_step(fig.axes[0], view, min(step, n - 1))
    return fig


def _mark_step(ax, view: dict, step: int) -> None:
    """Frame row ``step`` and put an x on the positions the mask hides at that step."""
    n = len(view["numbers"])
    ax.add_patch(plt.Rectangle((-0.5, step - 0.5), n, 1, fill=False, edgecolor="black", linewidth=2))
    for chosen in view["positions"][:step]:
        ax.text(chosen, step, "×", ha="center", va="center", color="black", fontsize=11)
    hidden = ", ".join(str(p) for p in view["order"][:step]) or "none"
    ax.set_title(f"step {step + 1}: points at {view['order'][step]}; masked: {hidden}", fontsize=9)


def pointer_explorer(text: str = "20, 5, 10"):
    """A text box of numbers and a step slider; shows the pretrained sorter's pointer at every step
    and, for the chosen step, which positions the mask hides."""
    import ipywidgets as widgets

    _model()  # load once, before the first draw

    def draw(text, step):  # the slider counts steps from 1, as the figure does
        return plot_pointer(pointer_view(text), step=step - 1)

    controls = {
        "text": widgets.Text(value=text, description="numbers", continuous_update=False,
                             layout=widgets.Layout(width="420px")),
        "step": widgets.IntSlider(value=1, min=1, max=MAX_NUMBERS, description="step m", continuous_update=False),
    }
    return figure_explorer(controls, draw)
