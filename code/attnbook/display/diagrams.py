"""Diagrams drawn with matplotlib: the pictures that printed shapes cannot
replace.

Each function draws one diagram on a new figure and returns the figure; the
chapters show it with a numbered caption. Plotting layer: no tensor math lives
here.
"""

import matplotlib.pyplot as plt

from .._checks import is_finite_number
from .figures import require_axes, require_figsize

# --- chapter 4: multi-head attention (split and merge) ---

_HEAD_COLOURS = (
    "tab:blue",
    "tab:orange",
    "tab:green",
    "tab:purple",
    "tab:red",
    "tab:brown",
    "tab:pink",
    "tab:olive",
)


def box(ax, x, y, width, height, text, colour="white", fontsize=9, alpha=1.0):
    """A rounded box centred at (x, y) with centred text; returns the text
    artist."""
    from matplotlib.patches import FancyBboxPatch

    ax.add_patch(
        FancyBboxPatch(
            (x - width / 2, y - height / 2),
            width,
            height,
            boxstyle="round,pad=0.02",
            facecolor=colour,
            edgecolor="0.25",
            linewidth=1.0,
            alpha=alpha,
        )
    )
    return ax.text(x, y, text, ha="center", va="center", fontsize=fontsize)


def arrow(ax, start, end):
    ax.annotate(
        "",
        xy=end,
        xytext=start,
        arrowprops={"arrowstyle": "->", "color": "0.3", "linewidth": 1.0},
    )


def _is_finite_real(value) -> bool:
    """A finite real number, also a numpy or 0-d tensor one (not a bool)."""
    if isinstance(value, (bool, str)):
        return False
    try:
        return is_finite_number(float(value))
    except (TypeError, ValueError, OverflowError, RuntimeError):
        return False


def weight_line(ax, start, end, weight: float):
    """A line from ``start`` to ``end`` (x, y) as wide as an attention
    weight: how the diagrams show where the weighted average draws from."""
    require_axes(ax)
    for name, point in (("start", start), ("end", end)):
        if not (
            isinstance(point, (tuple, list))
            and len(point) == 2
            and all(_is_finite_real(c) for c in point)
        ):
            raise ValueError(
                f"{name} must be a point (x, y) of finite numbers, got "
                f"{point!r:.40}"
            )
    if not _is_finite_real(weight) or not 0 <= float(weight) <= 1:
        raise ValueError(f"weight must be in [0, 1], got {weight!r:.40}")
    ax.plot(
        [start[0], end[0]],
        [start[1], end[1]],
        color="tab:red",
        linewidth=0.5 + 6 * weight,
        alpha=0.8,
        solid_capstyle="round",
        zorder=1,
    )


def _feature_strip(ax, x, y, width, height, num_heads, alpha=0.55):
    """A row of ``num_heads`` coloured blocks: the d_model features cut into
    heads of d_k."""
    from matplotlib.patches import Rectangle

    block = width / num_heads
    for i in range(num_heads):
        ax.add_patch(
            Rectangle(
                (x - width / 2 + i * block, y - height / 2),
                block,
                height,
                facecolor=_HEAD_COLOURS[i % len(_HEAD_COLOURS)],
                edgecolor="0.25",
                alpha=alpha,
            )
        )


