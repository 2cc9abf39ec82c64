"""Chapter 1's diagram of soft attention as a soft table lookup."""

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402

from attnbook.display.attention_steps import draw_attention_steps  # noqa: E402


@pytest.mark.parametrize(
    "weights", [(0.1, 0.55, 0.3, 0.05), (0.5, 0.5), (0.2,) * 5]
)
def test_one_row_per_pair_and_lines_as_wide_as_the_weights(weights):
    fig = draw_attention_steps(weights)
    (ax,) = fig.axes
    texts = [t.get_text() for t in ax.texts]
    n = len(weights)
    for i in range(1, n + 1):
        assert f"$\\mathbf{{k}}_{i}$" in texts
        assert f"$\\mathbf{{v}}_{i}$" in texts
    shown = [t for t in texts if t.startswith("$\\alpha_")]
    assert shown == [
        f"$\\alpha_{i} = {w:.2f}$" for i, w in enumerate(weights, start=1)
    ]
    widths = [line.get_linewidth() for line in ax.lines]
    assert len(widths) == n
    order = sorted(range(n), key=lambda i: weights[i])
    assert sorted(widths) == [widths[i] for i in order]
    plt.close(fig)


@pytest.mark.parametrize(
    "weights, match",
    [
        ((1.0,), "2 to 6"),
        ((0.1,) * 10, "2 to 6"),
        ((0.5, 0.6), "sum to 1"),
        ((1.5, -0.5), "non-negative"),
        ((0.5, float("nan")), "non-negative"),
        ("ab", "non-negative"),
    ],
)
def test_bad_weights_are_refused(weights, match):
    with pytest.raises(ValueError, match=match):
        draw_attention_steps(weights)
