"""Chapter 4 explorer: number of heads and a chosen head -> per-head attention heat-maps.

The example is fixed: self-attention over a short sentence whose words get seeded
random embeddings (a repeated word gets the same embedding; there are no positions)
and one seeded, untrained set of projection weights. The projections have the same
shape for every number of heads, so moving the "heads" control only regroups the
same dimensions into more, smaller heads. Each update reuses cached weights and
redraws only the images, the frame, the head names and the titles of one figure.
"""

from functools import lru_cache

import matplotlib.pyplot as plt
import matplotlib.transforms as transforms
import torch

from ..multihead import MultiHeadAttention
from ._live import live_explorer

SENTENCE = ("the", "cat", "sat", "on", "the", "mat", "because", "it", "was", "warm")
EMBED_DIM = 24
HEAD_CHOICES = (1, 2, 3, 4, 6, 8)
EMBED_SCALE = 2.0  # standard deviation of the embeddings: with 1.0 a random model attends almost uniformly


def sentence_embeddings(seed: int = 0, embed_dim: int = EMBED_DIM) -> torch.Tensor:
    """Seeded embeddings of ``SENTENCE``, shape (len(SENTENCE), embed_dim); same word, same row.

    Entries are N(0, EMBED_SCALE^2), drawn from a ``torch.Generator`` seeded with ``seed``.
    """
    vocabulary = sorted(set(SENTENCE))
    generator = torch.Generator().manual_seed(seed)
    table = EMBED_SCALE * torch.randn(len(vocabulary), embed_dim, generator=generator)
    return table[[vocabulary.index(word) for word in SENTENCE]]


def _example_module(num_heads: int, seed: int) -> MultiHeadAttention:
    """The example's module with ``num_heads`` heads; its parameters depend on ``seed`` only.

    The parameters are drawn for one head and loaded into ``num_heads`` heads (the shapes do not
    depend on the number of heads), with the caller's global RNG left untouched.
    """
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        parameters = MultiHeadAttention(EMBED_DIM, 1).state_dict()
    module = MultiHeadAttention(EMBED_DIM, num_heads)
    module.load_state_dict(parameters)
    return module.eval()


@lru_cache(maxsize=16)
def _example_attention(num_heads: int, seed: int) -> tuple:
    """Per-head weights (num_heads, n, n) and mean row entropies (num_heads,), computed once per setting."""
    x = sentence_embeddings(seed, EMBED_DIM)
    with torch.no_grad():
        _, weights = _example_module(num_heads, seed)(x, x, x)  # unbatched input: no batch axis
    entropy = -(weights * weights.clamp_min(1e-12).log()).sum(dim=-1).mean(dim=-1)
    return weights, entropy


def multihead_view(num_heads: int = 4, head: int = 0, seed: int = 0) -> dict:
    """Everything the explorer shows for one setting of its controls.

    Self-attention over ``SENTENCE`` with ``num_heads`` heads (must divide EMBED_DIM = 24).
    Returns a dict with ``tokens`` (n,), ``weights`` (num_heads, n, n), the chosen head's
    ``head_weights`` (n, n), its ``top_key`` per query (n,) int, ``entropy`` (num_heads,),
    the mean entropy (nats) of each head's rows, and ``num_heads``, ``head``, ``head_dim``.
    """
    if isinstance(num_heads, bool) or not isinstance(num_heads, int) or num_heads < 1 or EMBED_DIM % num_heads:
        raise ValueError(f"num_heads must divide the embedding size {EMBED_DIM}, got {num_heads!r}")
    if isinstance(head, bool) or not isinstance(head, int) or not 0 <= head < num_heads:
        raise ValueError(f"head must be in [0, {num_heads - 1}] for {num_heads} heads, got {head!r}")
    weights, entropy = (t.clone() for t in _example_attention(num_heads, seed))  # copies: callers may modify them
    return {
        "tokens": SENTENCE,
        "num_heads": num_heads,
        "head": head,
        "head_dim": EMBED_DIM // num_heads,
        "weights": weights,
        "head_weights": weights[head],
        "top_key": weights[head].argmax(dim=-1),
        "entropy": entropy,
    }


def _head_strip(weights: torch.Tensor) -> torch.Tensor:
    """(num_heads, n, n) -> (n, num_heads * (n + 1) - 1): heads side by side, a blank (NaN) column between."""
    num_heads, n, _ = weights.shape
    strip = torch.full((n, num_heads * (n + 1) - 1), float("nan"))
    for h in range(num_heads):
        strip[:, h * (n + 1) : h * (n + 1) + n] = weights[h]
    return strip


