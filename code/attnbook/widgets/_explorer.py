"""``live_explorer``: the one builder every chapter's explorer calls. It
makes a live explorer (``_live``) in a kernel, or its pre-drawn frames
(``_frames``) when ``make notebooks`` records them, so the explorer also
works without Python."""

from ..measure.threads import single_thread
from ._frames import Choices, frame_explorer, frames_wanted
from ._live import LiveFigure, explorer_box, message_output


def live_explorer(
    controls: dict, view, plot, update, frames: dict | None = None
):
    """A VBox of ipywidgets ``controls`` (name -> widget) over an Output
    showing their figure.

    frames: the grid of control values (name -> ``_frames.Choices``) at which
    the explorer also works without Python. When frames are wanted
    (``_frames.frames_wanted()``, set by ``make notebooks``), the explorer is
    built from them instead (``_frames.frame_explorer``): the same view, plot
    and update, drawn in advance for every value of the grid.

    ``view(**values)`` computes what to show for the controls' values (a dict);
    ``plot(view)`` builds the figure, once, for the controls' first values; and
    ``update(figure, view)`` shows a new view in it and returns the artists it
    changed (see ``LiveFigure``). Each move of a control computes the view once
    and redraws. An error from ``view`` or ``update`` (a ``ValueError`` for
    input the reader typed that the book's code rejects; any other exception
    too) is shown as its message instead, never as a traceback. The new picture
    replaces the old one in a single update, so nothing flickers, and the same
    code works in a kernel, in a test, and in the saved widget state. The box
    keeps its ``LiveFigure`` as ``box.live_figure``.
    """
    import ipywidgets as widgets

    if frames is not None and frames_wanted():
        return frame_explorer(frames, view, plot, update)

    def current_view():
        # Views compute on small tensors: one thread never waits for another on
        # a busy machine.
        with single_thread():
            return view(
                **{name: control.value for name, control in controls.items()}
            )

    first = (
        current_view()
    )  # from the widgets' values, which a slider may have clamped
    live_figure = LiveFigure(plot(first), update)
    output = widgets.Output()

    def redraw(_change=None):
        try:
            shown = live_figure.render(current_view())
        # noqa: BLE001 - whatever a view raises is shown as a message, never a
        # traceback
        except Exception as error:
            shown = message_output(error)
        output.outputs = (shown,)

    for control in controls.values():
        control.observe(redraw, names="value")
    output.outputs = (live_figure.render(first),)
    box = explorer_box([widgets.HBox(list(controls.values())), output])
    box.live_figure = live_figure
    return box


def buttons_explorer(
    options: dict, labels: dict, values: dict, slider: str, view, plot, update
):
    """``live_explorer`` whose controls are toggle buttons, one per name of
    ``options`` (name -> list of (label, value) pairs), except ``slider``,
    a SelectionSlider; ``labels`` gives each control's description and
    ``values`` its first value. The frames use the same grid."""
    import ipywidgets as widgets

    controls, frames = {}, {}
    for name, choices in options.items():
        is_slider = name == slider
        kind = widgets.SelectionSlider if is_slider else widgets.ToggleButtons
        extra = {"continuous_update": False} if is_slider else {}
        controls[name] = kind(
            options=choices,
            value=values[name],
            description=labels[name],
            **extra,
        )
        frames[name] = Choices(
            labels[name],
            choices,
            kind="slider" if is_slider else "buttons",
            value=values[name],
        )
    return live_explorer(controls, view, plot, update, frames=frames)
