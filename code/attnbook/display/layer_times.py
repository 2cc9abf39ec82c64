"""Chapter 7's timing figure: forward time of one layer of each kind against
the sequence length, on log-log axes, with reference lines of slope 1 and 2."""

import matplotlib.pyplot as plt
import torch


def plot_layer_times(lengths, times: dict, fit_from: int = 0):
    """times: {layer name: [seconds per length]} as ``time_layers`` returns.

    One marked line per layer; a dotted line of slope 1 through the RNN's
    (or, without one, the first layer's) last point and a dashed line of
    slope 2 through self-attention's (or the last layer's), both drawn from
    ``lengths[fit_from]`` on. Returns the figure.
    """
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
