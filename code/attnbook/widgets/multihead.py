"""Chapter 4 explorer: the trained heads of the card-lookup model, one head
enlarged.

The example is fixed: one hand of six cards and six questions
(``attnbook.tasks.card_lookup``), each asking "which digit is on the card of
colour c?" and "which colour is the card with digit v?" about two different
cards. The "heads" control picks a model trained with 1, 2 or 4 heads (each
trained once, seeded, and cached); the slider picks the head to enlarge
(counted from 1). Each update redraws only the images, the frame, the head
names and the titles of one figure.
"""

import matplotlib.pyplot as plt
import matplotlib.transforms as transforms
import torch

from .._random import keep_global_rng
from ..tasks.card_lookup import (
    COLOURS,
    NUM_CARDS,
    NUM_DIGITS,
    card_label,
    hand_questions,
    question_label,
    trained_card_lookup,
)
from ._explorer import live_explorer
from ._frames import Choices
from ._live import draws_view

HEAD_CHOICES = (1, 2, 4)
HAND_SEED = 2
# Question i asks about the colour of card i and the digit of card
# DIGIT_CARD[i] (never card i).
DIGIT_CARD = (2, 0, 4, 5, 1, 3)


def example_hand() -> dict:
    """The explorer's hand and questions, in the format of
    ``attnbook.tasks.card_lookup.lookup_batch`` (batch of 1).

    The cards' colours and digits are drawn with a ``torch.Generator`` seeded
    with HAND_SEED; question i names card i by its colour and card
    DIGIT_CARD[i] by its digit.
    """
    generator = torch.Generator().manual_seed(HAND_SEED)
    colours = torch.randperm(len(COLOURS), generator=generator)[:NUM_CARDS][
        None
    ]
    digits = torch.randperm(NUM_DIGITS, generator=generator)[:NUM_CARDS][None]
    colour_card = torch.arange(NUM_CARDS)[None]
    digit_card = torch.tensor(DIGIT_CARD)[None]
    return hand_questions(colours, digits, colour_card, digit_card)


def multihead_view(num_heads: int = 2, head: int = 1) -> dict:
    """Everything the explorer shows for one setting of its controls.

    num_heads: one of HEAD_CHOICES (the model trained with that many heads);
    head: 1..num_heads. Returns a dict with ``cards`` and ``questions``
    (labels, NUM_CARDS each), ``weights`` (num_heads, questions, cards), the
    chosen head's ``head_weights``, its ``top_card`` per question (0-based card
    positions), ``entropy`` (num_heads,) the mean entropy (nats) of each head's
    rows, ``right`` (how many of the 2 x NUM_CARDS answers the model gets
    right), and ``num_heads``, ``head``, ``head_dim``.
    """
    if num_heads not in HEAD_CHOICES or isinstance(num_heads, bool):
        raise ValueError(
            f"num_heads must be one of {HEAD_CHOICES}, got {num_heads!r}"
        )
    if (
        isinstance(head, bool)
        or not isinstance(head, int)
        or not 1 <= head <= num_heads
    ):
        raise ValueError(
            f"head must be in [1, {num_heads}] for {num_heads} heads, got "
            f"{head!r}"
        )
    # a first call trains (seeded); the reader's random stream is left as
    # it was
    with keep_global_rng():
        model = trained_card_lookup(num_heads)
    hand = example_hand()
    with torch.no_grad():
        digit_logits, colour_logits, weights = model(
            hand["card_colours"],
            hand["card_digits"],
            hand["ask_colour"],
            hand["ask_digit"],
        )
    weights = weights[0]  # (h, questions, cards)
    right = int(
        (digit_logits.argmax(-1) == hand["digit_answer"]).sum()
        + (colour_logits.argmax(-1) == hand["colour_answer"]).sum()
    )
    entropy = (
        -(weights * weights.clamp_min(1e-12).log()).sum(dim=-1).mean(dim=-1)
    )
    colours, digits = (
        hand["card_colours"][0].tolist(),
        hand["card_digits"][0].tolist(),
    )
    return {
        "cards": [card_label(c, d) for c, d in zip(colours, digits)],
        "questions": [
            question_label(c, d)
            for c, d in zip(
                hand["ask_colour"][0].tolist(), hand["ask_digit"][0].tolist()
            )
        ],
        "num_heads": num_heads,
        "head": head,
        "head_dim": model.attention.head_dim,
        "weights": weights,
        "head_weights": weights[head - 1],
        "top_card": weights[head - 1].argmax(dim=-1),
        "entropy": entropy,
        "right": right,
    }


def _head_strip(weights: torch.Tensor) -> torch.Tensor:
    """(num_heads, n, n) -> (n, num_heads * (n + 1) - 1): heads side by
    side, a blank (NaN) column between."""
    num_heads, n, _ = weights.shape
    strip = torch.full((n, num_heads * (n + 1) - 1), float("nan"))
    for h in range(num_heads):
        strip[:, h * (n + 1) : h * (n + 1) + n] = weights[h]
    return strip


def _strip_fraction(column: float, num_heads: int, n: int) -> float:
    """Strip column coordinate (column c spans c - 0.5 .. c + 0.5) ->
    fraction of the strip's width."""
    return (column + 0.5) / (num_heads * (n + 1) - 1)