def draw_multihead(num_heads: int = 3, figsize=(12, 4.6)):
    """The multi-head split and merge, left to right, for ``num_heads`` heads
    (1 to 8).

    X (n x d_model) -> one product each, X W^Q, X W^K, X W^V (n x d_model),
    whose columns are cut into h blocks of d_k = d_model / h -> per head i the
    blocks Q_i, K_i, V_i (n x d_k) -> per head softmax(Q_i K_i^T / sqrt(d_k))
    V_i (n x d_k) -> concatenation of the blocks (n x h d_k = n x d_model) ->
    times W^O (d_model x d_model) -> output (n x d_model). Each head has one
    colour; the strips show which block of d_k columns belongs to which head
    before and after attention. Returns the figure (one axes, no ticks).
    """
    if (
        isinstance(num_heads, bool)
        or not isinstance(num_heads, int)
        or not 1 <= num_heads <= len(_HEAD_COLOURS)
    ):
        raise ValueError(
            f"num_heads must be an integer from 1 to {len(_HEAD_COLOURS)}, got"
            f" {num_heads!r}"
        )
    fig, ax = plt.subplots(figsize=require_figsize(figsize))
    ax.set_xlim(0, 12.4)
    ax.set_ylim(0, 4.6)
    ax.axis("off")
    rows = [
        4.2 * (num_heads - i) / (num_heads + 1) + 0.2 for i in range(num_heads)
    ]  # one row per head, top down
    middle = 2.3

    box(
        ax,
        0.65,
        middle,
        1.05,
        0.8,
        "input $X$\n$n \\times d_{\\mathrm{model}}$",
        fontsize=10,
    )
    arrow(ax, (1.2, middle), (1.6, middle))
    box(
        ax,
        2.45,
        middle,
        1.55,
        0.95,
        "$XW^Q,\\ XW^K,\\ XW^V$\neach $n \\times d_{\\mathrm{model}}$",
        fontsize=9.25,
    )
    _feature_strip(ax, 2.45, middle - 0.68, 1.45, 0.16, num_heads)
    ax.text(
        2.45,
        middle - 0.85,
        "columns cut into\n$h$ blocks of $d_k$",
        ha="center",
        va="top",
        fontsize=8.75,
        color="0.3",
    )
    for i, y in enumerate(rows):
        colour = _HEAD_COLOURS[i % len(_HEAD_COLOURS)]
        arrow(ax, (3.25, middle), (3.85, y))
        box(
            ax,
            4.55,
            y,
            1.3,
            0.55,
            f"head {i + 1}\n$Q_{i + 1}, K_{i + 1}, V_{i + 1}$",
            colour=colour,
            fontsize=9.25,
            alpha=0.35,
        )
        arrow(ax, (5.25, y), (5.65, y))
        box(
            ax,
            6.75,
            y,
            2.05,
            0.55,
            f"$\\mathrm{{softmax}}\\!\\left(Q_{i + 1} K_{i + 1}^\\top / "
            f"\\sqrt{{d_k}}\\right) V_{i + 1}$",
            colour=colour,
            fontsize=9.25,
            alpha=0.35,
        )
        arrow(ax, (7.82, y), (8.45, middle))
    ax.text(
        4.55,
        4.55,
        "split: $h$ heads,\neach $n \\times d_k$",
        ha="center",
        va="top",
        fontsize=9.25,
    )
    ax.text(
        6.75,
        4.55,
        "attend, every head on its own;\neach output $n \\times d_k$",
        ha="center",
        va="top",
        fontsize=9.25,
    )
    box(ax, 9.0, middle, 1.0, 0.8, "concat\n$n \\times h d_k$", fontsize=10)
    _feature_strip(ax, 9.0, middle - 0.6, 0.95, 0.16, num_heads)
    arrow(ax, (9.52, middle), (9.9, middle))
    box(
        ax,
        10.4,
        middle,
        0.85,
        0.95,
        "$\\cdot\\, W^O$\n$d_{\\mathrm{model}}$\n$\\times d_{\\mathrm{model}}"
        "$",
        fontsize=9.25,
    )
    arrow(ax, (10.85, middle), (11.2, middle))
    ax.text(
        11.75,
        middle,
        "output\n$n \\times d_{\\mathrm{model}}$",
        ha="center",
        va="center",
        fontsize=9.25,
    )
    ax.text(
        12.3,
        0.05,
        f"$h = {num_heads}$ heads, $d_k = d_\\mathrm{{model}} / h$; rows are "
        "tokens",
        ha="right",
        va="bottom",
        fontsize=9.25,
        color="0.3",
    )
    return fig


# --- chapters 7 and 9: CNN / RNN / self-attention connectivity; the
# encoder block


def _path_node(ax, x, y, label, highlight=False):
    """A token node (circle) with a label inside; red when it lies on the
    highlighted path."""
    from matplotlib.patches import Circle

    ax.add_patch(
        Circle(
            (x, y),
            0.28,
            facecolor="mistyrose" if highlight else "white",
            edgecolor="tab:red" if highlight else "0.3",
            linewidth=1.4 if highlight else 0.9,
            zorder=3,
        )
    )
    ax.text(x, y, label, ha="center", va="center", fontsize=11, zorder=4)


