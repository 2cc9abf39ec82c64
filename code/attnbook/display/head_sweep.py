"""Chapter 4's figure of the head sweep: answers right against the number of
heads at a fixed width, for each trained model whole and without the head
that matters most."""

import matplotlib.pyplot as plt

from .._checks import require_int


def draw_head_sweep(table: dict, embed_dim: int = 32):
    """table: num_heads -> [(answers right, without its most important head),
    one pair per seed] (``experiments.head_count.sweep_table``). Returns the
    figure: one dot per seed, a line through the means, one x tick per head
    count labelled with d_k = embed_dim / h."""
    if not isinstance(table, dict) or not table:
        raise TypeError(
            "table must be sweep_table()'s non-empty dict, got "
            f"{type(table).__name__}"
        )
    require_int("embed_dim", embed_dim)
    counts = sorted(table)
    fig, ax = plt.subplots(figsize=(6.2, 3.2))
    series = (
        (0, "C0", "o", "whole model"),
        (1, "C3", "v", "without its most important head"),
    )
    for column, colour, marker, label in series:
        for h in counts:
            values = [100 * run[column] for run in table[h]]
            ax.scatter(
                [h] * len(values), values, color=colour, marker=marker,
                s=18, alpha=0.6, linewidths=0,
            )  # fmt: skip
        means = [
            100 * sum(run[column] for run in table[h]) / len(table[h])
            for h in counts
        ]
        ax.plot(counts, means, color=colour, label=label, lw=1.5)
    ax.set_xscale("log", base=2)
    ax.set_xticks(counts)
    ax.set_xticklabels([f"{h}\n$d_k$={embed_dim // h}" for h in counts])
    ax.set_xlabel(f"heads h (head size $d_k$ = {embed_dim} / h)")
    ax.set_ylabel("answers right (%)")
    ax.set_ylim(0, 104)
    ax.grid(alpha=0.3)
    ax.legend(loc="lower right", fontsize=9)
    fig.tight_layout()
    return fig
