"""The chapter-4 diagram of the multi-head split and merge draws what its caption promises."""

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402
from matplotlib.patches import FancyBboxPatch, Rectangle  # noqa: E402

from attnbook.display.diagrams import draw_multihead  # noqa: E402


@pytest.mark.parametrize("num_heads", [1, 3, 8])
def test_draw_multihead_has_one_row_per_head_and_every_stage(num_heads):
    fig = draw_multihead(num_heads)
    (ax,) = fig.axes
    texts = [t.get_text() for t in ax.texts]
    heads = [t for t in texts if t.startswith("head ")]
    assert heads == [
        f"head {i}\n$Q_{i}, K_{i}, V_{i}$" for i in range(1, num_heads + 1)
    ]
    assert (
        sum("softmax" in t for t in texts) == num_heads
    )  # one attention per head
    for stage in ("input $X$", "$XW^Q", "concat", "W^O", "output"):
        assert any(stage in t for t in texts), stage
    assert any(f"$h = {num_heads}$ heads" in t for t in texts)
    # Boxes: input, projections, 2 per head, concat, W^O. Strips: h blocks before and after attention.
    boxes = [p for p in ax.patches if isinstance(p, FancyBboxPatch)]
    blocks = [p for p in ax.patches if type(p) is Rectangle]
    assert len(boxes) == 4 + 2 * num_heads and len(blocks) == 2 * num_heads
    # Arrows: X -> projections, 3 per head, concat -> W^O -> output.
    assert (
        len([c for c in ax.get_children() if type(c).__name__ == "Annotation"])
        == 3 + 3 * num_heads
    )
    fig.canvas.draw()  # renders (mathtext included) without error
    plt.close(fig)


@pytest.mark.parametrize("bad", [0, 9, 2.0, True])
def test_draw_multihead_rejects_bad_head_counts(bad):
    with pytest.raises(
        ValueError, match="num_heads must be an integer from 1 to 8"
    ):
        draw_multihead(bad)
