"""The chapter-1 explorer: its pure view function, its figure and its builder."""

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import pytest
import torch  # noqa: E402

from attnbook import nadaraya_watson, regression_data  # noqa: E402
from attnbook.widgets.basics import (
    kernel_regression_explorer,
    kernel_regression_view,
    plot_kernel_regression,
)  # noqa: E402


def test_view_matches_nadaraya_watson_directly():
    view = kernel_regression_view(bandwidth=0.7, n_train=30)
    x_train, y_train, x_test, y_true = regression_data(n_train=30)
    expected, weights = nadaraya_watson(
        x_test, x_train, y_train, bandwidth=0.7
    )
    torch.testing.assert_close(view["predictions"], expected)
    torch.testing.assert_close(view["weights"], weights)
    assert abs(view["mse"] - float(((expected - y_true) ** 2).mean())) < 1e-7


def test_view_reacts_to_its_controls():
    narrow, wide = (
        kernel_regression_view(bandwidth=0.1),
        kernel_regression_view(bandwidth=2.0),
    )
    assert (
        narrow["weights"].max(dim=1).values.mean()
        > wide["weights"].max(dim=1).values.mean()
    )
    assert kernel_regression_view(n_train=80)["weights"].shape == (100, 80)


def test_plot_shows_the_view():
    view = kernel_regression_view()
    fig = plot_kernel_regression(view)
    left = fig.axes[0]
    torch.testing.assert_close(
        torch.as_tensor(left.lines[1].get_ydata()), view["predictions"]
    )
    plt.close(fig)


def test_builder_redraws_when_a_slider_moves():
    box = kernel_regression_explorer(bandwidth=0.3, n_train=50)
    sliders, output = box.children
    bandwidth, n_train = sliders.children
    assert (bandwidth.value, n_train.value) == (0.3, 50)
    before = output.outputs
    bandwidth.value = 1.0
    assert output.outputs != before


def test_builder_output_is_a_png_of_the_current_figure():
    import base64
    import io

    from PIL import Image

    from attnbook.widgets._live import EXPLORER_DPI

    box = kernel_regression_explorer()
    (stored,) = box.children[1].outputs
    assert stored["output_type"] == "display_data"
    png = base64.b64decode(stored["data"]["image/png"])
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = Image.open(io.BytesIO(png)).size
    assert (width, height) == (
        10 * EXPLORER_DPI,
        round(3.6 * EXPLORER_DPI),
    )  # the figure is 10 x 3.6 inches
    assert (
        stored["data"]["text/plain"]
        == f"<Figure size {width}x{height} with 3 Axes>"
    )


def test_a_move_updates_the_figure_behind_the_explorer():
    box = kernel_regression_explorer(bandwidth=0.3, n_train=50)
    bandwidth, n_train = box.children[0].children
    n_train.value = 120
    left, right, _ = box.live_figure.figure.axes
    expected = kernel_regression_view(bandwidth=0.3, n_train=120)
    torch.testing.assert_close(
        torch.as_tensor(left.lines[1].get_ydata()), expected["predictions"]
    )
    assert right.images[0].get_array().shape == (100, 120)
    assert "100 queries × 120 keys" in right.get_title()


def test_explorer_figures_refuse_what_is_not_a_figure_or_a_view():
    import matplotlib.pyplot as plt

    from attnbook.widgets.basics import (
        kernel_regression_view,
        plot_kernel_regression,
        update_kernel_regression_figure,
    )

    view = kernel_regression_view()
    for bad in (None, {}, "x"):
        with pytest.raises(TypeError, match="view must be the dict"):
            plot_kernel_regression(bad)
    fig = plot_kernel_regression(view)
    try:
        for bad in (None, 3, torch.nn.Linear(2, 2)):
            with pytest.raises(TypeError, match="fig must be the matplotlib"):
                update_kernel_regression_figure(bad, view)
        assert update_kernel_regression_figure(fig, view)
    finally:
        plt.close(fig)
