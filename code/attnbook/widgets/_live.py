"""The builders every explorer uses: controls above, a figure below that follows them.

Two ways to redraw on each move of a control:

- ``figure_explorer(controls, draw)``: ``draw`` builds a new figure every time.
  Simple, and fast enough for a figure with little text.
- ``live_explorer(controls, figure, update)``: the figure is built once and drawn in
  full once; a move calls ``update``, which changes some artists' data and returns
  them, and only those are drawn again over a saved copy of the rest (matplotlib's
  *blitting*). Axes, tick labels and legends that do not change are never redrawn,
  and they are what costs the most: text rendering is most of a full draw.
"""

import base64
import io

import matplotlib.pyplot as plt
from matplotlib.backends.backend_agg import FigureCanvasAgg

# Explorer figures are rendered at this resolution: a move must redraw in well under 100 ms,
# and rendering time grows with the number of pixels.
EXPLORER_DPI = 80

# zlib level 1: a slightly larger PNG, about a quarter less time than the default level.
_PNG_COMPRESSION = 1


def _png_output(png: bytes, width: int, height: int, num_axes: int) -> dict:
    """A notebook display_data output holding ``png`` (what an Output widget stores)."""
    return {
        "output_type": "display_data",
        "data": {
            "image/png": base64.b64encode(png).decode("ascii"),
            "text/plain": f"<Figure size {width}x{height} with {num_axes} Axes>",
        },
        "metadata": {},
    }


def figure_output(figure) -> dict:
    """A display_data output holding ``figure`` drawn in full as a PNG at ``EXPLORER_DPI``.

    The figure is rendered as laid out by its plot function (fixed margins): no
    ``bbox_inches="tight"``, which would draw the whole figure twice.
    """
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=EXPLORER_DPI, pil_kwargs={"compress_level": _PNG_COMPRESSION})
    width, height = (round(size) for size in figure.get_size_inches() * EXPLORER_DPI)
    return _png_output(buffer.getvalue(), width, height, len(figure.axes))


def canvas_output(figure) -> dict:
    """A display_data output holding the pixels ``figure``'s Agg canvas holds now, as a PNG.

    Unlike ``figure_output`` nothing is drawn: this encodes what the last draw (or
    blit) left in the canvas.
    """
    from PIL import Image

    canvas = figure.canvas
    width, height = canvas.get_width_height(physical=True)
    image = Image.frombuffer("RGBA", (width, height), canvas.buffer_rgba(), "raw", "RGBA", 0, 1)
    buffer = io.BytesIO()
    image.save(buffer, format="png", compress_level=_PNG_COMPRESSION)
    return _png_output(buffer.getvalue(), width, height, len(figure.axes))


def message_figure(message: str):
    """A small figure that shows ``message``: what an explorer draws for input it cannot use."""
    fig, ax = plt.subplots(figsize=(5, 1))
    ax.axis("off")
    ax.text(0.0, 0.5, message, color="darkred", va="center", fontsize=9, wrap=True)
    return fig


def _message_output(error: ValueError) -> dict:
    figure = message_figure(str(error))
    output = figure_output(figure)
    plt.close(figure)
    return output


class LiveFigure:
    """A figure drawn in full once, then redrawn only where ``update`` changes it.

    ``update(figure, **values)`` sets new data on existing artists and returns the
    list of artists it changed (a whole Axes counts as one artist: list it when its
    limits or tick labels change). ``render(**values)`` applies the update and returns
    the PNG output. The first render, and any render whose list of changed artists
    differs from the previous one, draws the unchanged rest in full and keeps a copy of
    its pixels; every other render restores that copy and draws only the changed
    artists on top, in z-order.

    The figure is taken out of pyplot (so a notebook does not also show it) and given
    its own Agg canvas at ``EXPLORER_DPI``.
    """

    def __init__(self, figure, update):
        plt.close(figure)
        FigureCanvasAgg(figure)
        figure.set_dpi(EXPLORER_DPI)
        self.figure = figure
        self.update = update
        self.changing = []
        self.background = None

    def _draw_background(self, changing: list) -> None:
        for artist in self.changing:
            artist.set_animated(False)
        for artist in changing:
            artist.set_animated(True)  # a normal draw skips animated artists
        self.changing = changing
        self.figure.canvas.draw()
        self.background = self.figure.canvas.copy_from_bbox(self.figure.bbox)

    def render(self, **values) -> dict:
        changing = list(self.update(self.figure, **values))
        if self.background is None or [id(a) for a in changing] != [id(a) for a in self.changing]:
            self._draw_background(changing)
        canvas = self.figure.canvas
        canvas.restore_region(self.background)
        for artist in sorted(changing, key=lambda a: a.get_zorder()):
            self.figure.draw_artist(artist)
        return canvas_output(self.figure)


def _wire(controls: dict, render):
    """A VBox of ``controls`` (name -> widget) over an Output showing ``render(**values)``.

    ``render`` returns a display_data output; it is called for the current values and
    again whenever a control changes. A ``ValueError`` from it (input the reader typed
    that the book's code rejects) is shown as its message instead. The new output
    replaces the old one in a single update, so nothing flickers, and the same code
    works in a kernel, in a test, and in the saved widget state.
    """
    import ipywidgets as widgets

    output = widgets.Output()

    def redraw(_change=None):
        values = {name: control.value for name, control in controls.items()}
        try:
            shown = render(**values)
        except ValueError as error:
            shown = _message_output(error)
        output.outputs = (shown,)

    for control in controls.values():
        control.observe(redraw, names="value")
    redraw()
    return widgets.VBox([widgets.HBox(list(controls.values())), output])


def figure_explorer(controls: dict, draw):
    """Wire ipywidgets ``controls`` (name -> widget) to ``draw(**values) -> Figure``.

    Every move builds a new figure, shows it as a PNG and closes it.
    """

    def render(**values):
        figure = draw(**values)
        try:
            return figure_output(figure)
        finally:
            plt.close(figure)

    return _wire(controls, render)


def live_explorer(controls: dict, figure, update):
    """Wire ``controls`` to ``figure``, redrawn by ``update(figure, **values) -> changed artists``.

    See ``LiveFigure``: only the changed artists are drawn again on each move.
    """
    return _wire(controls, LiveFigure(figure, update).render)
