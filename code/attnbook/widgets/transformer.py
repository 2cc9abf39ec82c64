"""Chapter 9 explorer: a trained [CLS] classifier's attention map, for any
layer, head and input."""

from functools import partial

import matplotlib.pyplot as plt
import torch

from .._checks import require_text
from ..measure.threads import single_thread
from ..tasks.order_classifier import VOCAB, CLSClassifier, encode
from ._explorer import live_explorer
from ._frames import Choices, with_first
from ._live import draws_view

#: Inputs the explorer offers in the HTML book, where nothing can be typed: A
#: before B, B before A, the two next to each other, and a longer input.
EXAMPLES = ("cdAefgBhij", "cdBefgAhij", "ABcdefgh", "jihgfeBdcjihgfedAcd")


def cls_attention_view(
    model, text: str = "cdAefgBh", layer: int = 0, head: int = 0
) -> dict:
    """What the explorer shows for one input and one (layer, head) of
    ``model``.

    model: a CLSClassifier; text: tokens such as "c d A e B" ([CLS] is
    prepended). layer, head: 0-based indices. Returns a dict with ``tokens`` (n
    strings), ``weights`` (n, n) of that head (rows = queries), ``cls_row``
    (n,) the [CLS] query's weights, ``prob_before`` the model's P(A before B),
    and ``answer`` (True/False, or None unless the input has exactly one A and
    one B).
    """
    if not isinstance(model, CLSClassifier):
        raise ValueError(
            "model must be an attnbook.tasks.order_classifier.CLSClassifier, "
            f"got {type(model).__name__}"
        )
    num_layers = len(model.encoder.blocks)
    num_heads = model.encoder.blocks[0].num_heads
    for name, value, size in (
        ("layer", layer, num_layers),
        ("head", head, num_heads),
    ):
        if isinstance(value, bool) or not isinstance(value, int):
            raise ValueError(
                f"{name} must be an int in [0, {size}), got {value!r}"
            )
        if not 0 <= value < size:
            raise ValueError(f"{name} {value} is outside [0, {size})")
    require_text("text", text)
    ids = encode(text, max_len=model.encoder.positions.max_len)
    with torch.no_grad(), single_thread():
        logits, weights = model(ids[None], return_weights=True)
    tokens = [VOCAB[i] for i in ids.tolist()]
    answer = None
    if tokens.count("A") == 1 and tokens.count("B") == 1:
        answer = tokens.index("A") < tokens.index("B")
    head_weights = weights[layer, 0, head]
    return {
        "text": text,
        "layer": layer,
        "head": head,
        "tokens": tokens,
        "weights": head_weights,
        "cls_row": head_weights[0],
        "prob_before": logits.softmax(dim=-1)[0, 1].item(),
        "answer": answer,
    }


@draws_view
def plot_cls_attention(view: dict):
    """The head's attention map, queries x keys, labelled with the tokens."""
    fig = plt.figure(figsize=(4.2, 4.4))
    ax = fig.add_axes((0.15, 0.15, 0.83, 0.73))
    # token labels are plain text: much faster to draw than n tick objects
    # per axis
    ax.set_xticks([])
    ax.set_yticks([])
    ax.set_xlabel("keys (white = 0, dark red = 1)", fontsize=8, labelpad=30)
    ax.set_ylabel("queries", fontsize=8, labelpad=30)
    update_cls_attention_figure(fig, view)
    return fig


def _shows_tokens(ax, tokens: list) -> bool:
    """Are ``tokens`` the labels ``ax`` shows (column labels first, then row
    labels)?"""
    return [label.get_text() for label in ax.texts] == tokens + tokens


def _show_tokens(ax, tokens: list) -> None:
    """Label the map's n columns and rows with ``tokens`` and make a new,
    empty (n, n) image for it."""
    n = len(tokens)
    for artist in (*ax.texts, *ax.images):
        artist.remove()
    ax.imshow(
        torch.zeros(n, n).numpy(), cmap="Reds", vmin=0, vmax=1
    )  # sets the limits to the n x n cells
    fontsize = 8 if n <= 24 else 6
    for i, token in enumerate(tokens):
        ax.text(
            i,
            n - 0.3,
            token,
            rotation=90,
            ha="center",
            va="top",
            fontsize=fontsize,
        )
    for i, token in enumerate(tokens):
        ax.text(-0.8, i, token, ha="right", va="center", fontsize=fontsize)


@draws_view
def update_cls_attention_figure(fig, view: dict) -> list:
    """Show ``view`` in a figure made by ``plot_cls_attention``; returns the
    artists that changed.

    Another layer or head changes the image (n, n) and the title: those two are
    returned. Other tokens first relabel the map and give it a new image
    (``_show_tokens``): the returned image is then a new artist, which tells
    the live figure to draw everything else again too.
    """
    (ax,) = fig.axes
    if not _shows_tokens(ax, view["tokens"]):
        _show_tokens(ax, view["tokens"])
    (image,) = ax.images
    image.set_data(view["weights"].numpy())
    answer = {None: "undefined", True: "yes", False: "no"}[view["answer"]]
    ax.set_title(
        f"layer {view['layer']}, head {view['head']}: "
        f"P(A before B) = {view['prob_before']:.3f}\n(true answer: {answer})",
        fontsize=9,
    )
    return [image, ax.title]


def cls_attention_explorer(
    model, text: str = "cdAefgBh", layer: int = 0, head: int = 0
):
    """A text box for the input and sliders for layer and head; redraws the
    attention map.

    Moving a slider redraws only the map and its title; new tokens redraw the
    whole figure.
    """
    import ipywidgets as widgets

    num_layers = len(model.encoder.blocks)
    num_heads = model.encoder.blocks[0].num_heads
    controls = {
        "text": widgets.Text(
            value=text, description="tokens", continuous_update=False
        ),
        "layer": widgets.IntSlider(
            value=layer,
            min=0,
            max=num_layers - 1,
            description="layer",
            continuous_update=False,
        ),
        "head": widgets.IntSlider(
            value=head,
            min=0,
            max=num_heads - 1,
            description="head",
            continuous_update=False,
        ),
    }

    view = partial(cls_attention_view, model)
    examples = with_first(text, EXAMPLES)
    frames = {
        "text": Choices("tokens", examples, kind="menu", value=text),
        "layer": Choices("layer", list(range(num_layers)), value=layer),
        "head": Choices("head", list(range(num_heads)), value=head),
    }
    return live_explorer(
        controls,
        view,
        plot_cls_attention,
        update_cls_attention_figure,
        frames=frames,
    )
