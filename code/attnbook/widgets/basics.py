"""Chapter 1 explorer: kernel bandwidth and training-set size ->
Nadaraya-Watson fit."""

import matplotlib.pyplot as plt
from matplotlib.image import NonUniformImage

from .._checks import require_finite_number, require_int_in
from ..core.kernel_regression import (
    mean_squared_error,
    nadaraya_watson,
    regression_data,
)
from ._explorer import live_explorer
from ._frames import Choices
from ._live import draws_view

#: The values the explorer's sliders take in the HTML book (frames drawn in
#: advance).
FRAME_BANDWIDTHS = (0.03, 0.05, 0.1, 0.2, 0.3, 0.5, 1.0, 2.0, 3.0)
FRAME_TRAIN_POINTS = (10, 25, 50, 100, 200)


def kernel_regression_view(
    bandwidth: float = 0.5, n_train: int = 50, seed: int = 0
) -> dict:
    """Everything the explorer shows for one setting of its controls.

    Returns a dict with x_train, y_train (n_train,), x_test, y_true,
    predictions (n_test,), weights (n_test, n_train) and the test ``mse``.
    """
    require_finite_number("bandwidth", bandwidth, low=0.0, include_low=False)
    require_int_in("n_train", n_train, 1, 100_000)
    require_int_in("seed", seed, 0, 2**63 - 1)
    x_train, y_train, x_test, y_true = regression_data(
        n_train=n_train, seed=seed
    )
    predictions, weights = nadaraya_watson(
        x_test, x_train, y_train, bandwidth=bandwidth
    )
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


@draws_view
def plot_kernel_regression(view: dict):
    """Fit vs truth (left) and the attention weights, each test input against
    each training input (right).

    The weight map is drawn at the inputs' positions (a ``NonUniformImage``):
    column j sits at training input x_j, so the band of large weights lies
    along the diagonal query = key, and its width is the bandwidth.
    """
    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 3.6))
    left.plot(view["x_test"], view["y_true"], label="truth")
    left.plot([], [], label="prediction")
    left.plot([], [], "o", alpha=0.4, markersize=4, label="training data")
    left.set_xlim(0, 5)
    left.set_ylim(-2.5, 6.5)
    left.set_xlabel("x")
    left.set_ylabel("y")
    left.legend(loc="lower left", fontsize=9)
    image = NonUniformImage(
        right, cmap="Reds", interpolation="nearest", extent=(0, 5, 5, 0)
    )
    right.add_image(image)
    right.set_xlim(0, 5)
    right.set_ylim(5, 0)
    right.set_xlabel("training input x (keys)")
    right.set_ylabel("test input x (queries)")
    fig.colorbar(image, ax=right, shrink=0.8)
    # Fixed margins: tight_layout would draw the whole figure once just to
    # measure it.
    fig.subplots_adjust(
        left=0.06, right=0.99, bottom=0.14, top=0.9, wspace=0.28
    )
    update_kernel_regression_figure(fig, view)
    return fig


@draws_view
def update_kernel_regression_figure(fig, view: dict) -> list:
    """Show ``view`` in a figure made by ``plot_kernel_regression``; returns
    the artists that changed.

    Axes limits are fixed, so the axes, their ticks and the legend stay as they
    are; the colour bar's range follows the largest weight, so it is redrawn.
    """
    left, right, colour_axes = fig.axes
    _, prediction, training = left.lines
    prediction.set_data(view["x_test"], view["predictions"])
    training.set_data(view["x_train"], view["y_train"])
    left.set_title(
        f"bandwidth {view['bandwidth']:.3g}: test MSE {view['mse']:.3f}"
    )
    (image,) = right.images
    weights = view["weights"]
    image.set_data(
        view["x_train"].numpy(), view["x_test"].numpy(), weights.numpy()
    )
    image.set_clim(0, float(weights.max()))
    right.set_title(
        f"attention weights: {weights.shape[0]} queries × {weights.shape[1]} "
        "keys"
    )
    return [
        prediction,
        training,
        left.title,
        left.get_legend(),
        image,
        right.title,
        colour_axes,
    ]


def kernel_regression_explorer(bandwidth: float = 0.5, n_train: int = 50):
    """Sliders for the bandwidth and the number of training points; redraws
    the fit."""
    import ipywidgets as widgets

    controls = {
        "bandwidth": widgets.FloatLogSlider(
            value=bandwidth,
            base=10,
            min=-1.5,
            max=0.5,
            step=0.05,
            description="bandwidth σ",
            continuous_update=False,
            style={"description_width": "initial"},
        ),
        "n_train": widgets.IntSlider(
            value=n_train,
            min=5,
            max=200,
            step=5,
            description="train points",
            continuous_update=False,
            style={"description_width": "initial"},
        ),
    }
    frames = {
        "bandwidth": Choices(
            "bandwidth σ", list(FRAME_BANDWIDTHS), value=bandwidth
        ),
        "n_train": Choices(
            "train points", list(FRAME_TRAIN_POINTS), value=n_train
        ),
    }
    return live_explorer(
        controls,
        kernel_regression_view,
        plot_kernel_regression,
        update_kernel_regression_figure,
        frames=frames,
    )
