"""Chapter 16's explorer: the tiles view counts what the kernel does."""

import matplotlib
import pytest

from attnbook.widgets.gpu_kernels import (
    plot_tiles,
    tiles_view,
    update_tiles_figure,
)

matplotlib.use("Agg")


def test_causal_view_computes_about_half_the_tiles():
    view = tiles_view("causal", 64, 1024)
    blocks = 1024 // 64
    assert view["counts"]["masked"] == blocks
    assert view["computed"] == pytest.approx((blocks + 1) / (2 * blocks))
    assert tiles_view("none", 64, 1024)["computed"] == 1.0


def test_window_skips_more_than_causal_and_shrinks_with_the_block():
    wide = tiles_view("window", 128, 2048)["computed"]
    narrow = tiles_view("window", 16, 2048)["computed"]
    assert narrow < wide < tiles_view("causal", 128, 2048)["computed"]


def test_figure_follows_the_view():
    fig = plot_tiles(tiles_view())
    update_tiles_figure(fig, tiles_view("none", 128, 512))
    assert fig.axes[0].images[0].get_array().shape == (4, 4)
    assert "16 of 16 tiles" in fig.axes[0].get_title()


@pytest.mark.parametrize("kwargs", [{"mask": "alibi"}, {"block": 8}, {"n": 0}])
def test_bad_settings_are_refused(kwargs):
    with pytest.raises(ValueError):
        tiles_view(**kwargs)
