"""Figures shared by the chapters (matplotlib only; no tensor math lives here)."""

import matplotlib.pyplot as plt
import torch
from matplotlib.text import Text

#: Width in CSS pixels of the HTML book's figure column (at a 1280 px window): a wider picture is
#: shrunk to it, and its text with it.
BOOK_COLUMN_PX = 672
#: The smallest text a figure may show, in CSS pixels at 1x (legible at the book's width).
MIN_TEXT_PX = 8.0


def smallest_text_px(figure, displayed_width_px: float) -> float:
    """The size in CSS pixels of ``figure``'s smallest visible text, shown ``displayed_width_px`` wide.

    Every visible, non-empty text artist counts (titles, labels, tick labels, legends,
    annotations). A text of ``s`` points is ``s / 72`` inches tall; the figure's width in
    inches maps to ``displayed_width_px``. Returns ``inf`` for a figure without text. Draw the
    figure first, so that its tick labels exist.
    """
    width_in = figure.get_figwidth()
    if not width_in > 0 or not displayed_width_px > 0:
        raise ValueError(f"figure width {width_in} in and displayed width {displayed_width_px} px must be > 0")
    sizes = [
        text.get_fontsize()
        for text in figure.findobj(Text)
        if text.get_visible() and text.get_text().strip() and _drawn(text)
    ]
    return min(sizes, default=float("inf")) / 72 * displayed_width_px / width_in


def _drawn(text) -> bool:
    """False for a tick label of a tick matplotlib does not draw (outside the view limits)."""
    axes = text.axes
    if axes is None or not hasattr(text, "get_unitless_position"):
        return True
    return bool(text.get_window_extent().overlaps(axes.figure.bbox)) if text.figure is not None else True


def _as_grid(matrices) -> torch.Tensor:
    """Turn a 2-D, 3-D or 4-D stack of matrices into (rows, cols, n_q, n_k)."""
    matrices = torch.as_tensor(matrices).detach().cpu().float()
    if matrices.dim() == 2:
        return matrices[None, None]
    if matrices.dim() == 3:
        return matrices[None]
    if matrices.dim() == 4:
        return matrices
    raise ValueError(f"matrices must be 2-D, 3-D or 4-D, got shape {tuple(matrices.shape)}")


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
    vmin / vmax: colour limits shared by all panels (vmax=None: the largest entry;
    vmin=None: the smallest, for signed matrices).
    """
    grid = _as_grid(matrices)
    rows, cols, n_q, n_k = grid.shape
    if titles is not None and len(titles) != cols:
        raise ValueError(f"got {len(titles)} titles for {cols} columns of heat-maps")
    if figsize is None:
        figsize = (min(2.6 * cols, 13), min(2.4 * rows, 10))
    fig, axes = plt.subplots(rows, cols, figsize=figsize, sharex=True, sharey=True, squeeze=False)
    low = float(grid.min()) if vmin is None else vmin
    high = float(grid.max()) if vmax is None else vmax
    for r in range(rows):
        for c in range(cols):
            ax = axes[r, c]
            image = ax.imshow(grid[r, c].numpy(), cmap=cmap, vmin=low, vmax=high, aspect="auto")
            if r == rows - 1:
                ax.set_xlabel(xlabel)
            if c == 0:
                ax.set_ylabel(ylabel)
            if titles is not None and r == 0:
                ax.set_title(titles[c])
            if xticklabels is not None:
                ax.set_xticks(range(n_k), labels=xticklabels, rotation=90 if n_k > 6 else 0)
            if yticklabels is not None:
                ax.set_yticks(range(n_q), labels=yticklabels)
    fig.colorbar(image, ax=axes, shrink=0.7)
    return fig
