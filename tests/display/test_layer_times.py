"""display.layer_times: chapter 7's log-log timing figure."""

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402

from attnbook.display.layer_times import plot_layer_times  # noqa: E402


def test_one_line_per_layer_and_reference_slopes_through_the_anchors():
    lengths = [16, 32, 64, 128]
    times = {
        "CNN": [1e-5, 2e-5, 4e-5, 8e-5],
        "RNN": [2e-5, 4e-5, 8e-5, 1.6e-4],
        "self-attention": [1e-5, 3e-5, 1e-4, 4e-4],
    }
    fig = plot_layer_times(lengths, times, fit_from=2)
    (ax,) = fig.axes
    lines = ax.get_lines()
    labels = [line.get_label() for line in lines]
    assert labels == ["CNN", "RNN", "self-attention", "slope 1", "slope 2"]
    slope1, slope2 = lines[3], lines[4]
    assert list(slope1.get_xdata()) == [64, 128]
    assert slope1.get_ydata()[-1] == 1.6e-4
    assert slope1.get_ydata()[0] == 0.8e-4
    assert slope2.get_ydata()[-1] == 4e-4
    assert slope2.get_ydata()[0] == 1e-4
    plt.close(fig)