def _edge(ax, start, end, highlight=False):
    """A line from ``start`` to ``end`` (x, y): grey, or thick red on the
    highlighted path."""
    ax.plot(
        [start[0], end[0]],
        [start[1], end[1]],
        color="tab:red" if highlight else "0.75",
        linewidth=2.0 if highlight else 0.7,
        zorder=2 if highlight else 1,
    )


def draw_connectivity(n: int = 5, kernel_size: int = 3, figsize=(11, 4.2)):
    """Which inputs each output reads, in a stack of convolutions, an RNN and
    one self-attention layer.

    Three panels, inputs x_1..x_n at the bottom, positions left to right
    (1-based). CNN: as many layers of a centred kernel of odd size
    ``kernel_size`` as it takes for the last output to see x_1
    (``complexity.longest_path``); each node reads the ``kernel_size`` nodes
    below it. RNN: the state z_t reads x_t and z_{t-1}. Self-attention: every
    output reads every input. In each panel the shortest route from x_1 to the
    last output is red, and the title gives its length in layer applications.
    Returns the figure (three axes, no ticks).
    """
    from ..experiments.complexity import longest_path

    paths = longest_path(n, kernel_size)
    if n > 8:
        raise ValueError(f"n must be at most 8 to stay readable, got {n}")
    reach = (kernel_size - 1) // 2
    fig, axes = plt.subplots(1, 3, figsize=require_figsize(figsize))
    xs = list(range(1, n + 1))

    # CNN: layer 0 is the input; the red route climbs from x_1 by `reach`
    # positions per layer.
    ax = axes[0]
    depth = paths["CNN"]
    route = [min(1 + layer * reach, n) for layer in range(depth + 1)]
    route[-1] = n
    for layer in range(1, depth + 1):
        for i in xs:
            for j in range(max(1, i - reach), min(n, i + reach) + 1):
                _edge(
                    ax,
                    (j, layer - 1),
                    (i, layer),
                    route[layer] == i and route[layer - 1] == j,
                )
    for layer in range(depth + 1):
        for i in xs:
            label = f"$x_{i}$" if layer == 0 else ""
            _path_node(ax, i, layer, label, route[layer] == i)
        if layer:
            ax.text(
                0.35,
                layer,
                f"layer {layer}",
                ha="right",
                va="center",
                fontsize=10.5,
                color="0.3",
            )
    ax.set_title(
        f"CNN, kernel {kernel_size}: $x_1$ reaches position {n}\nafter "
        f"{depth} layers",
        fontsize=11.5,
    )

    # RNN: inputs at the bottom, states z_1..z_n above; z_t reads x_t and
    # z_{t-1}.
    ax = axes[1]
    top = max(depth, 1)  # draw the one-layer panels as tall as the CNN's stack
    for i in xs:
        _edge(ax, (i, 0), (i, top), i == 1)
        if i > 1:
            _edge(ax, (i - 1, top), (i, top), True)
    for i in xs:
        _path_node(ax, i, 0, f"$x_{i}$", i == 1)
        _path_node(ax, i, top, f"$z_{i}$", True)
    ax.set_title(
        f"RNN: $x_1$ reaches $z_{n}$ after {paths['RNN']} steps,\none after "
        "another",
        fontsize=11.5,
    )

    # Self-attention: every output reads every input.
    ax = axes[2]
    for i in xs:
        for j in xs:
            _edge(ax, (j, 0), (i, top), j == 1 and i == n)
    for i in xs:
        _path_node(ax, i, 0, f"$x_{i}$", i == 1)
        _path_node(ax, i, top, f"$y_{i}$", i == n)
    ax.set_title(
        f"self-attention: $x_1$ reaches $y_{n}$\nin {paths['self-attention']}"
        " layer",
        fontsize=11.5,
    )

    for ax in axes:
        ax.set_ylim(-0.6, top + 0.6)
        ax.set_xlim(-0.4, n + 0.6)
        ax.set_aspect("equal")
        ax.set_xticks([])
        ax.set_yticks([])
        for spine in ax.spines.values():
            spine.set_visible(False)
        ax.set_xlabel("position", fontsize=10.5)
    fig.subplots_adjust(
        left=0.02, right=0.99, bottom=0.08, top=0.86, wspace=0.12
    )
    return fig


