"""Chapter 4 explorer: number of heads and a chosen head -> per-head attention heat-maps.

The example is fixed: self-attention over a short sentence whose words get seeded
random embeddings (a repeated word gets the same embedding; there are no positions)
and one seeded, untrained set of projection weights. The projections have the same
shape for every number of heads, so moving the "heads" control only regroups the
same dimensions into more, smaller heads. Each update reuses cached weights and
redraws one figure in place, so it stays fast.
"""

from functools import lru_cache

import matplotlib.pyplot as plt
import torch

from ..multihead import MultiHeadAttention
from ._live import figure_explorer

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


class _HeadsFigure:
    """The explorer's figure, built once; ``update(view)`` redraws it in place (no new axes: fast)."""

    def __init__(self, tokens=SENTENCE):
        n = len(tokens)
        self.figure = plt.figure(figsize=(7.5, 6.0))
        self.top = self.figure.add_axes((0.12, 0.79, 0.8, 0.14))
        self.main = self.figure.add_axes((0.12, 0.14, 0.72, 0.54))
        colour_axes = self.figure.add_axes((0.87, 0.14, 0.025, 0.54))
        self.strip_image = self.top.imshow(torch.zeros(n, n).numpy(), cmap="Reds", vmin=0, vmax=1, aspect="auto")
        self.frame = self.top.add_patch(
            plt.Rectangle((-0.5, -0.5), n, n, fill=False, edgecolor="tab:blue", linewidth=2.5)
        )
        self.top.set_yticks([])
        self.head_image = self.main.imshow(torch.zeros(n, n).numpy(), cmap="Reds", vmin=0, vmax=1, aspect="auto")
        self.main.set_xticks(range(n), labels=tokens, rotation=45, fontsize=8)
        self.main.set_yticks(range(n), labels=tokens, fontsize=8)
        self.main.set_xlabel("keys")
        self.main.set_ylabel("queries")
        self.figure.colorbar(self.head_image, cax=colour_axes)

    def update(self, view: dict):
        weights, head = view["weights"], view["head"]
        num_heads, n = weights.shape[0], weights.shape[-1]
        vmax = float(weights.max())
        width = num_heads * (n + 1) - 1
        self.strip_image.set_data(_head_strip(weights).numpy())
        self.strip_image.set_extent((-0.5, width - 0.5, n - 0.5, -0.5))
        self.top.set_xlim(-0.5, width - 0.5)
        self.top.set_xticks(
            [h * (n + 1) + (n - 1) / 2 for h in range(num_heads)], labels=[f"head {h}" for h in range(num_heads)], fontsize=8
        )
        self.frame.set_x(head * (n + 1) - 0.5)
        plural = "s" if num_heads > 1 else ""
        self.top.set_title(
            f"{num_heads} head{plural} of d_head = {view['head_dim']} (rows: queries, columns: keys)", fontsize=9
        )
        self.head_image.set_data(view["head_weights"].numpy())
        for image in (self.strip_image, self.head_image):
            image.set_clim(0, vmax)
        self.main.set_title(f"head {head}: mean row entropy {view['entropy'][head]:.2f} nats", fontsize=9)
        return self.figure


def plot_multihead(view: dict):
    """All heads side by side (top strip, chosen head framed) and the chosen head, large, with its tokens."""
    return _HeadsFigure(view["tokens"]).update(view)


def multihead_explorer(num_heads: int = 4, head: int = 0):
    """A heads selector and a head slider; redraws the per-head attention heat-maps."""
    import ipywidgets as widgets

    heads = widgets.Dropdown(options=HEAD_CHOICES, value=num_heads, description="heads")
    chosen = widgets.IntSlider(value=head, min=0, max=num_heads - 1, description="show head", continuous_update=False)

    def fit_slider(change):  # registered before the redraw: the slider is clamped first
        chosen.max = change["new"] - 1

    heads.observe(fit_slider, names="value")
    controls = {"num_heads": heads, "head": chosen}
    painter = _HeadsFigure()  # one figure, updated in place on every move
    return figure_explorer(controls, lambda **values: painter.update(multihead_view(**values)))
