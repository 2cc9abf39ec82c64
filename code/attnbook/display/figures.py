"""Figures shared by the chapters (matplotlib only; no tensor math lives
here)."""

import base64
import io
import math
import struct

import matplotlib
import matplotlib.pyplot as plt
import torch
from matplotlib.axes import Axes
from matplotlib.text import Text

from .._checks import is_finite_number, require_finite_number, require_tensor

#: Width in CSS pixels of the HTML book's figure column (at a 1280 px window):
#: a wider picture is shrunk to it, and its text with it.
BOOK_COLUMN_PX = 672
#: The smallest text a figure may show, in CSS pixels at 1x (legible at the
#: book's width).
MIN_TEXT_PX = 8.0


def smallest_text_px(figure, displayed_width_px: float) -> float:
    """The size in CSS pixels of ``figure``'s smallest visible text, shown
    ``displayed_width_px`` wide.

    Every visible, non-empty text artist counts (titles, labels, tick labels,
    legends, annotations; a tick label outside the view has the size of the
    drawn ones). A text of ``s`` points is ``s / 72`` inches tall; the figure's
    width in inches maps to ``displayed_width_px``. Returns ``inf`` for a
    figure without text. Draw the figure first, so that its tick labels exist.
    """
    _require_figure(figure)
    require_finite_number("displayed_width_px", displayed_width_px, low=0.0)
    width_in = figure.get_figwidth()
    if not width_in > 0 or not displayed_width_px > 0:
        raise ValueError(
            f"figure width {width_in} in and displayed width "
            f"{displayed_width_px} px must be > 0"
        )
    sizes = [
        text.get_fontsize()
        for text in figure.findobj(Text)
        if text.get_visible() and text.get_text().strip()
    ]
    return (
        min(sizes, default=float("inf")) / 72 * displayed_width_px / width_in
    )


def _require_figure(figure) -> None:
    if not isinstance(figure, matplotlib.figure.Figure):
        raise TypeError(
            f"figure must be a matplotlib Figure, got {type(figure).__name__}"
        )


def sharp_png(figure) -> tuple[bytes, dict] | None:
    """``figure`` as a PNG at twice its on-screen size, and the output metadata
    that shows it at 1x.

    The figure is drawn like Jupyter's ``retina`` format
    (``bbox_inches="tight"``, at twice the figure's dpi), so its 1x size is
    ``figsize x dpi`` CSS pixels, trimmed to what is drawn. A figure wider than
    the book's column (``BOOK_COLUMN_PX``) is drawn at a lower dpi instead, so
    that its 1x width is ``BOOK_COLUMN_PX``: the browser then shows it
    unshrunk, and the measured text size below is the one on screen. Returns
    ``(png, {"width": w, "height": h, "attnbook": {"smallest_text_px": x}})``
    with ``w``, ``h`` the 1x size (half the PNG's pixels) and ``x`` the
    smallest text in CSS px at that size (``None`` without text), or ``None``
    for an empty figure (as IPython does).
    """
    _require_figure(figure)
    if not figure.axes and not figure.lines:
        return None
    dpi = figure.dpi  # CSS pixels per inch at 1x
    for _ in range(
        4
    ):  # at most one or two redraws: the trimmed width scales with the dpi
        buffer = io.BytesIO()
        figure.canvas.print_figure(
            buffer,
            format="png",
            dpi=2 * dpi,
            bbox_inches="tight",
            facecolor=figure.get_facecolor(),
            edgecolor=figure.get_edgecolor(),
        )
        png = buffer.getvalue()
        width, height = struct.unpack(
            ">II", png[16:24]
        )  # the PNG header's IHDR chunk
        if width // 2 <= BOOK_COLUMN_PX:
            break
        dpi *= (2 * BOOK_COLUMN_PX + 0.5) / width
    smallest = smallest_text_px(figure, figure.get_figwidth() * dpi)
    metadata = {
        "width": width // 2,
        "height": height // 2,
        "attnbook": {
            "smallest_text_px": round(float(smallest), 2)
            if math.isfinite(smallest)
            else None
        },
    }
    return png, metadata


