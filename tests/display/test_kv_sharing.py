"""Chapter 13's diagram of shared key-value heads."""

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402

from attnbook.display.kv_sharing import draw_kv_sharing  # noqa: E402


@pytest.mark.parametrize("h, g", [(8, 8), (8, 2), (8, 1), (6, 3)])
def test_each_query_head_is_joined_to_the_head_of_its_group(h, g):
    fig = draw_kv_sharing(h, (g,))
    (ax,) = fig.axes
    assert len(ax.lines) == h
    kv_centres = sorted(
        t.get_position()[0] for t in ax.texts if t.get_text().startswith("kv")
    )
    assert len(kv_centres) == g
    for i, line in enumerate(ax.lines):
        (q_x, kv_x), _ = line.get_data()
        assert q_x == i
        assert kv_x == pytest.approx(kv_centres[i // (h // g)])
    plt.close(fig)


def test_one_panel_per_sharing_and_titles_name_the_kind():
    fig = draw_kv_sharing(8, (8, 2, 1))
    titles = [ax.get_title() for ax in fig.axes]
    assert [t.split(":")[0] for t in titles] == [
        "multi-head",
        "grouped-query",
        "multi-query",
    ]
    plt.close(fig)


@pytest.mark.parametrize(
    "args, error, match",
    [
        ((8, (3,)), ValueError, "divide"),
        ((8, ()), TypeError, "num_kv_heads"),
        ((8, 2), TypeError, "num_kv_heads"),
        ((0, (1,)), ValueError, "num_heads"),
        ((100, (1,)), ValueError, "num_heads"),
    ],
)
def test_bad_sizes_are_refused(args, error, match):
    with pytest.raises(error, match=match):
        draw_kv_sharing(*args)