def stage_box(ax, y, text, width=4.2, height=0.8, colour="white", x=5.0):
    """A rounded box of the encoder diagram centred at (x, y); returns the
    text artist."""
    from matplotlib.patches import FancyBboxPatch

    ax.add_patch(
        FancyBboxPatch(
            (x - width / 2, y - height / 2),
            width,
            height,
            boxstyle="round,pad=0.05",
            facecolor=colour,
            edgecolor="0.25",
            linewidth=1.0,
            zorder=2,
        )
    )
    return ax.text(x, y, text, ha="center", va="center", fontsize=9, zorder=3)


def up_arrow(ax, start, end):
    ax.annotate(
        "",
        xy=end,
        xytext=start,
        arrowprops={
            "arrowstyle": "-|>",
            "color": "0.25",
            "linewidth": 1.0,
            "shrinkA": 0,
            "shrinkB": 0,
        },
        zorder=1,
    )


STAGE_COLOURS = {
    "attention": "#fde2c8",
    "ffn": "#cfe3f5",
    "norm": "#fff4b8",
    "add": "white",
}


def draw_encoder_block(placement: str = "post-LN", figsize=(5.2, 6.6)):
    """The Transformer encoder, bottom up: embedding + positions, then one
    block repeated N times.

    placement "post-LN" (the original Transformer, BERT; this chapter's block):
    multi-head self-attention -> add & norm -> feed-forward network -> add &
    norm. placement "pre-LN": LayerNorm -> multi-head self-attention -> add ->
    LayerNorm -> feed-forward network -> add, and one final LayerNorm after the
    N blocks. Residual connections are drawn as lines round the side; the
    padding mask (B, 1, 1, n), True = keep, enters the attention box. Returns
    the figure (one axes).
    """
    if placement not in ("post-LN", "pre-LN"):
        raise ValueError(
            f"placement must be 'post-LN' or 'pre-LN', got {placement!r}"
        )
    if placement == "post-LN":
        stages = [
            ("multi-head self-attention", "attention"),
            ("add & norm", "norm"),
            ("feed-forward network", "ffn"),
            ("add & norm", "norm"),
        ]
        residuals = [
            (0, 1),
            (2, 3),
        ]  # (stage whose input branches off, stage that adds it)
    else:
        stages = [
            ("LayerNorm", "norm"),
            ("multi-head self-attention", "attention"),
            ("add", "add"),
            ("LayerNorm", "norm"),
            ("feed-forward network", "ffn"),
            ("add", "add"),
        ]
        residuals = [(0, 2), (3, 5)]
    step = 1.35
    block_bottom = 3.9
    ys = [block_bottom + 0.9 + step * i for i in range(len(stages))]
    block_top = ys[-1] + 0.8
    final = placement == "pre-LN"
    top = block_top + (2.4 if final else 1.3)
    fig, ax = plt.subplots(figsize=require_figsize(figsize))
    ax.set_xlim(0, 10)
    ax.set_ylim(-0.2, top + 0.3)
    ax.axis("off")

    ax.text(
        5.0, 0.2, "token ids $(B, n)$", ha="center", va="center", fontsize=9
    )
    up_arrow(ax, (5.0, 0.45), (5.0, 1.0))
    stage_box(ax, 1.4, "embedding lookup", colour="#e4e4e4")
    up_arrow(ax, (5.0, 1.8), (5.0, 2.55))
    from matplotlib.patches import Circle, FancyBboxPatch

    ax.add_patch(
        Circle((5.0, 2.85), 0.3, facecolor="white", edgecolor="0.25", zorder=2)
    )
    ax.text(5.0, 2.85, "+", ha="center", va="center", fontsize=12, zorder=3)
    ax.text(
        1.0,
        2.85,
        "positional\nencoding",
        ha="center",
        va="center",
        fontsize=8.5,
    )
    up_arrow(ax, (1.9, 2.85), (4.7, 2.85))
    up_arrow(ax, (5.0, 3.15), (5.0, ys[0] - 0.4))

    ax.add_patch(
        FancyBboxPatch(
            (2.2, block_bottom),
            5.6,
            block_top - block_bottom,
            boxstyle="round,pad=0.1",
            facecolor="0.96",
            edgecolor="0.5",
            linewidth=1.0,
            linestyle="--",
            zorder=0,
        )
    )
    ax.text(
        8.1,
        (block_bottom + block_top) / 2,
        "$\\times N$",
        ha="left",
        va="center",
        fontsize=12,
    )
    ax.text(
        2.3,
        block_top - 0.05,
        "encoder block",
        ha="left",
        va="top",
        fontsize=7.5,
        color="0.35",
    )

    for i, ((label, kind), y) in enumerate(zip(stages, ys)):
        if kind == "add":
            ax.add_patch(
                Circle(
                    (5.0, y),
                    0.3,
                    facecolor="white",
                    edgecolor="0.25",
                    zorder=2,
                )
            )
            ax.text(
                5.0, y, "+", ha="center", va="center", fontsize=12, zorder=3
            )
            half = 0.3
        else:
            stage_box(ax, y, label, colour=STAGE_COLOURS[kind])
            half = 0.45
        if i + 1 < len(stages):
            next_half = 0.3 if stages[i + 1][1] == "add" else 0.45
            up_arrow(ax, (5.0, y + half), (5.0, ys[i + 1] - next_half))
        if kind == "attention":
            ax.text(
                0.2,
                y - 0.55,
                "padding mask\n$(B, 1, 1, n)$",
                ha="left",
                va="center",
                fontsize=7.5,
                color="0.3",
            )
            up_arrow(ax, (1.5, y - 0.3), (2.85, y - 0.1))
    rail = 7.55
    for source, target in residuals:
        y_from = ys[source] - 0.6
        ax.plot(
            [5.0, rail, rail],
            [y_from, y_from, ys[target]],
            color="0.25",
            linewidth=1.0,
            zorder=1,
        )
        end_x = 5.3 if stages[target][1] == "add" else 7.1
        up_arrow(ax, (rail, ys[target]), (end_x, ys[target]))

    out_y = top - 0.2
    last_half = 0.3 if stages[-1][1] == "add" else 0.45
    if final:
        final_y = block_top + 1.0
        up_arrow(ax, (5.0, ys[-1] + last_half), (5.0, final_y - 0.45))
        stage_box(ax, final_y, "final LayerNorm", colour=STAGE_COLOURS["norm"])
        up_arrow(ax, (5.0, final_y + 0.45), (5.0, out_y - 0.25))
    else:
        up_arrow(ax, (5.0, ys[-1] + last_half), (5.0, out_y - 0.25))
    ax.text(
        5.0,
        out_y,
        "hidden states $(B, n, d_{\\mathrm{model}})$",
        ha="center",
        va="center",
        fontsize=9,
    )
    ax.set_title(f"Transformer encoder, {placement}", fontsize=10)
    return fig