def _strip_fraction(column: float, num_heads: int, n: int) -> float:
    """Strip column coordinate (column c spans c - 0.5 .. c + 0.5) -> fraction of the strip's width."""
    return (column + 0.5) / (num_heads * (n + 1) - 1)


def plot_multihead(view: dict):
    """All heads side by side (top strip, chosen head framed) and the chosen head, large, with its tokens.

    The strip always spans the top axes: its x axis runs from 0 to 1 (a fraction of the
    strip) whatever the number of heads, and the head names under it are text objects
    moved by ``update_multihead_figure``, so changing the number of heads never redraws
    the axes. Colours run from 0 to 1 (weights are probabilities) for every setting.
    """
    tokens = view["tokens"]
    n = len(tokens)
    fig = plt.figure(figsize=(7.5, 6.0))
    top = fig.add_axes((0.12, 0.79, 0.8, 0.14))
    main = fig.add_axes((0.12, 0.14, 0.72, 0.54))
    colour_axes = fig.add_axes((0.87, 0.14, 0.025, 0.54))
    top.imshow(torch.zeros(n, n).numpy(), cmap="Reds", vmin=0, vmax=1, aspect="auto", extent=(0, 1, n - 0.5, -0.5))
    top.add_patch(plt.Rectangle((0, -0.5), 0, n, fill=False, edgecolor="tab:blue", linewidth=2.5))
    top.set_xlim(0, 1)
    top.set_xticks([])
    top.set_yticks([])
    under_strip = transforms.blended_transform_factory(top.transData, top.transAxes)
    for h in range(max(HEAD_CHOICES)):  # one name per possible head; those beyond num_heads are hidden
        top.text(0, -0.06, f"head {h}", ha="center", va="top", fontsize=8, transform=under_strip)
    head_image = main.imshow(torch.zeros(n, n).numpy(), cmap="Reds", vmin=0, vmax=1, aspect="auto")
    main.set_xticks(range(n), labels=tokens, rotation=45, fontsize=8)
    main.set_yticks(range(n), labels=tokens, fontsize=8)
    main.set_xlabel("keys")
    main.set_ylabel("queries")
    fig.colorbar(head_image, cax=colour_axes)
    update_multihead_figure(fig, view)
    return fig


def update_multihead_figure(fig, view: dict) -> list:
    """Show ``view`` in a figure made by ``plot_multihead``; returns the artists that changed.

    The strip image gets the new heads (n, num_heads * (n + 1) - 1) stretched over the
    fixed strip; the frame and the head names move to the new head columns; the large
    map shows the chosen head (n, n). Limits, ticks and the colour bar stay as they are.
    The list holds the same artists, in the same order, for every view.
    """
    top, main, _ = fig.axes
    weights, head = view["weights"], view["head"]
    num_heads, n = weights.shape[0], weights.shape[-1]
    (strip_image,) = top.images
    strip_image.set_data(_head_strip(weights).numpy())
    (frame,) = top.patches
    first_column = head * (n + 1)
    frame.set_x(_strip_fraction(first_column - 0.5, num_heads, n))
    frame.set_width(_strip_fraction(first_column + n - 0.5, num_heads, n) - frame.get_x())
    for h, name in enumerate(top.texts):
        name.set_x(_strip_fraction(h * (n + 1) + (n - 1) / 2, num_heads, n))
        name.set_visible(h < num_heads)
    plural = "s" if num_heads > 1 else ""
    top.set_title(f"{num_heads} head{plural} of d_head = {view['head_dim']} (rows: queries, columns: keys)", fontsize=9)
    (head_image,) = main.images
    head_image.set_data(view["head_weights"].numpy())
    main.set_title(f"head {head}: mean row entropy {view['entropy'][head]:.2f} nats", fontsize=9)
    return [strip_image, frame, *top.texts, top.title, head_image, main.title]


def multihead_explorer(num_heads: int = 4, head: int = 0):
    """A heads selector and a head slider; redraws the per-head attention heat-maps."""
    import ipywidgets as widgets

    heads = widgets.Dropdown(options=HEAD_CHOICES, value=num_heads, description="heads")
    chosen = widgets.IntSlider(value=head, min=0, max=num_heads - 1, description="show head", continuous_update=False)

    def fit_slider(change):  # registered before the redraw: the slider is clamped first
        chosen.max = change["new"] - 1

    heads.observe(fit_slider, names="value")
    controls = {"num_heads": heads, "head": chosen}
    return live_explorer(controls, multihead_view, plot_multihead, update_multihead_figure)
