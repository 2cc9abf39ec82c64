"""show_heatmaps draws what it is given."""

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402

import attnbook
from attnbook import show_heatmaps  # noqa: E402

from _refusals import refused


def test_grid_layout_and_pixel_values():
    matrices = torch.arange(2 * 3 * 4 * 5, dtype=torch.float32).reshape(
        2, 3, 4, 5
    )
    fig = show_heatmaps(matrices, titles=["a", "b", "c"])
    panels = [ax for ax in fig.axes if ax.images]
    assert len(panels) == 6
    # Each panel shows exactly its own matrix, row-major: queries down, keys across.
    for index, ax in enumerate(panels):
        np.testing.assert_array_equal(
            ax.images[0].get_array(), matrices.reshape(6, 4, 5)[index].numpy()
        )
    assert [ax.get_title() for ax in panels[:3]] == ["a", "b", "c"]
    plt.close(fig)


def test_single_matrix_and_tick_labels():
    fig = show_heatmaps(
        [[0.2, 0.8], [0.5, 0.5]],
        xticklabels=["k1", "k2"],
        yticklabels=["q1", "q2"],
    )
    ax = [a for a in fig.axes if a.images][0]
    assert [t.get_text() for t in ax.get_xticklabels()] == ["k1", "k2"]
    assert ax.images[0].get_clim() == pytest.approx((0.0, 0.8))
    plt.close(fig)


def test_bad_shapes():
    with pytest.raises(ValueError, match="2-D, 3-D or 4-D"):
        show_heatmaps(torch.zeros(5))
    with pytest.raises(ValueError, match="2 titles for 3 columns"):
        show_heatmaps(torch.zeros(3, 2, 2), titles=["a", "b"])


def test_label_log_axis_labels_one_two_five_inside_the_range():
    import matplotlib.pyplot as plt

    from attnbook.display.figures import label_log_axis

    fig, ax = plt.subplots()
    ax.loglog([1, 10], [3, 700])
    ax.set_ylim(3, 700)
    assert label_log_axis(ax) == [5, 10, 20, 50, 100, 200, 500]
    assert [t.get_text() for t in ax.get_yticklabels()][:2] == ["5", "10"]
    ax.set_yscale("linear")
    ax.set_ylim(-1, 1)
    with pytest.raises(ValueError, match="positive"):
        label_log_axis(ax)
    with pytest.raises(ValueError, match="axis"):
        label_log_axis(ax, "z")
    plt.close(fig)


@pytest.mark.parametrize("matrices", [None, "abc", torch.empty(0, 3)])
def test_show_heatmaps_refuses_what_it_cannot_draw(matrices):
    with pytest.raises((TypeError, ValueError), match="matrices"):
        attnbook.show_heatmaps(matrices)


def test_show_heatmaps_refuses_a_grid_too_large_to_draw():
    with pytest.raises(ValueError, match="too many"):
        attnbook.show_heatmaps(torch.zeros(300, 300, 2, 2))


@pytest.mark.parametrize(
    "kwargs, error, match",
    [
        (dict(titles=2.5), TypeError, "titles must be None or a list"),
        (dict(titles=["a"]), ValueError, "got 1 titles for 2 columns"),
        (dict(xticklabels="x"), TypeError, "xticklabels must be None"),
        (dict(xticklabels=-1), TypeError, "xticklabels must be None"),
        (dict(yticklabels=["a"]), ValueError, "got 1 yticklabels for 3"),
        (dict(figsize="x"), ValueError, r"figsize must be \(width, height\)"),
        (dict(figsize=(2.5, -1)), ValueError, r"figsize must be \(width"),
        (dict(cmap=""), ValueError, "cmap must be a matplotlib colour map"),
        (dict(cmap=3), ValueError, "cmap must be"),
        (dict(vmin=10**400), ValueError, "vmin must be None or a finite"),
        (dict(vmax="x"), ValueError, "vmax must be None or a finite"),
    ],
)
def test_show_heatmaps_checks_its_options_before_drawing(kwargs, error, match):
    import matplotlib.pyplot as plt

    from attnbook.display.figures import show_heatmaps

    matrices = torch.rand(2, 2, 3, 4)
    figures = plt.get_fignums()
    refused(lambda: show_heatmaps(matrices, **kwargs), error, match, matrices)
    assert plt.get_fignums() == figures  # no half-drawn figure left open


def test_show_heatmaps_refuses_a_huge_view():
    from attnbook.display.figures import show_heatmaps

    view = torch.rand(1, 4).expand(10**9, 4)
    refused(lambda: show_heatmaps(view), ValueError, "matrices, a broadcast")
