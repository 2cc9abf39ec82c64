"""Every explorer, moved from code: what it shows after each move is the full figure of that state.

The live explorers draw a figure in full once and afterwards redraw only the artists
an update reports as changed (``attnbook.widgets._live.LiveFigure``). An update that
forgets to report an artist leaves it stale on screen; one that changes an axis' limits
without reporting the axes leaves old tick labels. Both show up here as pixels that
differ from a fresh full draw of the same figure.
"""

import importlib
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import pytest  # noqa: E402

from _pixels import differing_pixels, pixels  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))

import bench_widgets  # noqa: E402  (finds the explorers and their moves, as the benchmark does)

from attnbook.widgets._explorer import live_explorer  # noqa: E402
from attnbook.widgets._live import LiveFigure  # noqa: E402


def differing_fraction(a: dict, b: dict) -> float:
    """Fraction of the pixels of two same-size outputs that differ (see ``_pixels``)."""
    return differing_pixels(a, b) / pixels(a)[..., 0].size


EXPLORERS = [
    (module_name, builder_name)
    for module_name in bench_widgets.widget_modules()
    for builder_name in bench_widgets.explorer_builders(
        importlib.import_module(module_name)
    )
]


@pytest.mark.parametrize(
    "module_name, builder_name", EXPLORERS, ids=[b for _, b in EXPLORERS]
)
def test_every_move_shows_what_a_full_draw_shows(module_name, builder_name):
    module = importlib.import_module(module_name)
    box, _ = bench_widgets.build_explorer(
        module, getattr(module, builder_name)
    )
    live = getattr(box, "live_figure", None)
    assert isinstance(live, LiveFigure), (
        f"{builder_name} does not redraw in place (live_explorer)"
    )
    output = box.children[1]
    moves = 0
    for control in bench_widgets.explorer_controls(box):
        start = control.value
        for value in bench_widgets.control_moves(control) + [start]:
            before = output.outputs
            control.value = value
            (shown,) = output.outputs
            if value != start:
                assert output.outputs != before, (
                    f"moving {control.description!r} to {value!r} changed nothing"
                )
            fraction = differing_fraction(shown, live.full_output())
            assert fraction < 0.0005, (
                f"after {control.description!r} = {value!r}: {fraction:.2%} of pixels differ"
            )
            moves += 1
    assert moves >= 2


@pytest.mark.parametrize(
    "module_name, builder_name", EXPLORERS, ids=[b for _, b in EXPLORERS]
)
def test_slider_moves_never_redraw_the_whole_figure(
    module_name, builder_name, monkeypatch
):
    """Only a typed input (which may change the figure's size) may draw everything again."""
    import ipywidgets as widgets

    module = importlib.import_module(module_name)
    box, _ = bench_widgets.build_explorer(
        module, getattr(module, builder_name)
    )
    full_draws = []
    redraw = LiveFigure._draw_background
    monkeypatch.setattr(
        LiveFigure,
        "_draw_background",
        lambda self, changing: full_draws.append(1) or redraw(self, changing),
    )
    for control in bench_widgets.explorer_controls(box):
        if isinstance(control, widgets.Text):
            continue
        start = control.value
        for value in bench_widgets.control_moves(control) + [start]:
            control.value = value
            assert not full_draws, (
                f"moving {control.description!r} to {value!r} redrew the whole figure"
            )


def test_a_forgotten_artist_is_caught():
    """The check above can fail: an update that does not report its title leaves the old one."""
    import ipywidgets as widgets
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(3, 2))
    (line,) = ax.plot([0, 1], [0, 0])
    ax.set_ylim(-1, 1)

    def update(figure, height):  # the view is the slider's value itself
        line.set_ydata([height, height])
        ax.set_title(f"height {height:.1f} " + "#" * int(10 * height + 10))
        return [line]  # the title is missing

    slider = widgets.FloatSlider(value=0.0, min=-1, max=1, step=0.5)
    box = live_explorer(
        {"height": slider}, lambda height: height, lambda height: fig, update
    )
    box.children[0].children[0].value = 0.5
    assert (
        differing_fraction(
            box.children[1].outputs[0], box.live_figure.full_output()
        )
        > 0.0005
    )


def test_input_the_code_rejects_shows_its_message_and_the_next_move_recovers(
    monkeypatch,
):
    import ipywidgets as widgets
    import matplotlib.pyplot as plt

    import attnbook.widgets._live as live_module

    fig, ax = plt.subplots(figsize=(3, 2))
    bars = ax.bar(range(3), [0, 0, 0])
    ax.set_ylim(0, 10)

    def view(text):
        heights = [
            float(part) for part in text.split(",")
        ]  # "x" -> ValueError
        if len(heights) != 3:
            raise ValueError(f"need 3 numbers, got {len(heights)}")
        return heights

    def update(figure, heights):
        for bar, height in zip(bars, heights):
            bar.set_height(height)
        return list(bars)

    shown = []
    monkeypatch.setattr(
        live_module,
        "message_figure",
        lambda message: shown.append(message) or plt.figure(),
    )
    box = live_explorer(
        {"text": widgets.Text(value="1, 2, 3")},
        view,
        lambda heights: fig,
        update,
    )
    text, output = box.children[0].children[0], box.children[1]
    text.value = "1, 2"
    assert shown == ["need 3 numbers, got 2"]
    text.value = "4, 5, 6"
    assert [bar.get_height() for bar in bars] == [4.0, 5.0, 6.0]
    assert (
        differing_fraction(output.outputs[0], box.live_figure.full_output())
        == 0.0
    )


def test_live_explorer_shows_any_error_as_a_message():
    import ipywidgets as widgets
    import matplotlib.pyplot as plt

    from attnbook.widgets._explorer import live_explorer

    def view(x):
        if x == 2:
            raise RuntimeError("deep torch error")
        if x == 3:
            raise ValueError("x must not be 3")
        return x

    def plot(v):
        fig, ax = plt.subplots(figsize=(2, 1))
        ax.plot([0, 1], [0, v])
        return fig

    def update(fig, v):
        line = fig.axes[0].lines[0]
        line.set_ydata([0, v])
        return [line]

    slider = widgets.IntSlider(value=1, min=0, max=5)
    box = live_explorer({"x": slider}, view, plot, update)
    output = box.children[1]
    for value in (2, 3, 1):
        slider.value = value  # raises nothing
        assert output.outputs[0]["data"]["image/png"]
    slider.value = 2
    assert output.outputs[0]["data"]["text/plain"].startswith(
        "<Figure size 400x80"
    )  # the message figure (5 x 1 in)
