"""Explorers built from frames (``attnbook.widgets._frames``), checked in Python on a toy explorer.

Following the controls' indices down the nested Stacks must reach the frame drawn for
those values; every Stack must be linked to the control of its level (a missing link is a
control that moves nothing in the browser); a frame must equal a full draw of the same
figure at twice the size it is shown. The browser side is tests/book/test_browser_explorers.py.
"""

import io

import matplotlib

matplotlib.use("Agg")

import ipywidgets as widgets  # noqa: E402
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
from PIL import Image  # noqa: E402

from attnbook.display.figures import BOOK_COLUMN_PX, MIN_TEXT_PX  # noqa: E402
from attnbook.widgets import _frames  # noqa: E402
from attnbook.widgets._frames import (
    Choices,
    FrameGrid,
    frame_explorer,
    grid_size,
)  # noqa: E402
from attnbook.widgets._live import EXPLORER_DPI  # noqa: E402


def toy_view(slope: float, shift: int, kind: str = "line") -> dict:
    return {"slope": slope, "shift": shift, "kind": kind}


def toy_plot(view: dict, width: float = 5.0):
    fig, ax = plt.subplots(figsize=(width, 2.5))
    ax.plot([0, 1], [0, 0], color="tab:blue")
    ax.set_xlim(0, 1)
    ax.set_ylim(-5, 5)
    ax.set_title(" ")
    toy_update(fig, view)
    return fig


def toy_update(fig, view: dict) -> list:
    ax = fig.axes[0]
    (line,) = ax.lines
    line.set_data([0, 1], [view["shift"], view["shift"] + view["slope"]])
    line.set_linestyle("-" if view["kind"] == "line" else ":")
    ax.title.set_text(
        f"slope {view['slope']:g}, shift {view['shift']}, {view['kind']}"
    )
    return [line, ax.title]


GRID = {
    "slope": Choices("slope", [-2.0, 0.0, 1.5], value=0.0),
    "shift": Choices(
        "shift", {-2.0: [0, 1], 0.0: [0, 1, 2], 1.5: [3]}, depends_on="slope"
    ),
    "kind": Choices("kind", ["line", "dots"], kind="buttons"),
}


def rgb(png: bytes) -> np.ndarray:
    return np.asarray(
        Image.open(io.BytesIO(png)).convert("RGBA"), dtype=np.int16
    )


def test_the_grid_walks_every_combination_with_dependent_options():
    combos = list(_frames.grid_combinations(GRID))
    assert grid_size(GRID) == len(combos) == (2 + 3 + 1) * 2
    assert combos[0] == (
        (0, 0, 0),
        {"slope": -2.0, "shift": 0, "kind": "line"},
    )
    assert ((2, 0, 1), {"slope": 1.5, "shift": 3, "kind": "dots"}) in combos
    assert _frames.first_values(GRID) == {
        "slope": 0.0,
        "shift": 0,
        "kind": "line",
    }


def _follow(stack, indices):
    """The picture the Stacks show when the controls stand at ``indices``."""
    node = stack
    for index in indices:
        assert isinstance(node, widgets.Stack)
        node = node.children[index]
    assert isinstance(node, widgets.Image)
    return node


def test_every_combination_reaches_its_frame_and_every_stack_is_linked():
    box = frame_explorer(GRID, toy_view, toy_plot, toy_update)
    row, stack = box.children
    frames = box.frame_grid.frames()
    for indices, values in _frames.grid_combinations(GRID):
        image = _follow(stack, indices)
        assert image.value == frames[indices][0]
    # Each Stack is the target of exactly one link, from a control of its own level.
    targets = {}
    for link in box.frame_links:
        (source, source_name), (target, target_name) = link.source, link.target
        assert (source_name, target_name) == ("index", "selected_index")
        targets.setdefault(id(target), []).append(source)

    def stacks(node, depth=0):
        if isinstance(node, widgets.Stack) and isinstance(
            node.children[0], (widgets.Stack, widgets.Image)
        ):
            yield node, depth
            for child in node.children:
                yield from stacks(child, depth + 1)

    checked = 0
    for node, depth in stacks(stack):
        (source,) = targets[id(node)]
        assert source.description == list(GRID.values())[depth].description
        checked += 1
    assert checked == 1 + 3 + (
        2 + 3 + 1
    )  # slope; shift under each slope; kind under each shift
    # The dependent control is one slider per slope, in a Stack the slope control selects.
    slope, shifts, kind = row.children
    assert isinstance(shifts, widgets.Stack) and len(shifts.children) == 3
    assert [len(s.options) for s in shifts.children] == [2, 3, 1]
    assert isinstance(kind, widgets.ToggleButtons)
    assert (
        slope.index == 1 and stack.selected_index == 1
    )  # value=0.0 is shown first


def test_a_frame_equals_a_full_draw_at_twice_the_size():
    grid = FrameGrid(GRID, toy_view, toy_plot, toy_update)
    for indices, values in list(_frames.grid_combinations(GRID))[::3]:
        png, width, height = grid.frame(values)
        figure = toy_plot(toy_view(**values))
        buffer = io.BytesIO()
        figure.savefig(buffer, format="png", dpi=2 * EXPLORER_DPI)
        plt.close(figure)
        drawn, full = rgb(png), rgb(buffer.getvalue())
        assert (width, height) == (5 * EXPLORER_DPI, round(2.5 * EXPLORER_DPI))
        assert drawn.shape[:2] == (2 * height, 2 * width) == full.shape[:2]
        assert (np.abs(drawn - full).max(axis=-1) > 40).mean() < 0.002, values
    grid.close()


def test_a_figure_wider_than_the_column_is_shown_at_the_column_width():
    wide = {"slope": Choices("slope", [1.0]), "shift": Choices("shift", [0])}
    grid = FrameGrid(
        wide, toy_view, lambda view: toy_plot(view, width=12.0), toy_update
    )
    png, width, height = grid.frame({"slope": 1.0, "shift": 0})
    assert width == BOOK_COLUMN_PX and rgb(png).shape[1] == 2 * BOOK_COLUMN_PX
    # 10-pt tick labels on a 12-inch figure shown 672 px wide: 10/72 * 672/12 = 7.8 px, too small.
    assert grid.smallest_text == pytest.approx(10 / 72 * BOOK_COLUMN_PX / 12)
    assert grid.smallest_text < MIN_TEXT_PX
    grid.close()


def test_bad_grids_are_refused_with_their_names():
    with pytest.raises(ValueError, match="kind"):
        Choices("x", [1], kind="wheel")
    with pytest.raises(ValueError, match="at least one"):
        Choices("x", [])
    later = {
        "a": Choices("a", {1: [1]}, depends_on="b"),
        "b": Choices("b", [1]),
    }
    with pytest.raises(
        ValueError, match="'a' may depend only on an earlier control"
    ):
        FrameGrid(later, lambda a, b: {}, toy_plot, toy_update)


def test_frames_are_wanted_only_when_the_variable_says_so(monkeypatch):
    monkeypatch.delenv(_frames.FRAMES_VARIABLE, raising=False)
    assert not _frames.frames_wanted()
    monkeypatch.setenv(_frames.FRAMES_VARIABLE, "1")
    assert _frames.frames_wanted()
    monkeypatch.setenv(_frames.FRAMES_VARIABLE, "0")
    assert not _frames.frames_wanted()
