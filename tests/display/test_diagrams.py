"""The chapter 4, 7 and 9 diagrams (attnbook.display.diagrams) draw what
their captions say."""

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402
from matplotlib.patches import FancyBboxPatch, Rectangle

from attnbook.display.diagrams import (  # noqa: E402
    draw_connectivity,
    draw_encoder_block,
    draw_multihead,
)
from attnbook.experiments.complexity import longest_path  # noqa: E402


def _texts(fig):
    return [t.get_text() for ax in fig.axes for t in ax.texts]


def _red_lines(ax):
    return [line for line in ax.lines if line.get_color() == "tab:red"]


@pytest.mark.parametrize("n, kernel_size", [(5, 3), (7, 5), (2, 3)])
def test_connectivity_paths_have_the_lengths_of_longest_path(n, kernel_size):
    fig = draw_connectivity(n, kernel_size)
    cnn, rnn, sa = fig.axes
    paths = longest_path(n, kernel_size)
    # The red route crosses one edge per layer application (the RNN also climbs x_1 -> h_1).
    assert len(_red_lines(cnn)) == paths["CNN"]
    assert len(_red_lines(rnn)) == paths["RNN"]
    assert len(_red_lines(sa)) == paths["self-attention"] == 1
    # Every self-attention output reads every input: n^2 edges.
    assert len(sa.lines) == n * n
    # Each CNN node reads the kernel_size nodes below it ('same' padding drops the ones off the edge).
    reach = (kernel_size - 1) // 2
    per_layer = sum(
        min(n, i + reach) - max(1, i - reach) + 1 for i in range(1, n + 1)
    )
    assert len(cnn.lines) == per_layer * paths["CNN"]
    labels = _texts(fig)
    for i in range(1, n + 1):
        assert labels.count(f"$x_{i}$") == 3
    assert f"after {paths['CNN']} layers" in cnn.get_title()
    plt.close(fig)


def test_connectivity_rejects_unreadable_sizes():
    with pytest.raises(ValueError, match="at most 8"):
        draw_connectivity(9)
    with pytest.raises(ValueError, match="odd"):
        draw_connectivity(5, 4)


@pytest.mark.parametrize("placement", ["post-LN", "pre-LN"])
def test_encoder_block_shows_every_stage_in_order(placement):
    fig = draw_encoder_block(placement)
    (ax,) = fig.axes
    texts = [t for t in ax.texts]
    labels = [t.get_text() for t in texts]
    for label in (
        "embedding lookup",
        "multi-head self-attention",
        "feed-forward network",
        "$\\times N$",
        "token ids $(B, n)$",
        "padding mask\n$(B, 1, 1, n)$",
    ):
        assert label in labels
    height = {t.get_text(): t.get_position()[1] for t in texts}
    # Bottom up: ids, embedding, attention, FFN, output.
    order = [
        "token ids $(B, n)$",
        "embedding lookup",
        "multi-head self-attention",
        "feed-forward network",
        "hidden states $(B, n, d_{\\mathrm{model}})$",
    ]
    assert [height[label] for label in order] == sorted(
        height[label] for label in order
    )
    if placement == "post-LN":
        assert (
            labels.count("add & norm") == 2 and "final LayerNorm" not in labels
        )
    else:
        assert labels.count("LayerNorm") == 2 and "final LayerNorm" in labels
        norms = sorted(
            t.get_position()[1] for t in texts if t.get_text() == "LayerNorm"
        )
        assert (
            norms[0]
            < height["multi-head self-attention"]
            < norms[1]
            < height["feed-forward network"]
        )
    assert placement in ax.get_title()
    plt.close(fig)


def test_encoder_block_rejects_unknown_placement():
    with pytest.raises(ValueError, match="placement"):
        draw_encoder_block("sandwich")


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