# --- chapter 5: one decoder step of Bahdanau attention ---


def draw_bahdanau_step(weights=(0.1, 0.6, 0.2, 0.1), figsize=(6.6, 4.2)):
    """One decoder step t of an encoder-decoder with additive attention.

    Bottom: the inputs x_j and the bidirectional encoder states e_j. The
    previous decoder state s_{t-1} is the query; each e_j gets a weight
    alpha_tj (line width proportional to ``weights``, one per input, summing to
    1); the context c_t = sum_j alpha_tj e_j and the previous output y_{t-1}
    enter the GRU that computes s_t; y_t is predicted from s_t, c_t and
    y_{t-1}.
    """
    if not isinstance(weights, (list, tuple)) or not all(
        is_finite_number(w) for w in weights
    ):
        raise ValueError(f"weights must be numbers, got {weights!r:.60}")
    weights = [float(w) for w in weights]
    if not 1 <= len(weights) <= 6:
        raise ValueError(
            f"the diagram has room for 1 to 6 inputs, got {len(weights)} "
            "weights"
        )
    if (
        any(w != w for w in weights)
        or any(w < 0 for w in weights)
        or abs(sum(weights) - 1) > 1e-6
    ):
        raise ValueError(
            f"weights must be non-negative and sum to 1, got {weights}"
        )
    n = len(weights)
    fig, ax = plt.subplots(figsize=require_figsize(figsize))
    ax.set_xlim(0, 10)
    ax.set_ylim(0, 6.4)
    ax.axis("off")
    xs = [0.9 + 1.5 * j for j in range(n)]
    for j, x in enumerate(xs, start=1):
        ax.text(x, 0.35, f"$x_{j}$", ha="center", va="center", fontsize=10)
        arrow(ax, (x, 0.6), (x, 1.25))
        box(
            ax,
            x,
            1.6,
            0.9,
            0.6,
            f"$\\mathbf{{e}}_{j}$",
            colour="#dbe9f6",
            fontsize=10,
        )
    for left, right in zip(xs, xs[1:]):
        ax.annotate(
            "",
            xy=(right - 0.47, 1.6),
            xytext=(left + 0.47, 1.6),
            arrowprops={"arrowstyle": "<->", "color": "0.3", "linewidth": 1.0},
        )
    ax.text(
        xs[-1] + 0.6,
        1.6,
        "encoder\n(bidirectional GRU)",
        ha="left",
        va="center",
        fontsize=8,
        color="0.3",
    )
    context = (5.4, 3.6)
    for j, (x, w) in enumerate(zip(xs, weights), start=1):
        weight_line(ax, (x, 1.9), (context[0], context[1] - 0.3), w)
        ax.text(
            x - 0.12,
            2.0,
            f"$\\alpha_{{t{j}}}$",
            fontsize=9,
            color="tab:red",
            ha="right",
            va="bottom",
        )
    box(
        ax,
        context[0],
        context[1],
        2.2,
        0.6,
        "$\\mathbf{c}_t = \\sum_j \\alpha_{tj}\\,\\mathbf{e}_j$",
        colour="#fbe3e1",
        fontsize=10,
    )
    query, state = (2.3, 5.0), (8.4, 5.0)
    box(
        ax,
        *query,
        1.0,
        0.6,
        "$\\mathbf{s}_{t-1}$",
        colour="#e6f2e1",
        fontsize=10,
    )
    ax.annotate(
        "",
        xy=(context[0] - 1.1, context[1] + 0.15),
        xytext=(query[0] + 0.3, query[1] - 0.32),
        arrowprops={
            "arrowstyle": "->",
            "color": "tab:green",
            "linewidth": 1.2,
            "linestyle": "--",
        },
    )
    ax.text(
        2.3,
        4.05,
        "query: scores\n$a(\\mathbf{s}_{t-1}, \\mathbf{e}_j)$",
        fontsize=8,
        color="tab:green",
        ha="right",
        va="center",
    )
    box(ax, *state, 1.0, 0.6, "$\\mathbf{s}_t$", colour="#e6f2e1", fontsize=10)
    arrow(ax, (query[0] + 0.52, query[1]), (state[0] - 0.52, state[1]))
    ax.text(
        5.4, 5.15, "GRU", ha="center", va="bottom", fontsize=8, color="0.3"
    )
    arrow(
        ax,
        (context[0] + 1.12, context[1] + 0.1),
        (state[0] - 0.3, state[1] - 0.32),
    )
    ax.text(8.4, 3.3, "$y_{t-1}$", ha="center", va="center", fontsize=10)
    arrow(ax, (8.4, 3.55), (8.4, 4.68))
    arrow(ax, (state[0], state[1] + 0.32), (state[0], 5.85))
    ax.text(8.4, 6.1, "$p(y_t)$", ha="center", va="center", fontsize=10)
    # the output layer also reads c_t and y_{t-1}: W_o [s_t; c_t; y_{t-1}]
    arrow(ax, (context[0] + 0.7, context[1] + 0.32), (8.05, 6.0))
    ax.annotate(
        "",
        xy=(8.75, 6.0),
        xytext=(8.7, 3.3),
        arrowprops={
            "arrowstyle": "->",
            "color": "0.3",
            "linewidth": 1.0,
            "connectionstyle": "arc3,rad=0.45",
        },
    )
    ax.set_title(
        f"decoder step $t$: weights {', '.join(f'{w:.1f}' for w in weights)}",
        fontsize=9,
    )
    return fig
