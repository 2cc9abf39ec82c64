"""The chapter 7 and 9 diagrams draw what their captions say."""

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402

from attnbook.display.diagrams import draw_connectivity, draw_encoder_block  # noqa: E402
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
