"""Chapter 1 explorer: kernel bandwidth and training-set size -> Nadaraya-Watson fit."""

import matplotlib.pyplot as plt

from ..kernel_regression import mean_squared_error, nadaraya_watson, regression_data
from ._live import figure_explorer


def kernel_regression_view(bandwidth: float = 0.5, n_train: int = 50, seed: int = 0) -> dict:
    """Everything the explorer shows for one setting of its controls.

    Returns a dict with x_train, y_train (n_train,), x_test, y_true,
    predictions (n_test,), weights (n_test, n_train) and the test ``mse``.
    """
    x_train, y_train, x_test, y_true = regression_data(n_train=n_train, seed=seed)
    predictions, weights = nadaraya_watson(x_test, x_train, y_train, bandwidth=bandwidth)
    return {
        "bandwidth": bandwidth,
        "x_train": x_train,
        "y_train": y_train,
        "x_test": x_test,
        "y_true": y_true,
        "predictions": predictions,
        "weights": weights,
        "mse": mean_squared_error(predictions, y_true),
    }


def plot_kernel_regression(view: dict):
    """Fit vs truth (left) and the attention weights, queries x keys (right)."""
    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 3.6))
    left.plot(view["x_test"], view["y_true"], label="truth")
    left.plot(view["x_test"], view["predictions"], label="prediction")
    left.plot(view["x_train"], view["y_train"], "o", alpha=0.4, markersize=4, label="training data")
    left.set_xlabel("x")
    left.set_ylabel("y")
    left.set_title(f"bandwidth {view['bandwidth']:.3g}: test MSE {view['mse']:.3f}")
    left.legend(loc="lower left", fontsize=8)
    image = right.imshow(view["weights"].numpy(), cmap="Reds", aspect="auto", vmin=0)
    right.set_xlabel("training inputs (keys), sorted")
    right.set_ylabel("test inputs (queries)")
    right.set_title("attention weights")
    fig.colorbar(image, ax=right, shrink=0.8)
    # Fixed margins: tight_layout would draw the whole figure once just to measure it.
    fig.subplots_adjust(left=0.06, right=0.99, bottom=0.14, top=0.9, wspace=0.28)
    return fig


def kernel_regression_explorer(bandwidth: float = 0.5, n_train: int = 50):
    """Sliders for the bandwidth and the number of training points; redraws the fit."""
    import ipywidgets as widgets

    controls = {
        "bandwidth": widgets.FloatLogSlider(
            value=bandwidth, base=10, min=-1.5, max=0.5, step=0.05, description="bandwidth σ",
            continuous_update=False, style={"description_width": "initial"},
        ),
        "n_train": widgets.IntSlider(
            value=n_train, min=5, max=200, step=5, description="train points",
            continuous_update=False, style={"description_width": "initial"},
        ),
    }
    return figure_explorer(controls, lambda **values: plot_kernel_regression(kernel_regression_view(**values)))
