"""Chapter 7's timing figure: forward time of one layer of each kind against
the sequence length, on log-log axes, with reference lines of slope 1 and 2."""

import matplotlib.pyplot as plt
import torch

from .._checks import require_finite_number, require_int_in


def plot_layer_times(lengths, times: dict, fit_from: int = 0):
    """times: {layer name: [seconds per length]} as ``time_layers`` returns.

    One marked line per layer; a dotted line of slope 1 through the RNN's
    (or, without one, the first layer's) last point and a dashed line of
    slope 2 through self-attention's (or the last layer's), both drawn from
    ``lengths[fit_from]`` on. Returns the figure.
    """
    _check_layer_times(lengths, times, fit_from)
    names = list(times)
    fig, ax = plt.subplots(figsize=(6, 3.8))
    for name, marker in zip(names, "os^v"):
        ax.loglog(lengths, times[name], marker=marker, label=name)
    n_ref = torch.tensor(lengths[fit_from:], dtype=torch.float64)
    anchors = {
        1: times.get("RNN", times[names[0]])[-1],
        2: times.get("self-attention", times[names[-1]])[-1],
    }
    for power, style in ((1, ":"), (2, "--")):
        line = anchors[power] * (n_ref / lengths[-1]) ** power
        ax.loglog(n_ref, line, "k" + style, lw=1, label=f"slope {power}")
    ax.set_xlabel("sequence length n")
    ax.set_ylabel("processor time per forward pass (s)")
    ax.legend(fontsize=8)
    return fig


def _check_layer_times(lengths, times, fit_from) -> None:
    """lengths: a list of positive numbers; times: {name: a list of as many
    positive numbers}; fit_from: an index of lengths."""
    if not isinstance(lengths, (list, tuple)) or not lengths:
        raise TypeError(
            f"lengths must be a non-empty list of numbers, got {lengths!r:.40}"
        )
    for n in lengths:
        require_finite_number("each of lengths", n, low=0.0, include_low=False)
    if not isinstance(times, dict) or not times:
        raise TypeError(
            "times must be a non-empty dict {layer name: [seconds per "
            f"length]}}, got {times!r:.40}"
        )
    for name, seconds in times.items():
        if not isinstance(seconds, (list, tuple)) or len(seconds) != len(
            lengths
        ):
            raise ValueError(
                f"times[{name!r}] must hold one time per length "
                f"({len(lengths)}), got {seconds!r:.40}"
            )
        for t in seconds:
            require_finite_number(
                f"each of times[{name!r}]", t, low=0.0, include_low=False
            )
    require_int_in("fit_from", fit_from, 0, len(lengths) - 1)
