"""Live explorers: a pure function computes what to show, a thin builder wires
controls to it.

The pure functions (``*_view``) are tested directly; the builders need
ipywidgets and a running kernel. One module per chapter
(``attnbook.widgets.<topic>``), imported on demand (it needs ipywidgets);
``_live`` draws a figure that follows its controls, ``_frames`` pre-draws it
for every value of a grid (the explorers of the HTML book), and ``_explorer``
chooses between the two.

May import: every layer of the package; nothing imports the widgets.
"""

from .basics import (
    kernel_regression_explorer,
    kernel_regression_view,
    plot_kernel_regression,
)

__all__ = [
    "kernel_regression_explorer",
    "kernel_regression_view",
    "plot_kernel_regression",
]
