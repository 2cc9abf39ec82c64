"""The builder every explorer uses: controls above, a figure below that follows
them.

``live_explorer(controls, view, plot, update)``: the figure is built once
(``plot``) and drawn in full once; a move of a control computes a new ``view``
and calls ``update``, which changes some artists' data and returns them, and
only those are drawn again over a saved copy of the rest (matplotlib's
*blitting*). Axes, tick labels and legends that do not change are never
redrawn, and they are what costs the most: rendering text is most of a full
draw (60-170 ms for the book's figures, against 10-40 ms for a blitted move).
"""

import base64
import functools
import inspect
import io

import matplotlib.pyplot as plt
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

# Explorer figures are rendered at this resolution: a move must redraw in well
# under 100 ms, and rendering time grows with the number of pixels.
EXPLORER_DPI = 80

# zlib level 1: a slightly larger PNG, about a quarter less time than the
# default level.
_PNG_COMPRESSION = 1


def _png_output(png: bytes, width: int, height: int, num_axes: int) -> dict:
    """A notebook display_data output holding ``png`` (what an Output widget
    stores)."""
    return {
        "output_type": "display_data",
        "data": {
            "image/png": base64.b64encode(png).decode("ascii"),
            "text/plain": (
                f"<Figure size {width}x{height} with {num_axes} Axes>"
            ),
        },
        "metadata": {},
    }


def figure_output(figure) -> dict:
    """A display_data output holding ``figure`` drawn in full as a PNG at
    ``EXPLORER_DPI``.

    The figure is rendered as laid out by its plot function (fixed margins): no
    ``bbox_inches="tight"``, which would draw the whole figure twice.
    """
    buffer = io.BytesIO()
    figure.savefig(
        buffer,
        format="png",
        dpi=EXPLORER_DPI,
        pil_kwargs={"compress_level": _PNG_COMPRESSION},
    )
    width, height = (
        round(size) for size in figure.get_size_inches() * EXPLORER_DPI
    )
    return _png_output(buffer.getvalue(), width, height, len(figure.axes))


def canvas_image(figure):
    """The pixels ``figure``'s Agg canvas holds now (what the last draw or
    blit left), as a PIL image."""
    from PIL import Image

    width, height = figure.canvas.get_width_height(physical=True)
    return Image.frombuffer(
        "RGBA",
        (width, height),
        figure.canvas.buffer_rgba(),
        "raw",
        "RGBA",
        0,
        1,
    )


def canvas_output(figure) -> dict:
    """A display_data output holding the pixels ``figure``'s Agg canvas holds
    now, as a PNG.

    Unlike ``figure_output`` nothing is drawn: this encodes what the last draw
    (or blit) left in the canvas.
    """
    image = canvas_image(figure)
    width, height = image.size
    buffer = io.BytesIO()
    image.save(buffer, format="png", compress_level=_PNG_COMPRESSION)
    return _png_output(buffer.getvalue(), width, height, len(figure.axes))


def message_figure(message: str):
    """A small figure that shows ``message``: what an explorer draws for
    input it cannot use."""
    fig, ax = plt.subplots(figsize=(5, 1))
    ax.axis("off")
    ax.text(
        0.0, 0.5, message, color="darkred", va="center", fontsize=9, wrap=True
    )
    return fig


def message_output(error: Exception) -> dict:
    # A ValueError/TypeError is the book's own message about the input;
    # anything else is named by its type.
    message = (
        str(error)
        if isinstance(error, (ValueError, TypeError))
        else f"{type(error).__name__}: {error}"
    )
    figure = message_figure(message)
    output = figure_output(figure)
    plt.close(figure)
    return output