def sharp_figures() -> None:
    """Show this notebook's matplotlib figures sharp on high-DPI screens, at
    most a column wide.

    Call once, in a chapter's first code cell (after importing pyplot). It
    registers IPython's PNG formatter for figures as ``sharp_png``: a 2x PNG
    whose output metadata (``width``/``height`` at 1x, which the notebook and
    the HTML book honour) shows it at 1x, and which also records the smallest
    text in CSS px (``attnbook.smallest_text_px``), so that tests can check
    legibility in the stored notebooks. A figure wider than ``BOOK_COLUMN_PX``
    at 1x is drawn at a lower dpi so that it is exactly a column wide. Outside
    IPython it does nothing.
    """
    try:
        from IPython import get_ipython
    except ImportError:
        return
    shell = get_ipython()
    if shell is None:
        return
    from matplotlib.figure import Figure

    # Load the inline backend now: loading it resets the figure formatters.
    plt.switch_backend(matplotlib.get_backend())

    def formatter(figure):
        result = sharp_png(figure)
        if result is None:
            return None
        png, metadata = result
        return base64.b64encode(png).decode("ascii"), metadata

    shell.display_formatter.formatters["image/png"].for_type(Figure, formatter)


#: More panels than this make a figure no one can read (and take minutes).
MAX_PANELS = 64


def _as_grid(matrices) -> torch.Tensor:
    """Turn a 2-D, 3-D or 4-D stack of matrices into (rows, cols, n_q, n_k)."""
    if isinstance(matrices, torch.Tensor):
        require_tensor("matrices", matrices)
    try:
        matrices = torch.as_tensor(matrices).detach().cpu().float()
    except (TypeError, ValueError, RuntimeError):
        raise TypeError(
            "matrices must be a tensor or nested lists of numbers, got "
            f"{type(matrices).__name__}"
        ) from None
    if matrices.numel() == 0:
        raise ValueError(
            f"matrices is empty (shape {tuple(matrices.shape)}): "
            "nothing to draw"
        )
    if matrices.dim() == 2:
        return matrices[None, None]
    if matrices.dim() == 3:
        return matrices[None]
    if matrices.dim() == 4:
        return matrices
    raise ValueError(
        f"matrices must be 2-D, 3-D or 4-D, got shape {tuple(matrices.shape)}"
    )


def require_axes(ax) -> Axes:
    """A matplotlib ``Axes`` to draw on: ``TypeError`` otherwise."""
    if not isinstance(ax, Axes):
        raise TypeError(
            f"ax must be a matplotlib Axes, got {type(ax).__name__}"
        )
    return ax


def require_figsize(figsize):
    """(width, height) in inches, two positive numbers: ``ValueError``
    otherwise. Returns figsize."""
    if not (
        isinstance(figsize, (tuple, list))
        and len(figsize) == 2
        and all(is_finite_number(x) and x > 0 for x in figsize)
    ):
        raise ValueError(
            f"figsize must be (width, height) in inches, got {figsize!r:.40}"
        )
    return figsize


def _check_options(**labels) -> None:
    """Each (labels, n, what): None, or n labels in a list, tuple or
    array."""
    for name, (values, n, what) in labels.items():
        if values is None:
            continue
        if isinstance(values, str) or not hasattr(values, "__len__"):
            raise TypeError(
                f"{name} must be None or a list of {n} labels, got "
                f"{values!r:.40}"
            )
        if len(values) != n:
            raise ValueError(f"got {len(values)} {name} for {n} {what}")


