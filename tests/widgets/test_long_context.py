"""The chapter-15 explorer: RoPE scaling's frequencies and self-scores."""

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402

from attnbook.widgets.long_context import (  # noqa: E402
    TRAINED,
    plot_rope_scaling,
    rope_scaling_explorer,
    rope_scaling_view,
)


def test_position_interpolation_divides_every_frequency():
    view = rope_scaling_view("linear", 8)
    torch.testing.assert_close(
        view["ratio"], torch.full_like(view["ratio"], 1 / 8)
    )


def test_no_scaling_keeps_frequencies_and_reaches_further():
    view = rope_scaling_view(None, 4)
    assert torch.equal(view["scaled"], view["original"])
    assert round(view["distances"][-1].item()) == 4 * TRAINED


def test_yarn_keeps_fast_pairs_and_interpolates_slow_ones():
    view = rope_scaling_view("yarn", 16)
    fast, slow = view["turns"] > 32, view["turns"] < 1
    assert torch.equal(
        view["ratio"][fast], torch.ones(int(fast.sum()), dtype=torch.float64)
    )
    torch.testing.assert_close(
        view["ratio"][slow],
        torch.full((int(slow.sum()),), 1 / 16, dtype=torch.float64),
    )


def test_ntk_keeps_the_fastest_pair_and_scales_the_slowest_by_s():
    view = rope_scaling_view("ntk", 8)
    assert view["ratio"][0].item() == 1.0
    assert view["ratio"][-1].item() == pytest.approx(1 / 8)


def test_scores_are_the_mean_cosine_of_the_angles():
    view = rope_scaling_view("ntk", 2)
    for key, theta in (("score", "original"), ("score_scaled", "scaled")):
        angles = view["distances"][:, None] * view[theta]
        torch.testing.assert_close(view[key], angles.cos().mean(-1))
    assert view["distances"][0].item() == pytest.approx(1.0)


@pytest.mark.parametrize(
    "kwargs, name",
    [(dict(scaling="cubic"), "scaling"), (dict(factor=0), "factor")],
)
def test_bad_settings_are_named(kwargs, name):
    with pytest.raises(ValueError, match=name):
        rope_scaling_view(**kwargs)


def test_plot_shows_the_view():
    view = rope_scaling_view("yarn", 8)
    fig = plot_rope_scaling(view)
    left, right = fig.axes
    assert list(left.lines[0].get_ydata()) == view["ratio"].tolist()
    assert "YaRN, s = 8" in left.get_title()
    assert right.lines[3].get_xdata()[0] == pytest.approx(8 * TRAINED)
    plt.close(fig)


def test_builder_redraws_when_a_control_moves():
    box = rope_scaling_explorer()
    controls, output = box.children
    scaling = controls.children[0]
    before = output.outputs
    scaling.value = "linear"
    assert output.outputs != before
