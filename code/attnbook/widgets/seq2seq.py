"""Chapter 5 explorer: pick or type a date, see the trained translator's
output and what each output character reads."""

import functools

import matplotlib.pyplot as plt
import numpy as np
import torch

from .._checks import require_int, require_text
from ..tasks.date_translator import pretrained_date_translator
from ..tasks.dates import MAX_INPUT_LENGTH, TARGET_LENGTH
from ._explorer import live_explorer
from ._frames import Choices, with_first
from ._live import EXPLORER_DPI, draws_view

#: Inputs of the dropdown: several forms and cases, then two inputs in none of
#: the forms.
EXAMPLES = (
    "Monday, May 3, 1999",
    "3rd of May 1999",
    "03.05.1999",
    "1999-5-3",
    "sep 30, 2047",
    "TUESDAY, FEBRUARY 29, 2000",
    "12tH Of aUg 1914",
    "3/5/1999",
    "5th november 1605",
)
MAX_ROWS = (
    TARGET_LENGTH + 1
)  # an output that never writes EOS has 11 characters
_TRANSLATOR = None


def _translator():
    """The pretrained translator, loaded on first use and then kept."""
    global _TRANSLATOR
    if _TRANSLATOR is None:
        _TRANSLATOR = pretrained_date_translator()
    return _TRANSLATOR


@functools.lru_cache(maxsize=64)
def _cached_translation(text: str):
    """The pretrained translator's (output, weights) for ``text``: a slider
    move does not translate again."""
    (output,), (weights,) = _translator().translate(
        [text], return_weights=True
    )
    return output, weights


def seq2seq_view(
    text: str = "Monday, May 3, 1999", step: int = 1, translator=None
) -> dict:
    """Everything the explorer shows for one input and one output step.

    step: output step t, counted from 1, clamped to the output's length.
    Returns a dict with ``text`` (the input), ``output`` (the translation),
    ``weights`` ((len(output), len(text)) tensor, row t - 1 = alpha_{t,:}),
    ``step`` (t after clamping, 0 if the output is empty), ``row`` (alpha_{t,:}
    as an (n,) tensor, zeros if no output), ``char`` (the character step t
    writes) and ``reads`` (the input position j, 1-based, with the largest
    weight, and its character). Raises ``ValueError`` for input the translator
    refuses (empty, too long, characters outside its vocabulary), and for a
    step below 1 or a bool, float or NaN step (a step past the last is clamped,
    as documented).
    """
    require_text("text", text)
    require_int("step", step, minimum=1)
    if translator is not None and not callable(
        getattr(translator, "translate", None)
    ):
        raise TypeError(
            "translator must be a DateTranslator, got "
            f"{type(translator).__name__}"
        )
    if translator is None:
        output, weights = _cached_translation(text)
    else:
        (output,), (weights,) = translator.translate(
            [text], return_weights=True
        )
    t = max(1, min(int(step), len(output))) if output else 0
    row = weights[t - 1] if t else torch.zeros(len(text))
    j = int(row.argmax()) if t else -1
    return {
        "text": text,
        "output": output,
        "weights": weights,
        "step": t,
        "row": row,
        "char": output[t - 1] if t else "",
        "reads": (j + 1, text[j]) if t else (0, ""),
    }


def _shown(char: str) -> str:
    return "␣" if char == " " else char


def _title(view: dict) -> str:
    if not view["step"]:
        return f"{view['text']!r}  →  (no output)"
    j, char = view["reads"]
    return (
        f"{view['text']!r}  →  {view['output']!r}\n"
        f"step t = {view['step']} writes {view['char']!r}, reads most from "
        f"input {j} ({_shown(char)!r}, "
        f"weight {float(view['row'][j - 1]):.2f})"
    )