def _check_style(figsize, cmap, vmin, vmax) -> None:
    """figsize None or (width, height) > 0; cmap a colour map or its name;
    vmin, vmax None or finite numbers."""
    if figsize is not None:
        require_figsize(figsize)
    if not isinstance(cmap, matplotlib.colors.Colormap) and (
        not isinstance(cmap, str) or cmap not in matplotlib.colormaps
    ):
        raise ValueError(
            f"cmap must be a matplotlib colour map or its name (e.g. 'Reds'),"
            f" got {cmap!r:.40}"
        )
    for name, value in (("vmin", vmin), ("vmax", vmax)):
        if value is not None and not is_finite_number(value):
            raise ValueError(
                f"{name} must be None or a finite number, got {value!r:.40}"
            )


def show_heatmaps(
    matrices,
    xlabel: str = "Keys",
    ylabel: str = "Queries",
    titles=None,
    figsize=None,
    cmap: str = "Reds",
    xticklabels=None,
    yticklabels=None,
    vmin: float | None = 0.0,
    vmax: float | None = None,
):
    """Draw attention matrices as heat-maps and return the figure.

    matrices: (n_q, n_k), (cols, n_q, n_k) or (rows, cols, n_q, n_k); a tensor
    or anything ``torch.as_tensor`` accepts. Rows are queries, columns keys.
    titles: one per column (``cols`` strings), or None.
    xticklabels / yticklabels: labels for keys / queries (for short sequences).
    vmin / vmax: colour limits shared by all panels (vmax=None: the largest
    entry; vmin=None: the smallest, for signed matrices).
    """
    grid = _as_grid(matrices)
    rows, cols, n_q, n_k = grid.shape
    if rows * cols > MAX_PANELS:
        raise ValueError(
            f"{rows} x {cols} heat-maps are too many to draw in one figure "
            f"(at most {MAX_PANELS}): pass a slice of them"
        )
    _check_options(
        titles=(titles, cols, "columns of heat-maps"),
        xticklabels=(xticklabels, n_k, "keys"),
        yticklabels=(yticklabels, n_q, "queries"),
    )
    _check_style(figsize, cmap, vmin, vmax)
    if figsize is None:
        figsize = (min(2.6 * cols, 13), min(2.4 * rows, 10))
    fig, axes = plt.subplots(
        rows, cols, figsize=figsize, sharex=True, sharey=True, squeeze=False
    )
    low = float(grid.min()) if vmin is None else vmin
    high = float(grid.max()) if vmax is None else vmax
    for r in range(rows):
        for c in range(cols):
            ax = axes[r, c]
            image = ax.imshow(
                grid[r, c].numpy(),
                cmap=cmap,
                vmin=low,
                vmax=high,
                aspect="auto",
            )
            if r == rows - 1:
                ax.set_xlabel(xlabel)
            if c == 0:
                ax.set_ylabel(ylabel)
            if titles is not None and r == 0:
                ax.set_title(titles[c])
            if xticklabels is not None:
                ax.set_xticks(
                    range(n_k),
                    labels=xticklabels,
                    rotation=90 if n_k > 6 else 0,
                )
            if yticklabels is not None:
                ax.set_yticks(range(n_q), labels=yticklabels)
    fig.colorbar(image, ax=axes, shrink=0.7)
    return fig


def label_log_axis(ax, axis: str = "y") -> list:
    """Label a log axis at 1, 2 and 5 times each power of ten inside its
    data range (matplotlib labels only the powers of ten, often one tick),
    with plain numbers. Returns the tick values."""
    require_axes(ax)
    if axis not in ("x", "y"):
        raise ValueError(f"axis must be 'x' or 'y', got {axis!r:.20}")
    low, high = ax.get_ylim() if axis == "y" else ax.get_xlim()
    if not 0 < low < high:
        raise ValueError(
            "label_log_axis needs a log axis with positive limits"
        )
    ticks = [
        mantissa * 10.0**power
        for power in range(
            math.floor(math.log10(low)), math.ceil(math.log10(high)) + 1
        )
        for mantissa in (1, 2, 5)
        if low <= mantissa * 10.0**power <= high
    ]
    labels = [f"{tick:g}" for tick in ticks]
    if axis == "y":
        ax.set_yticks(ticks, labels)
    else:
        ax.set_xticks(ticks, labels)
    ax.minorticks_off()
    return ticks
