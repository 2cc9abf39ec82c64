"""attnbook: the code of *Attention, from Scratch*.

Layers, bottom up (nothing imports upward):
  tensor functions  masking, kernel_regression
  plotting          plotting
  widgets           attnbook.widgets (imported on demand, needs ipywidgets)
"""

from .kernel_regression import gaussian_scores, nadaraya_watson, regression_data, regression_target
from .masking import lengths_to_mask, masked_softmax
from .plotting import show_heatmaps

__all__ = [
    "gaussian_scores",
    "lengths_to_mask",
    "masked_softmax",
    "nadaraya_watson",
    "regression_data",
    "regression_target",
    "show_heatmaps",
]
__version__ = "0.1.0"
