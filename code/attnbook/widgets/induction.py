"""Chapter 14 explorer: the 2-layer attention-only model through its
training, checkpoint by checkpoint: the loss so far, and what its
previous-token head and its induction head attend to on one sequence.

The two heads are those of the finished model (``key_heads`` of the last
checkpoint), followed back through training, so the maps show them forming.
"""

import matplotlib.pyplot as plt
import torch

from ..experiments.head_circuits import induction_model_scores, key_heads
from ..nn.attention_only import AttentionOnlyTransformer
from ..tasks.induction import (
    chance_loss,
    pretrained_induction_models,
    repeated_batch,
)
from ._explorer import buttons_explorer
from ._live import draws_view

#: the example: 64 tokens, random filler, then a segment of 12 repeated
EXAMPLE = {"period": 12, "seed": 4}
_SMOOTH = 25  # the loss curve: the mean of each 25 steps


def default_models() -> dict:
    """The shipped checkpoints, the explorer's usual ``models``."""
    return pretrained_induction_models()[0]


def default_history() -> dict:
    """The shipped training history, the explorer's usual ``history``."""
    return pretrained_induction_models()[1]


def example_tokens() -> torch.Tensor:
    """The explorer's sequence (64,): a random segment of
    ``EXAMPLE["period"]`` tokens after random filler, repeated to the end."""
    generator = torch.Generator().manual_seed(EXAMPLE["seed"])
    tokens, _ = repeated_batch(1, EXAMPLE["period"], 64, 64, generator)
    return tokens[0]


def _check_models(models, history) -> dict:
    if not isinstance(models, dict) or not isinstance(
        models.get("two_layer"), dict
    ):
        raise TypeError(
            "models must be the dict pretrained_induction_models() returns, "
            f"got {str(models):.40}"
        )
    if not all(
        isinstance(m, AttentionOnlyTransformer)
        for m in models["two_layer"].values()
    ):
        raise TypeError("models['two_layer'] must map steps to models")
    if not isinstance(history, dict) or "two_layer" not in history:
        raise TypeError(
            "history must be the dict pretrained_induction_models() "
            f"returns, got {str(history):.40}"
        )
    return models["two_layer"]


def _smooth(losses: list) -> list:
    return [
        sum(losses[i : i + _SMOOTH]) / len(losses[i : i + _SMOOTH])
        for i in range(0, len(losses), _SMOOTH)
    ]


@torch.no_grad()
def induction_training_view(models, history, step: int = 3000) -> dict:
    """What the explorer shows at one checkpoint.

    models, history: what ``pretrained_induction_models()`` returns; step:
    one of its checkpoints. Returns a dict: ``step``; ``heads``, the
    (layer, head) of the previous-token and induction heads of the finished
    model; ``maps``, their attention weights (2, 64, 64) on
    ``example_tokens()``; ``scores``, their previous-token and induction
    scores at this step (``induction_model_scores``); ``curve`` (x, y), the
    2-layer model's training loss so far in means of 25 steps, and
    ``control``, the 1-layer model's over all steps; ``chance``.
    """
    checkpoints = _check_models(models, history)
    if step not in checkpoints:
        raise ValueError(
            f"step must be one of the checkpoints {sorted(checkpoints)}, "
            f"got {step!r:.20}"
        )
    final = checkpoints[max(checkpoints)]
    previous_head, induction_head = key_heads(final)
    model = checkpoints[step]
    _, weights = model(example_tokens()[None], return_weights=True)
    maps = torch.stack(
        [
            weights[layer, 0, head]
            for layer, head in (previous_head, induction_head)
        ]
    )
    previous, induction = induction_model_scores(model)
    smoothed = _smooth(history["two_layer"][:step])
    control = _smooth(history["one_layer"])
    return {
        "step": step,
        "heads": (previous_head, induction_head),
        "maps": maps,
        "scores": (
            float(previous[previous_head]),
            float(induction[induction_head]),
        ),
        "curve": (
            [_SMOOTH * (i + 0.5) for i in range(len(smoothed))],
            smoothed,
        ),
        "control": (
            [_SMOOTH * (i + 0.5) for i in range(len(control))],
            control,
        ),
        "chance": chance_loss(),
        "steps": len(history["two_layer"]),
    }


@draws_view
def plot_induction_training(view: dict):
    """Left: the training loss (2 layers so far, blue; the 1-layer control,
    grey; chance, dotted). Middle and right: the two heads' maps."""
    fig = plt.figure(figsize=(8.4, 3.4))
    loss_ax = fig.add_axes((0.08, 0.15, 0.27, 0.66))
    map_axes = [
        fig.add_axes((0.42, 0.15, 0.26, 0.66)),
        fig.add_axes((0.73, 0.15, 0.26, 0.66)),
    ]
    loss_ax.plot(*view["control"], color="0.6", lw=1, label="1 layer")
    loss_ax.plot([], [], color="C0", lw=1.5, label="2 layers")
    loss_ax.axhline(view["chance"], color="k", ls=":", lw=1, label="chance")
    loss_ax.set_xlim(0, view["steps"])
    loss_ax.set_ylim(0, 4.6)
    loss_ax.set_xlabel("training step")
    loss_ax.set_ylabel("loss (nats)")
    loss_ax.legend(fontsize=8, loc="lower left")
    for ax in map_axes:
        ax.imshow(
            torch.zeros(64, 64).numpy(),
            cmap="viridis",
            vmin=0,
            vmax=1,
            aspect="equal",
        )
        ax.set_xlabel("key position", fontsize=9)
        ax.tick_params(labelsize=8)
        ax.set_title(" ", fontsize=9)
    map_axes[0].set_ylabel("query position", fontsize=9)
    fig.suptitle(" ", fontsize=10)
    update_induction_training_figure(fig, view)
    return fig


@draws_view
def update_induction_training_figure(fig, view: dict) -> list:
    """Show ``view`` in a figure made by ``plot_induction_training``;
    returns the artists that changed."""
    loss_ax, *map_axes = fig.axes
    curve = loss_ax.lines[1]
    curve.set_data(*view["curve"])
    # the curve crosses the legend's corner: the legend is drawn again on top
    changed = [curve, loss_ax.get_legend()]
    names = ("previous-token head", "induction head")
    for ax, weights, (layer, head), name, score in zip(
        map_axes, view["maps"], view["heads"], names, view["scores"]
    ):
        (image,) = ax.images
        image.set_data(weights.numpy())
        ax.title.set_text(f"{name} {layer}.{head}\nscore {score:.2f}")
        changed += [image, ax.title]
    fig._suptitle.set_text(f"after {view['step']:,} training steps")
    return changed + [fig._suptitle]


def induction_training_explorer(models, history, step: int = 3000):
    """A slider over the shipped checkpoints; redraws the loss so far and
    the two heads' maps."""
    checkpoints = _check_models(models, history)

    def view(step):
        return induction_training_view(models, history, step)

    return buttons_explorer(
        {"step": [(f"{s:,}", s) for s in sorted(checkpoints)]},
        {"step": "step"},
        {"step": step},
        "step",
        view,
        plot_induction_training,
        update_induction_training_figure,
    )