class LiveFigure:
    """A figure drawn in full once, then redrawn only where ``update`` changes
    it.

    ``update(figure, view)`` shows ``view`` by setting new data on existing
    artists and returns the list of artists it changed (a whole Axes counts as
    one artist: list it when its limits or tick labels change).
    ``render(view)`` applies the update and returns the PNG output. The first
    render, and any render whose list of changed artists differs from the
    previous one, draws the unchanged rest in full and keeps a copy of its
    pixels; every other render restores that copy and draws only the changed
    artists on top, in z-order, with the spines (frames) of their axes. So an
    update that must rebuild part of the figure (a new input of another size)
    returns new artists, and that one move redraws everything.

    The figure is taken out of pyplot (so a notebook does not also show it) and
    given its own Agg canvas at ``EXPLORER_DPI``.
    """

    def __init__(self, figure, update, dpi: float = EXPLORER_DPI):
        plt.close(figure)
        FigureCanvasAgg(figure)
        figure.set_dpi(dpi)
        self.figure = figure
        self.update = update
        self.changing = []
        # changing, with the spines of their axes, in z-order
        self.redrawn = []
        self.background = None

    def _draw_background(self, changing: list) -> None:
        for artist in self.redrawn:
            artist.set_animated(False)
        self.changing = changing
        self.redrawn = sorted(
            changing + self._frames(changing), key=lambda a: a.get_zorder()
        )
        for artist in self.redrawn:
            artist.set_animated(
                True
            )  # a normal draw leaves animated artists out of the background
        self.figure.canvas.draw()
        self.background = self.figure.canvas.copy_from_bbox(self.figure.bbox)

    @staticmethod
    def _frames(changing: list) -> list:
        """The spines around changed artists: a full draw puts them on top
        of an image or a line."""
        axes = {
            id(a.axes): a.axes
            for a in changing
            if a.axes is not None and a.axes is not a
        }
        return [
            spine
            for ax in axes.values()
            if ax.axison
            for spine in ax.spines.values()
            if spine.get_visible()
        ]

    def render_pixels(self, view) -> None:
        """Show ``view``: afterwards the figure's canvas holds its pixels."""
        changing = list(self.update(self.figure, view))
        if self.background is None or [id(a) for a in changing] != [
            id(a) for a in self.changing
        ]:
            self._draw_background(changing)
        canvas = self.figure.canvas
        canvas.restore_region(self.background)
        for artist in self.redrawn:
            self.figure.draw_artist(artist)

    def render(self, view) -> dict:
        """Show ``view`` and return the PNG output of the result."""
        self.render_pixels(view)
        return canvas_output(self.figure)

    def full_output(self) -> dict:
        """The figure in its current state drawn in full, every artist: what
        a blitted render must equal."""
        for artist in self.redrawn:
            artist.set_animated(False)
        try:
            return figure_output(self.figure)
        finally:
            for artist in self.redrawn:
                artist.set_animated(True)


def explorer_box(children: list):
    """A VBox of ``children`` whose text form is one short line.

    ipywidgets' own text form of a box lists its children and is cut at 110
    characters; a notebook shows it where widgets cannot be drawn.
    """
    import ipywidgets as widgets

    class Explorer(widgets.VBox):
        def __repr__(self) -> str:
            return "Explorer (move its controls to change the figure)"

    return Explorer(children)


def draws_view(draw):
    """Decorate an explorer's ``plot_*(view)`` or ``update_*(fig, view)``:
    ``fig`` must be a matplotlib Figure and ``view`` the non-empty dict its
    ``*_view`` function returned (a ``TypeError`` naming them otherwise)."""
    signature = inspect.signature(draw)

    @functools.wraps(draw)
    def checked(*args, **kwargs):
        bound = signature.bind(*args, **kwargs).arguments
        fig, view = bound.get("fig", Figure), bound.get("view")
        if fig is not Figure and not isinstance(fig, Figure):
            raise TypeError(
                "fig must be the matplotlib Figure the explorer's plot "
                f"function made, got {type(fig).__name__}"
            )
        if not isinstance(view, dict) or not view:
            raise TypeError(
                "view must be the dict the explorer's *_view function "
                f"returns, got {str(view):.60}"
            )
        return draw(*args, **kwargs)

    return checked
