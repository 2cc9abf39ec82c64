"""Explorers that move without Python: every picture drawn in advance, chosen
in the browser.

A live explorer (``_live.live_explorer``) redraws its figure in Python each
time a control moves, so in a page where no Python runs (the HTML book) it
cannot move. Its frame version draws, once, the figure for every combination of
a small grid of control values, and puts the pictures in nested ipywidgets
``Stack``\\ s: the outer Stack has one child per value of the first control,
each child one per value of the second, and so on down to the pictures. Each
control's ``index`` is linked in the browser (``jslink``) to the
``selected_index`` of every Stack on its level, so moving a control shows
another picture with no kernel at all. The pictures are the explorer's own
figure (the same ``view``, ``plot`` and ``update``), drawn at twice the size
they are shown, so they stay sharp on high-density screens.

A control whose values depend on another (the head slider of a model with 1, 2
or 4 heads) is one widget per value of that other control, all in a Stack that
the other control selects. An explorer is built this way when the environment
variable ``ATTNBOOK_EXPLORER_FRAMES`` is ``1``: ``make notebooks`` sets it, so
the stored chapters (and the HTML book built from them) hold frames, while a
reader who runs a chapter gets the live explorer.
"""

import io
import os
from dataclasses import dataclass

import matplotlib.pyplot as plt
from PIL import Image

from ..display.figures import BOOK_COLUMN_PX, smallest_text_px
from ..measure.threads import single_thread
from ._live import EXPLORER_DPI, LiveFigure, canvas_image, explorer_box

FRAMES_VARIABLE = "ATTNBOOK_EXPLORER_FRAMES"
#: Frames hold this many pixels per CSS pixel they are shown at.
PIXEL_RATIO = 2
# a plot has few colours: a 256-colour palette keeps them and shrinks the PNG
# ~3x
_COLOURS = 256
_PNG_COMPRESSION = 6


def frames_wanted() -> bool:
    """True when explorers should be built from frames
    (``ATTNBOOK_EXPLORER_FRAMES=1``)."""
    return os.environ.get(FRAMES_VARIABLE, "") == "1"


@dataclass
class Choices:
    """The values one control takes in the frame grid, and how it is shown.

    options: a list of values, or of ``(label, value)`` pairs; or, with
    ``depends_on``, a dict from each value of that (earlier, independent)
    control to such a list.
    kind: ``"slider"`` (a SelectionSlider), ``"menu"`` (a Dropdown) or
    ``"buttons"`` (ToggleButtons).
    value: the value shown first (default: the first option).
    """

    description: str
    options: list | dict
    kind: str = "slider"
    value: object = None
    depends_on: str | None = None
    width: str | None = None

    def __post_init__(self):
        if self.kind not in ("slider", "menu", "buttons"):
            raise ValueError(
                "kind must be 'slider', 'menu' or 'buttons', got "
                f"{self.kind!r}"
            )
        lists = self.options.values() if self.depends_on else [self.options]
        if not all(len(options) > 0 for options in lists):
            raise ValueError(
                f"{self.description!r}: every list of options must have at "
                "least one value"
            )

    def pairs(self, values: dict) -> list:
        """The (label, value) options given the values of the controls
        before this one."""
        options = (
            self.options[values[self.depends_on]]
            if self.depends_on
            else self.options
        )
        return [
            option if isinstance(option, tuple) else (_label(option), option)
            for option in options
        ]


def with_first(value, options) -> list:
    """A menu's options: ``options``, with ``value`` put first if it is not
    among them."""
    options = list(options)
    return options if value in options else [value, *options]


def _label(value) -> str:
    return f"{value:g}" if isinstance(value, float) else str(value)


class FrameGrid:
    """The explorer's figure for every combination of the ``grid``'s control
    values.

    grid: name -> ``Choices``, in the order the Stacks nest (a control may
    depend only on an earlier one). ``view(**values)``, ``plot(view)`` and
    ``update(figure, view)`` are the live explorer's (see
    ``_live.live_explorer``). A frame is shown at the live explorer's size, or
    narrower if that would not fit the book's column (``BOOK_COLUMN_PX``), and
    drawn with ``PIXEL_RATIO`` pixels per CSS pixel. ``frame(values)`` draws
    one; ``frames()`` draws them all, in the grid's order, and keeps them.
    """

    def __init__(self, grid: dict, view, plot, update):

        names = list(grid)
        for position, (name, choices) in enumerate(grid.items()):
            if choices.depends_on is not None:
                parent = grid.get(choices.depends_on)
                if (
                    parent is None
                    or names.index(choices.depends_on) > position
                    or parent.depends_on
                ):
                    raise ValueError(
                        f"{name!r} may depend only on an earlier control "
                        "without a dependence, "
                        f"got depends_on={choices.depends_on!r}"
                    )
        self.grid, self.view = grid, view
        with single_thread():
            figure = plot(view(**first_values(grid)))
        #: CSS pixels per inch of figure: the live explorer's, unless the
        #: figure is wider than the column.
        self.css_per_inch = min(
            EXPLORER_DPI, BOOK_COLUMN_PX / figure.get_figwidth()
        )
        self.live = LiveFigure(
            figure, update, dpi=PIXEL_RATIO * self.css_per_inch
        )
        self.smallest_text = float("inf")  # CSS px, over every frame drawn
        self._frames = {}

    def frame(self, values: dict) -> tuple[bytes, int, int]:
        """The frame for ``values`` (name -> value): a 256-colour PNG and
        its CSS width and height."""

        with single_thread():
            self.live.render_pixels(self.view(**values))
        image = canvas_image(self.live.figure)
        width, height = image.size
        buffer = io.BytesIO()
        image.quantize(_COLOURS, method=Image.Quantize.FASTOCTREE).save(
            buffer, format="png", compress_level=_PNG_COMPRESSION
        )
        css_width, css_height = (
            round(width / PIXEL_RATIO),
            round(height / PIXEL_RATIO),
        )
        self.smallest_text = min(
            self.smallest_text, smallest_text_px(self.live.figure, css_width)
        )
        return buffer.getvalue(), css_width, css_height

    def frames(self) -> dict:
        """indices -> ``frame(values)`` for every combination (drawn once,
        then kept)."""
        if not self._frames:
            self._frames = {
                indices: self.frame(values)
                for indices, values in grid_combinations(self.grid)
            }
        return self._frames

    def close(self):
        plt.close(self.live.figure)


