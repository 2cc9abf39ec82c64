"""Chapter 3's diagram: soft attention as an expectation, hard attention as a
sample."""

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402

from attnbook.display.soft_hard_diagram import draw_soft_hard  # noqa: E402


@pytest.mark.parametrize(
    "weights, chosen",
    [((0.15, 0.5, 0.25, 0.1), 2), ((0.5, 0.5), 0), ((0.2,) * 5, 4)],
)
def test_soft_lines_follow_the_weights_and_hard_draws_one(weights, chosen):
    fig = draw_soft_hard(weights, chosen)
    (ax,) = fig.axes
    texts = [t.get_text() for t in ax.texts]
    n = len(weights)
    labels = [f"$\\alpha_{i}$ = {w:.2f}" for i, w in enumerate(weights, 1)]
    assert [t for t in texts if t.startswith("$\\alpha_")] == labels * 2
    assert f"$\\mathbf{{x}}_z = \\mathbf{{x}}_{chosen + 1}$" in texts
    soft, hard = ax.lines[:n], ax.lines[n:]
    widths = [line.get_linewidth() for line in soft]
    order = sorted(range(n), key=lambda i: weights[i])
    assert sorted(widths) == [widths[i] for i in order]
    solid = [i for i, line in enumerate(hard) if line.get_linestyle() == "-"]
    assert solid == [chosen]
    plt.close(fig)


@pytest.mark.parametrize(
    "weights, chosen, match",
    [
        ((1.0,), 0, "2 to 6"),
        ((0.5, 0.6), 0, "sum to 1"),
        ((0.5, -0.5, 1.0), 0, "non-negative"),
        ((0.5, 0.5), 2, "chosen must be an index 0 to 1"),
        ((0.5, 0.5), True, "chosen must be an index"),
    ],
)
def test_bad_arguments_are_refused(weights, chosen, match):
    with pytest.raises(ValueError, match=match):
        draw_soft_hard(weights, chosen)
    with pytest.raises(ValueError, match="figsize"):
        draw_soft_hard(figsize=(0, 3))