@draws_view
def plot_seq2seq(view: dict):
    """The explorer's figure: the weights alpha_{t,j} of step t as bars (top)
    and the whole alignment (bottom), output steps t (rows) x input characters
    j (columns), step t framed.

    The axes are fixed for every input: MAX_INPUT_LENGTH columns and MAX_ROWS
    rows, the unused ones blank; each label is its own text, changed in place
    by the update.
    """
    fig = plt.figure(figsize=(8.4, 5.0), dpi=EXPLORER_DPI)
    bars_ax = fig.add_axes((0.1, 0.66, 0.86, 0.17))
    map_ax = fig.add_axes((0.1, 0.1, 0.86, 0.53))
    columns = np.arange(MAX_INPUT_LENGTH)
    bars_ax.bar(
        columns, np.zeros(MAX_INPUT_LENGTH), width=0.8, color="tab:red"
    )
    bars_ax.set_xlim(-0.5, MAX_INPUT_LENGTH - 0.5)
    bars_ax.set_ylim(0, 1)
    bars_ax.set_xticks([])
    bars_ax.set_yticks([0, 0.5, 1])
    bars_ax.set_ylabel(r"$\alpha_{tj}$")
    cmap = plt.get_cmap("Reds").with_extremes(bad="white")
    map_ax.imshow(
        np.full((MAX_ROWS, MAX_INPUT_LENGTH), np.nan),
        cmap=cmap,
        vmin=0,
        vmax=1,
        aspect="auto",
        extent=(-0.5, MAX_INPUT_LENGTH - 0.5, MAX_ROWS - 0.5, -0.5),
        interpolation="nearest",
    )
    map_ax.set_xlim(-0.5, MAX_INPUT_LENGTH - 0.5)
    map_ax.set_ylim(MAX_ROWS - 0.5, -0.5)
    map_ax.set_xticks([])
    map_ax.set_yticks([])
    map_ax.set_xlabel("input character j", labelpad=16)
    map_ax.set_ylabel("output step t", labelpad=30)
    for j in columns:
        map_ax.text(
            j,
            MAX_ROWS - 0.5 + 0.25,
            "",
            ha="center",
            va="top",
            fontsize=9,
            family="monospace",
        )
    for t in range(MAX_ROWS):
        map_ax.text(
            -0.9,
            t,
            "",
            ha="right",
            va="center",
            fontsize=9,
            family="monospace",
        )
    map_ax.add_patch(
        plt.Rectangle(
            (-0.5, -0.5),
            MAX_INPUT_LENGTH,
            1,
            fill=False,
            edgecolor="black",
            linewidth=2,
        )
    )
    fig.text(0.5, 0.985, "", ha="center", va="top", fontsize=10)
    update_seq2seq_figure(fig, view)
    return fig


@draws_view
def update_seq2seq_figure(fig, view: dict) -> list:
    """Show ``view`` in a figure made by ``plot_seq2seq``; returns the artists
    that changed.

    Every move (new input or new step) changes the same artists: the bars, the
    heat map, the column and row labels, the frame and the title.
    """
    bars_ax, map_ax = fig.axes
    bars = list(bars_ax.patches)
    (image,) = map_ax.images
    columns = map_ax.texts[:MAX_INPUT_LENGTH]
    rows = map_ax.texts[MAX_INPUT_LENGTH:]
    (frame,) = map_ax.patches
    (title,) = fig.texts
    n, weights = len(view["text"]), view["weights"].numpy()
    grid = np.full((MAX_ROWS, MAX_INPUT_LENGTH), np.nan)
    grid[: weights.shape[0], :n] = weights
    image.set_data(grid)
    row = view["row"].numpy()
    for j, bar in enumerate(bars):
        bar.set_height(float(row[j]) if j < n else 0.0)
    for j, label in enumerate(columns):
        label.set_text(_shown(view["text"][j]) if j < n else "")
    for t, label in enumerate(rows):
        label.set_text(
            f"{t + 1}: {view['output'][t]}" if t < len(view["output"]) else ""
        )
    frame.set_visible(view["step"] > 0)
    frame.set_y(view["step"] - 1.5)
    frame.set_width(n)  # the frame spans the input's characters only
    title.set_text(_title(view))
    return [*bars, image, *columns, *rows, frame, title]


def seq2seq_explorer(text: str = "Monday, May 3, 1999", examples=EXAMPLES):
    """A menu of example inputs, a text box for your own, and a slider over
    output steps t.

    The figure shows the translation, the weights alpha_{tj} with which output
    step t reads each input character j (bars), and the whole alignment (heat
    map, step t framed). Choosing an example copies it into the text box; the
    text box is what is translated.
    """
    import ipywidgets as widgets

    _translator()  # load once, before the first draw
    examples = with_first(text, examples)
    menu = widgets.Dropdown(
        options=examples,
        value=text,
        description="example",
        layout=widgets.Layout(width="300px"),
    )
    box = widgets.Text(
        value=text,
        description="input",
        continuous_update=False,
        layout=widgets.Layout(width="300px"),
    )
    # The menu only fills the text box, whose change redraws the figure (once).
    menu.observe(
        lambda change: setattr(box, "value", change["new"]), names="value"
    )
    slider = widgets.IntSlider(
        value=1,
        min=1,
        max=MAX_ROWS,
        description="step t",
        continuous_update=False,
    )

    def update(figure, view):
        return update_seq2seq_figure(figure, view)

    frames = {  # the menu of examples, and every step of each
        "text": Choices(
            "example", examples, kind="menu", value=text, width="300px"
        ),
        "step": Choices(
            "step t",
            {
                t: list(range(1, len(_cached_translation(t)[0]) + 1))
                for t in examples
            },
            depends_on="text",
        ),
    }
    explorer = live_explorer(
        {"step": slider, "text": box},
        seq2seq_view,
        plot_seq2seq,
        update,
        frames=frames,
    )
    if hasattr(
        explorer, "frame_grid"
    ):  # built from frames: the menu is its only way to choose an input
        return explorer
    explorer.children[0].children = (slider, menu, box)
    explorer.children[
        0
    ].layout.flex_flow = (
        "row wrap"  # on a narrow page the text box goes to a second row
    )
    return explorer
