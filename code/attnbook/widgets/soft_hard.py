"""Chapter 3 explorer: turn a 2-D query around the circle -> soft output vs
argmax vs samples."""

import math

import matplotlib.pyplot as plt
import torch

from .._checks import (
    all_finite,
    is_finite_number,
    require_finite_number,
    require_int_in,
)
from .._random import seeded_generator
from ..core.attention import attention, hard_attention
from ..core.scoring import dot_score
from ._explorer import live_explorer
from ._frames import Choices
from ._live import draws_view

KEY_ANGLES = (
    20.0,
    95.0,
    150.0,
    230.0,
    300.0,
)  # degrees; five keys on the unit circle
KEY_VALUES = (1.0, 2.0, 3.0, 4.0, 5.0)  # value n + 1 belongs to key n
#: The query angles and lengths the explorer offers in the HTML book (frames
#: drawn in advance).
FRAME_ANGLES = tuple(float(a) for a in range(0, 360, 30))
FRAME_LENGTHS = (0.5, 1.0, 3.0, 5.0, 10.0)


def circle_keys() -> tuple[torch.Tensor, torch.Tensor]:
    """The explorer's keys (5, 2), unit vectors at ``KEY_ANGLES``, and
    values (5, 1)."""
    radians = torch.tensor(KEY_ANGLES, dtype=torch.float64) * math.pi / 180
    keys = torch.stack([radians.cos(), radians.sin()], dim=-1)
    return keys, torch.tensor(KEY_VALUES, dtype=torch.float64).unsqueeze(-1)


def angle_query(angle, length: float = 3.0) -> torch.Tensor:
    """Queries of the given length pointing at ``angle`` degrees: (..., 2)
    for angle (...)."""
    if not isinstance(angle, torch.Tensor) and not is_finite_number(angle):
        raise ValueError(f"angle must be finite degrees, got {angle!r:.40}")
    angle = torch.as_tensor(angle, dtype=torch.float64)
    if not all_finite(angle):
        raise ValueError(f"angle must be finite degrees, got {angle.tolist()}")
    require_finite_number("length", length)
    radians = angle * math.pi / 180
    return length * torch.stack([radians.cos(), radians.sin()], dim=-1)


def soft_hard_view(
    angle: float = 60.0,
    length: float = 3.0,
    n_samples: int = 200,
    seed: int = 0,
) -> dict:
    """Soft attention, argmax and sampled hard attention for one query
    direction.

    The query ``angle_query(angle, length)`` is scored against ``circle_keys``
    with the dot product (the length acts as an inverse temperature). Returns a
    dict with the controls, ``query`` (2,), ``keys`` (5, 2), ``values`` (5,),
    ``weights`` (5,), ``soft_output`` and ``argmax_output`` (floats),
    ``argmax_index`` (int), ``sample_counts`` (5,) int64 from ``n_samples``
    seeded draws, and the curves ``angles`` (361,), ``soft_curve`` and
    ``argmax_curve`` (361,) over a full turn.
    """
    require_finite_number("angle", angle)
    require_finite_number("length", length, low=0.0, include_low=False)
    require_int_in("n_samples", n_samples, 1, 100_000)
    require_int_in("seed", seed, 0, 2**63 - 1)
    keys, values = circle_keys()
    query = angle_query(angle, length)
    soft, weights = attention(query[None], keys, values, score=dot_score)
    hard, index = hard_attention(query[None], keys, values, score=dot_score)
    repeated = query.expand(n_samples, 2)
    _, sampled = hard_attention(
        repeated,
        keys,
        values,
        score=dot_score,
        mode="sample",
        generator=seeded_generator(seed),
    )
    angles = torch.arange(0.0, 361.0, dtype=torch.float64)
    soft_curve, _ = attention(
        angle_query(angles, length), keys, values, score=dot_score
    )
    argmax_curve, _ = hard_attention(
        angle_query(angles, length), keys, values, score=dot_score
    )
    return {
        "angle": angle,
        "length": length,
        "query": query,
        "keys": keys,
        "values": values.squeeze(-1),
        "weights": weights[0],
        "soft_output": soft.item(),
        "argmax_output": hard.item(),
        "argmax_index": index.item(),
        "sample_counts": torch.bincount(sampled, minlength=len(keys)),
        "angles": angles,
        "soft_curve": soft_curve.squeeze(-1),
        "argmax_curve": argmax_curve.squeeze(-1),
    }