def _control(choices: Choices, pairs: list):
    import ipywidgets as widgets

    index = next(
        (i for i, (_, value) in enumerate(pairs) if value == choices.value), 0
    )
    if choices.kind == "menu":
        control = widgets.Dropdown(
            options=pairs,
            index=index,
            description=choices.description,
            layout=widgets.Layout(width=choices.width),
        )
    elif (
        choices.kind == "buttons"
    ):  # label and buttons on one line (the HTML book's renderer stacks them)
        control = widgets.ToggleButtons(
            options=pairs,
            index=index,
            description=choices.description,
            style={"button_width": "auto"},
            layout=widgets.Layout(
                width=choices.width or "auto",
                display="flex",
                align_items="center",
            ),
        )
    else:
        control = widgets.SelectionSlider(
            options=pairs,
            index=index,
            description=choices.description,
            layout=widgets.Layout(width=choices.width),
            style={"description_width": "initial"},
        )
    control.add_class("attnbook-control")
    return control


def frame_explorer(grid: dict, view, plot, update):
    """The explorer as controls over nested Stacks of frames, linked in the
    browser.

    Returns a VBox (a row of controls, the frames) with class
    ``attnbook-explorer``; it keeps its ``FrameGrid`` as ``box.frame_grid`` and
    its browser links as ``box.frame_links``. See the module docstring for how
    it works.
    """
    import ipywidgets as widgets

    frame_grid = FrameGrid(grid, view, plot, update)
    frames = frame_grid.frames()
    names = list(grid)
    first = first_values(grid)

    # jslink returns its Link widget: kept so that a test can check every Stack
    # has one
    links = []

    # One widget per control, or one per value of the control it depends on.
    controls, shown = {}, []
    for name, choices in grid.items():
        if choices.depends_on is None:
            controls[name] = {None: _control(choices, choices.pairs(first))}
            shown.append(controls[name][None])
        else:
            parent = grid[choices.depends_on]
            per_value = {}
            for _, parent_value in parent.pairs(first):
                pairs = choices.pairs({choices.depends_on: parent_value})
                per_value[parent_value] = _control(choices, pairs)
            controls[name] = per_value
            parent_widget = controls[choices.depends_on][None]
            stack = widgets.Stack(
                list(per_value.values()), selected_index=parent_widget.index
            )
            links.append(
                widgets.jslink(
                    (parent_widget, "index"), (stack, "selected_index")
                )
            )
            shown.append(stack)

    def build(position: int, indices: tuple, values: dict):
        if position == len(names):
            png, width, height = frames[indices]
            image = widgets.Image(
                value=png, format="png", width=str(width), height=str(height)
            )
            image.add_class("attnbook-frame")
            return image
        name, choices = names[position], grid[names[position]]
        children = [
            build(position + 1, (*indices, i), {**values, name: value})
            for i, (_, value) in enumerate(choices.pairs(values))
        ]
        control = controls[name][
            values[choices.depends_on] if choices.depends_on else None
        ]
        stack = widgets.Stack(children, selected_index=control.index)
        links.append(
            widgets.jslink((control, "index"), (stack, "selected_index"))
        )
        return stack

    pictures = build(0, (), {})
    controls = widgets.HBox(shown, layout=widgets.Layout(flex_flow="row wrap"))
    box = explorer_box([controls, pictures])
    box.add_class("attnbook-explorer")
    box.frame_grid, box.frame_links = frame_grid, links
    return box


def first_values(grid: dict) -> dict:
    """name -> the value each control of ``grid`` shows first."""
    values = {}
    for name, choices in grid.items():
        pairs = choices.pairs(values)
        wanted = [value for _, value in pairs if value == choices.value]
        values[name] = wanted[0] if wanted else pairs[0][1]
    return values


def grid_combinations(grid: dict):
    """Every combination of ``grid``'s values as (indices, values), the last
    control changing fastest."""

    def walk(position, indices, values):
        if position == len(grid):
            yield tuple(indices), dict(values)
            return
        name, choices = list(grid.items())[position]
        for index, (_, value) in enumerate(choices.pairs(values)):
            yield from walk(
                position + 1, (*indices, index), {**values, name: value}
            )

    return walk(0, (), {})


def grid_size(grid: dict) -> int:
    """How many frames ``grid`` has (without drawing any)."""
    return sum(1 for _ in grid_combinations(grid))
