"""display.rotary.draw_rotated_pairs: one arrow per position, at the point
apply_rotary gives, all of one length per panel; bad input refused."""

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402
from matplotlib.text import Annotation  # noqa: E402

from attnbook import apply_rotary  # noqa: E402
from attnbook.display.rotary import draw_rotated_pairs  # noqa: E402


def test_arrows_end_where_apply_rotary_puts_the_pair():
    q = torch.tensor([1.0, 2.0, 3.0, 4.0])
    panels = [(0, range(0, 6)), (1, range(0, 501, 100))]
    fig = draw_rotated_pairs(q, panels)
    try:
        assert len(fig.axes) == 2
        for ax, (pair, shown) in zip(fig.axes, panels):
            arrows = [t for t in ax.texts if isinstance(t, Annotation)]
            labels = [
                t.get_text() for t in ax.texts if not isinstance(t, Annotation)
            ]
            assert labels == [str(p) for p in shown]
            assert len(arrows) == len(shown)
            for arrow, position in zip(arrows, shown):
                expected = apply_rotary(q, position)[2 * pair : 2 * pair + 2]
                assert torch.allclose(
                    torch.tensor(arrow.xy, dtype=torch.float32), expected
                )
                length = torch.tensor(arrow.xy).norm()
                assert torch.isclose(length, q[2 * pair : 2 * pair + 2].norm())
    finally:
        plt.close(fig)


@pytest.mark.parametrize(
    "vector, panels",
    [
        (torch.ones(3), [(0, range(3))]),
        (torch.ones(4), [(2, range(3))]),
        (torch.ones(4), [(0, range(0))]),
        (torch.ones(4), []),
    ],
)
def test_bad_input_is_refused_before_drawing(vector, panels):
    before = plt.get_fignums()
    with pytest.raises(ValueError):
        draw_rotated_pairs(vector, panels)
    assert plt.get_fignums() == before


@pytest.mark.parametrize(
    "panels, figsize, name",
    [
        (None, (7.5, 3.6), "panels"),
        ([None], (7.5, 3.6), "panels"),
        ("abc", (7.5, 3.6), "panels"),
        ([(0, range(3))], [], "figsize"),
        ([(0, range(3))], "abc", "figsize"),
    ],
)
def test_bad_panels_and_figsize_are_refused_by_name(panels, figsize, name):
    with pytest.raises((TypeError, ValueError), match=name):
        draw_rotated_pairs(torch.randn(4), panels, figsize)