@draws_view
def plot_soft_hard(view: dict):
    """The keys and the query (left), outputs over a full turn (middle),
    weights vs samples (right).

    The keys and values are the fixed ``circle_keys``; the limits are fixed too
    (the argmax curve always runs over all five values, 1 to 5, and weights and
    frequencies lie in [0, 1]).
    """
    fig, (geo, curve, bars) = plt.subplots(
        1, 3, figsize=(9.5, 3.4), gridspec_kw={"width_ratios": [1, 1.4, 1.2]}
    )
    circle = torch.linspace(0, 2 * math.pi, 200)
    geo.plot(circle.cos().numpy(), circle.sin().numpy(), color="0.85")
    keys, values = view["keys"], view["values"]
    geo.scatter(
        keys[:, 0].numpy(), keys[:, 1].numpy(), s=20, color="tab:red", zorder=3
    )
    # Labels far enough out that a key's dot, however large, never covers its
    # label.
    for (x, y), v in zip(keys.tolist(), values.tolist()):
        geo.annotate(
            f"v={v:g}",
            (1.4 * x, 1.4 * y),
            ha="center",
            va="center",
            fontsize=9,
        )
    geo.arrow(0, 0, 0.8, 0, width=0.03, color="tab:blue")
    geo.set_xlim(-1.6, 1.6)
    geo.set_ylim(-1.6, 1.6)
    geo.set_aspect("equal")
    geo.axis("off")
    geo.spines[:].set_visible(
        False
    )  # axis("off") hides them in a full draw only, not when blitted
    geo.set_title(" ", fontsize=10)
    curve.plot([], [], label="soft (expectation)")
    curve.plot([], [], label="hard (argmax)")
    curve.axvline(view["angle"], color="k", lw=0.8)
    curve.set_xlim(-18, 378)  # 0 to 360 degrees with a 5% margin
    curve.set_ylim(min(KEY_VALUES) - 0.2, max(KEY_VALUES) + 0.2)
    curve.set_xlabel("query angle (degrees)")
    curve.set_ylabel("output")
    curve.set_title(" ", fontsize=10)
    curve.legend(fontsize=9)
    positions = torch.arange(len(values), dtype=torch.float64).numpy()
    zeros = [0.0] * len(values)
    bars.bar(positions - 0.2, zeros, width=0.4, label="weights α")
    bars.bar(positions + 0.2, zeros, width=0.4, label="samples")
    bars.set_xticks(
        positions.tolist(), labels=[f"{v:g}" for v in values.tolist()]
    )
    bars.set_xlabel("value of the key")
    bars.set_ylim(0, 1)
    bars.set_title("weights vs sampled frequencies", fontsize=10)
    bars.legend(fontsize=9)
    # Fixed margins: tight_layout would draw the whole figure once just to
    # measure it.
    fig.subplots_adjust(
        left=0.01, right=0.99, bottom=0.16, top=0.9, wspace=0.25
    )
    update_soft_hard_figure(fig, view)
    return fig


@draws_view
def update_soft_hard_figure(fig, view: dict) -> list:
    """Show ``view`` in a figure made by ``plot_soft_hard``; returns the
    artists that changed.

    Changed: the key dots' sizes (they grow with the weights), the query arrow,
    the curves and the line at the current angle, both sets of bars, two titles
    and the two legends (listed: a curve, the line or a bar may cross them; the
    right one's label gives the number of samples).
    """
    geo, curve, bars = fig.axes
    (key_dots,) = geo.collections
    key_dots.set_sizes((300 * view["weights"] + 20).numpy())
    (query_arrow,) = geo.patches
    direction = view["query"] / view["query"].norm()
    query_arrow.set_data(
        dx=0.8 * direction[0].item(), dy=0.8 * direction[1].item()
    )
    geo.title.set_text(f"query at {view['angle']:.0f}°")
    soft_line, argmax_line, current_angle = curve.lines
    soft_line.set_data(view["angles"].numpy(), view["soft_curve"].numpy())
    argmax_line.set_data(view["angles"].numpy(), view["argmax_curve"].numpy())
    current_angle.set_xdata([view["angle"], view["angle"]])
    curve.title.set_text(
        f"soft {view['soft_output']:.2f}, argmax {view['argmax_output']:.0f}"
    )
    weight_bars, sample_bars = bars.containers
    counts = view["sample_counts"]
    for bar, height in zip(weight_bars, view["weights"].tolist()):
        bar.set_height(height)
    for bar, height in zip(sample_bars, (counts / counts.sum()).tolist()):
        bar.set_height(height)
    bars_legend = bars.get_legend()
    bars_legend.get_texts()[1].set_text(f"{int(counts.sum())} samples")
    return [
        key_dots,
        query_arrow,
        geo.title,
        soft_line,
        argmax_line,
        current_angle,
        curve.title,
        curve.get_legend(),
        *weight_bars,
        *sample_bars,
        bars_legend,
    ]


def soft_hard_explorer(angle: float = 60.0, length: float = 3.0):
    """Sliders for the query's angle and length; redraws geometry, outputs
    and samples."""
    import ipywidgets as widgets

    controls = {
        "angle": widgets.FloatSlider(
            value=angle, min=0, max=360, step=5, description="angle °"
        ),
        "length": widgets.FloatSlider(
            value=length,
            min=0.5,
            max=10,
            step=0.5,
            description="|q|",
            continuous_update=False,
        ),
    }
    frames = {
        "angle": Choices(
            "angle °", [(f"{a:.0f}", a) for a in FRAME_ANGLES], value=angle
        ),
        "length": Choices("|q|", list(FRAME_LENGTHS), value=length),
    }
    return live_explorer(
        controls,
        soft_hard_view,
        plot_soft_hard,
        update_soft_hard_figure,
        frames=frames,
    )
