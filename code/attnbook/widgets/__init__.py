"""Live explorers: a pure function computes what to show, a thin builder wires controls to it.

The pure functions (``*_view``) are tested directly; the builders need ipywidgets
and a running kernel.
"""

from .basics import kernel_regression_explorer, kernel_regression_view, plot_kernel_regression

__all__ = ["kernel_regression_explorer", "kernel_regression_view", "plot_kernel_regression"]
