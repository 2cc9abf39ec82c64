"""Figures shared by the chapters (matplotlib only; no tensor math lives here)."""

import matplotlib.pyplot as plt
import torch


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
