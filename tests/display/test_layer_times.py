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


def test_bad_input_is_refused_by_name():
    """Probe findings: matplotlib's and Python's deep errors before."""
    import pytest

    good = {"RNN": [1.0, 2.0], "self-attention": [1.0, 4.0]}
    figures = plt.get_fignums()
    for kwargs, name in (
        (dict(lengths=[], times=good), "lengths"),
        (dict(lengths=None, times=good), "lengths"),
        (dict(lengths=[8, 16], times={}), "times"),
        (dict(lengths=[8, 16], times={"RNN": [1.0]}), "times"),
        (dict(lengths=[8, 16], times=good, fit_from=2.5), "fit_from"),
    ):
        with pytest.raises((TypeError, ValueError), match=name):
            plot_layer_times(**kwargs)
    assert plt.get_fignums() == figures  # refused before a figure opened
