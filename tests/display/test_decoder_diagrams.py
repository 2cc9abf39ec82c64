"""Chapter 10's diagrams draw what their captions say."""

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402

from attnbook.display.decoder_diagrams import (  # noqa: E402
    DECODER_STAGES,
    draw_decoder_block,
    draw_kv_cache,
)


def test_decoder_block_shows_its_stages_bottom_up_and_the_memory():
    fig = draw_decoder_block()
    (ax,) = fig.axes
    texts = {t.get_text(): t.get_position() for t in ax.texts}
    heights = [
        t.get_position()[1]
        for t in ax.texts
        if t.get_text() in {label for label, _ in DECODER_STAGES}
        and t.get_position()[0] > 5
    ]
    assert len(heights) == len(DECODER_STAGES) == 6
    assert heights == sorted(heights)
    labels = [t.get_text() for t in ax.texts if t.get_position()[0] > 5]
    order = [label for label in labels if label in dict(DECODER_STAGES)]
    assert order == [label for label, _ in DECODER_STAGES]
    assert any(label.startswith("memory") for label in texts)
    assert "keys,\nvalues" in texts
    plt.close(fig)


@pytest.mark.parametrize("steps, n_src", [((3, 4), 5), ((1, 2), 7)])
def test_kv_cache_grows_one_column_per_step(steps, n_src):
    fig = draw_kv_cache(steps, n_src)
    for ax, t in zip(fig.axes, steps):
        red = [p for p in ax.patches if p.get_edgecolor()[:3] != (0.3,) * 3]
        # self K and self V: t columns each, the newest outlined
        assert len(ax.patches) == 2 * t + 2 * n_src
        assert len(red) == 2
        assert ax.get_title() == f"step {t}"
    plt.close(fig)


def test_kv_cache_rejects_unreadable_sizes():
    with pytest.raises(ValueError, match="two step"):
        draw_kv_cache((1, 2, 3))
    with pytest.raises(ValueError, match="two step"):
        draw_kv_cache(None)  # the probe's one deep error here
    with pytest.raises(ValueError, match="at most 9"):
        draw_kv_cache((3, 4), n_src=12)
