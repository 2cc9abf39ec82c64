"""Chapter 10 explorer: what the trained date Transformer's cross-attention
reads at each step."""

from functools import partial

import matplotlib.pyplot as plt
import numpy as np

from .._checks import require_flag, require_int, require_int_in, require_text
from ..measure.threads import single_thread
from ..tasks.dates import MAX_INPUT_LENGTH
from ._explorer import live_explorer
from ._frames import Choices, with_first
from ._live import draws_view

EXAMPLES = (
    "Monday, May 3, 1999",
    "3rd of May 1999",
    "03.05.1999",
    "sep 21, 2047",
    "1 JANUARY 1900",
    "2099-12-31",
)


def decoder_view(
    translator,
    text: str = EXAMPLES[0],
    step: int = 1,
    layer: int = 1,
    clamp: bool = False,
    width: int = 0,
) -> dict:
    """What the explorer shows: one input, one generation step, one decoder
    layer.

    translator: a ``DateTransformer``
    (``attnbook.tasks.date_transformer.pretrained_date_transformer()``).
    step: the generation step t, 1-based (step t writes output character t; the
    step after the last character writes EOS). layer: 0-based decoder layer.
    With ``clamp`` a step past the last one shows the last one (inputs differ
    in their number of steps).
    width: the number of source columns the figure shows (at least the input's
    length). Returns a dict with ``source`` (list of the n_src input
    characters), ``output`` (the translation), ``written`` (what step t wrote:
    a character or "<eos>"), ``num_steps`` T, ``weights`` (h, n_src) that
    layer's cross-attention row of step t, one row per head, ``top`` the
    1-based source position each head reads most, and ``width``. Raises
    ``ValueError`` for a step below 1 (or past the last without ``clamp``), a
    layer outside the decoder, a width outside [0, MAX_INPUT_LENGTH], a bool,
    float or NaN where an int belongs, and for text the translator refuses.
    """
    if not callable(getattr(translator, "translate", None)):
        raise TypeError(
            "translator must be a DateTransformer, got "
            f"{type(translator).__name__}"
        )
    require_text("text", text)
    require_int("step", step, minimum=1)
    require_int("layer", layer, minimum=0)
    require_flag("clamp", clamp)
    require_int_in("width", width, 0, MAX_INPUT_LENGTH)
    (output,), (weights,) = translator.translate(
        [text], return_weights=True
    )  # weights (L, h, T, n_src)
    num_layers, _, num_steps, _ = weights.shape
    if clamp:
        step = min(max(step, 1), num_steps)
    if not 1 <= step <= num_steps:
        raise ValueError(
            f"step {step} is outside 1..{num_steps} (the translation has "
            f"{num_steps} steps)"
        )
    if not 0 <= layer < num_layers:
        raise ValueError(f"layer {layer} is outside [0, {num_layers})")
    row = weights[layer, :, step - 1]  # (h, n_src)
    return {
        "text": text,
        "source": list(text),
        "output": output,
        "step": step,
        "layer": layer,
        "num_steps": num_steps,
        "written": output[step - 1] if step <= len(output) else "<eos>",
        "weights": row,
        "top": (row.argmax(dim=-1) + 1).tolist(),
        "width": max(width, len(text)),
    }


@draws_view
def plot_decoder(view: dict):
    """Heads x source characters: the chosen step's cross-attention weights in
    one layer.

    The figure has ``view["width"]`` columns; shorter inputs leave the columns
    on the right empty, so another input changes the image's data and the
    labels' text only.
    """
    heads, width = view["weights"].shape[0], view["width"]
    fig = plt.figure(figsize=(7.0, 2.6))
    ax = fig.add_axes((0.1, 0.3, 0.88, 0.5))
    ax.imshow(
        np.zeros((heads, width)), cmap="Blues", vmin=0, vmax=1, aspect="auto"
    )
    for j in range(width):
        ax.text(
            j,
            heads - 0.35,
            "",
            ha="center",
            va="top",
            fontsize=8,
            family="monospace",
        )
    ax.set_xticks([])
    ax.set_yticks(
        range(heads), [f"head {i + 1}" for i in range(heads)], fontsize=8
    )
    ax.set_xlabel(
        "source characters (white = 0, dark blue = 1)", fontsize=8, labelpad=16
    )
    update_decoder_figure(fig, view)
    return fig


@draws_view
def update_decoder_figure(fig, view: dict) -> list:
    """Show ``view`` in a figure made by ``plot_decoder``; returns the
    artists that changed: the image, the title and the source characters'
    labels (always the same artists)."""
    (ax,) = fig.axes
    (image,) = ax.images
    heads, width = image.get_array().shape
    source = view["source"]
    if len(source) > width:
        raise ValueError(
            f"the input has {len(source)} characters; this figure shows at "
            f"most {width}"
        )
    data = np.zeros((heads, width))
    data[:, : len(source)] = view["weights"].numpy()
    image.set_data(data)
    for label, char in zip(ax.texts, source + [""] * (width - len(source))):
        label.set_text(char)
    written = view["output"][: view["step"]]
    ax.set_title(
        f"{view['text']!r} -> {view['output']!r}\nlayer {view['layer'] + 1}, "
        f"step {view['step']} of "
        f"{view['num_steps']} writes {view['written']!r} (output so far: "
        f"{written!r})",
        fontsize=9,
    )
    return [image, ax.title, *ax.texts]


def decoder_explorer(
    translator=None, text: str = EXAMPLES[0], step: int = 1, layer: int = 1
):
    """A slider for the generation step, menus for the layer and the input;
    redraws the heads' rows.

    translator: a ``DateTransformer`` (default: the book's pretrained one).
    """
    import ipywidgets as widgets

    if translator is None:
        from ..tasks.date_transformer import pretrained_date_transformer

        translator = pretrained_date_transformer()
    num_layers = len(translator.model.decoder.blocks)
    examples = with_first(text, EXAMPLES)
    with single_thread():
        steps_of = {
            t: decoder_view(translator, t, 1, 0)["num_steps"] for t in examples
        }
    layers = [(f"layer {i + 1}", i) for i in range(num_layers)]
    controls = {
        "step": widgets.IntSlider(
            value=step,
            min=1,
            max=max(steps_of.values()),
            description="step t",
            continuous_update=False,
        ),
        "layer": widgets.Dropdown(
            options=layers,
            value=layer,
            description="layer",
            layout=widgets.Layout(width="180px"),
        ),
        "text": widgets.Dropdown(
            options=examples,
            value=text,
            description="input",
            layout=widgets.Layout(width="300px"),
        ),
    }
    view = partial(
        decoder_view,
        translator,
        clamp=True,
        width=max(len(t) for t in examples),
    )
    # the step slider of each input has as many positions as that input has
    # steps
    frames = {
        "text": Choices(
            "input", examples, kind="menu", value=text, width="300px"
        ),
        "layer": Choices("layer", layers, kind="buttons", value=layer),
        "step": Choices(
            "step t",
            {t: list(range(1, steps_of[t] + 1)) for t in examples},
            value=step,
            depends_on="text",
        ),
    }
    return live_explorer(
        controls, view, plot_decoder, update_decoder_figure, frames=frames
    )
