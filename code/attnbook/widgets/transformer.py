"""Chapter 8 explorer: a trained [CLS] classifier's attention map, for any layer, head and input."""

import matplotlib.pyplot as plt
import torch

from ..classifier import VOCAB, encode
from ..threads import single_thread
from ._live import figure_explorer


def cls_attention_view(model, text: str = "cdAefgBh", layer: int = 0, head: int = 0) -> dict:
    """What the explorer shows for one input and one (layer, head) of ``model``.

    model: a CLSClassifier; text: tokens such as "c d A e B" ([CLS] is prepended).
    layer, head: 0-based indices. Returns a dict with ``tokens`` (n strings),
    ``weights`` (n, n) of that head (rows = queries), ``cls_row`` (n,) the
    [CLS] query's weights, ``prob_before`` the model's P(A before B), and
    ``answer`` (True/False, or None unless the input has exactly one A and one B).
    """
    num_layers = len(model.encoder.blocks)
    num_heads = model.encoder.blocks[0].num_heads
    if not 0 <= layer < num_layers:
        raise ValueError(f"layer {layer} is outside [0, {num_layers})")
    if not 0 <= head < num_heads:
        raise ValueError(f"head {head} is outside [0, {num_heads})")
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


def plot_cls_attention(view: dict):
    """The head's attention map, queries x keys, labelled with the tokens."""
    n = len(view["tokens"])
    fig = plt.figure(figsize=(4.2, 4.4), dpi=80)
    ax = fig.add_axes((0.15, 0.15, 0.83, 0.73))
    ax.imshow(view["weights"].numpy(), cmap="Reds", vmin=0, vmax=1)
    # Token labels as plain text: much faster to draw than n tick objects per axis.
    ax.set_xticks([])
    ax.set_yticks([])
    fontsize = 8 if n <= 24 else 6
    for i, token in enumerate(view["tokens"]):
        ax.text(i, n - 0.3, token, rotation=90, ha="center", va="top", fontsize=fontsize)
        ax.text(-0.8, i, token, ha="right", va="center", fontsize=fontsize)
    ax.set_xlabel("keys (white = 0, dark red = 1)", fontsize=8, labelpad=30)
    ax.set_ylabel("queries", fontsize=8, labelpad=30)
    answer = {None: "undefined", True: "yes", False: "no"}[view["answer"]]
    ax.set_title(
        f"layer {view['layer']}, head {view['head']}: "
        f"P(A before B) = {view['prob_before']:.3f}\n(true answer: {answer})",
        fontsize=9,
    )
    return fig


def cls_attention_explorer(model, text: str = "cdAefgBh", layer: int = 0, head: int = 0):
    """A text box for the input and sliders for layer and head; redraws the attention map."""
    import ipywidgets as widgets

    num_layers = len(model.encoder.blocks)
    num_heads = model.encoder.blocks[0].num_heads
    controls = {
        "text": widgets.Text(value=text, description="tokens", continuous_update=False),
        "layer": widgets.IntSlider(value=layer, min=0, max=num_layers - 1, description="layer", continuous_update=False),
        "head": widgets.IntSlider(value=head, min=0, max=num_heads - 1, description="head", continuous_update=False),
    }

    return figure_explorer(controls, lambda **values: plot_cls_attention(cls_attention_view(model, **values)))