@draws_view
def plot_multihead(view: dict):
    """All heads side by side (top strip, chosen head framed) and the chosen
    head, large, with the cards and questions.

    The strip always spans the top axes: its x axis runs from 0 to 1 (a
    fraction of the strip) whatever the number of heads, and the head names
    under it are text objects moved by ``update_multihead_figure``, so changing
    the number of heads never redraws the axes. Colours run from 0 to 1
    (weights are probabilities) for every setting.
    """
    n = len(view["cards"])
    fig = plt.figure(figsize=(7.5, 6.0))
    top = fig.add_axes((0.17, 0.79, 0.75, 0.14))
    main = fig.add_axes((0.17, 0.16, 0.67, 0.52))
    colour_axes = fig.add_axes((0.87, 0.16, 0.025, 0.52))
    top.imshow(
        torch.zeros(n, n).numpy(),
        cmap="Reds",
        vmin=0,
        vmax=1,
        aspect="auto",
        extent=(0, 1, n - 0.5, -0.5),
    )
    top.add_patch(
        plt.Rectangle(
            (0, -0.5), 0, n, fill=False, edgecolor="tab:blue", linewidth=2.5
        )
    )
    top.set_xlim(0, 1)
    top.set_xticks([])
    top.set_yticks([])
    under_strip = transforms.blended_transform_factory(
        top.transData, top.transAxes
    )
    for h in range(
        max(HEAD_CHOICES)
    ):  # one name per possible head; those beyond num_heads are hidden
        top.text(
            0,
            -0.06,
            f"head {h + 1}",
            ha="center",
            va="top",
            fontsize=8,
            transform=under_strip,
        )
    head_image = main.imshow(
        torch.zeros(n, n).numpy(), cmap="Reds", vmin=0, vmax=1, aspect="auto"
    )
    main.set_xticks(range(n), labels=view["cards"], rotation=45, fontsize=8)
    main.set_yticks(range(n), labels=view["questions"], fontsize=8)
    main.set_xlabel("keys and values: the cards")
    main.set_ylabel("queries: the questions")
    fig.colorbar(head_image, cax=colour_axes)
    update_multihead_figure(fig, view)
    return fig


@draws_view
def update_multihead_figure(fig, view: dict) -> list:
    """Show ``view`` in a figure made by ``plot_multihead``; returns the
    artists that changed.

    The strip image gets the new heads (n, num_heads * (n + 1) - 1) stretched
    over the fixed strip; the frame and the head names move to the new head
    columns; the large map shows the chosen head (n, n). Limits, ticks and the
    colour bar stay as they are. The list holds the same artists, in the same
    order, for every view.
    """
    top, main, _ = fig.axes
    weights, head = view["weights"], view["head"]
    num_heads, n = weights.shape[0], weights.shape[-1]
    (strip_image,) = top.images
    strip_image.set_data(_head_strip(weights).numpy())
    (frame,) = top.patches
    first_column = (head - 1) * (n + 1)
    frame.set_x(_strip_fraction(first_column - 0.5, num_heads, n))
    frame.set_width(
        _strip_fraction(first_column + n - 0.5, num_heads, n) - frame.get_x()
    )
    for h, name in enumerate(top.texts):
        name.set_x(_strip_fraction(h * (n + 1) + (n - 1) / 2, num_heads, n))
        name.set_visible(h < num_heads)
    plural = "s" if num_heads > 1 else ""
    top.set_title(
        f"model with {num_heads} head{plural} of d_k = {view['head_dim']}: "
        f"{view['right']} of {2 * n} answers right",
        fontsize=9,
    )
    (head_image,) = main.images
    head_image.set_data(view["head_weights"].numpy())
    main.set_title(
        f"head {head}: mean row entropy {view['entropy'][head - 1]:.2f} nats",
        fontsize=9,
    )
    return [strip_image, frame, *top.texts, top.title, head_image, main.title]


def multihead_explorer(num_heads: int = 2, head: int = 1):
    """A heads selector (which trained model) and a head slider (from 1);
    redraws the heat-maps."""
    import ipywidgets as widgets

    for choice in (
        HEAD_CHOICES
    ):  # train every model before the first move (cached afterwards)
        trained_card_lookup(choice)
    heads = widgets.Dropdown(
        options=HEAD_CHOICES, value=num_heads, description="heads"
    )
    chosen = widgets.IntSlider(
        value=head,
        min=1,
        max=num_heads,
        description="show head",
        continuous_update=False,
    )

    def fit_slider(
        change,
    ):  # registered before the redraw: the slider is clamped first
        chosen.max = change["new"]

    heads.observe(fit_slider, names="value")
    controls = {"num_heads": heads, "head": chosen}
    # every model and every head: the head slider has one position per head of
    # the chosen model
    frames = {
        "num_heads": Choices(
            "heads", list(HEAD_CHOICES), kind="menu", value=num_heads
        ),
        "head": Choices(
            "show head",
            {h: list(range(1, h + 1)) for h in HEAD_CHOICES},
            value=head,
            depends_on="num_heads",
        ),
    }
    return live_explorer(
        controls,
        multihead_view,
        plot_multihead,
        update_multihead_figure,
        frames=frames,
    )
